import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CniError } from "./errors.js";
import { MAX_INTERFACE_NAME_LENGTH, validateContainerId, validateInterfaceName, validateNetworkName } from "./validate.js";

/** Asserts that `fn` throws a CniError with exactly this code, msg and details. */
function assertCniError(fn: () => void, code: number, msg: string, details = ""): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CniError, `expected a CniError, got ${String(e)}`);
    assert.deepEqual({ code: e.code, msg: e.msg, details: e.details }, { code, msg, details });
    assert.equal(e.message, details ? `${msg}; ${details}` : msg);
    return true;
  });
}

describe("validateContainerId (checklist 1.12, 6.1)", () => {
  test("empty => code 3 missing containerID", () => {
    assertCniError(() => validateContainerId(""), 3, "missing containerID");
  });
  for (const id of ["1234%%%", "some-%%container-id", "-leading-dash", "_x", ".x", "a b", "a/b", "ä1", "abc\n"]) {
    test(`${JSON.stringify(id)} => code 4 invalid characters`, () => {
      assertCniError(() => validateContainerId(id), 4, "invalid characters in containerID", id);
    });
  }
  for (const id of ["a51debf7e1eb", "some-container-id", "A", "0", "a.b_c-d", "x..", "9-_."]) {
    test(`${JSON.stringify(id)} is valid`, () => {
      assert.doesNotThrow(() => validateContainerId(id));
    });
  }
});

describe("validateNetworkName", () => {
  test("empty => code 7 'missing network name:' (trailing colon)", () => {
    assertCniError(() => validateNetworkName(""), 7, "missing network name:");
  });
  for (const name of ["1234%%%", "invalid-%%-name", "a,b", "-net", "net work"]) {
    test(`${JSON.stringify(name)} => code 7 invalid characters`, () => {
      assertCniError(() => validateNetworkName(name), 7, "invalid characters found in network name", name);
    });
  }
  for (const name of ["eth0", "some-network", "my.net_1", "dbnet"]) {
    test(`${JSON.stringify(name)} is valid`, () => {
      assert.doesNotThrow(() => validateNetworkName(name));
    });
  }
});

describe("validateInterfaceName", () => {
  const tooLong = "interface name should be less than 16 characters";
  test("the maximum length is 15", () => assert.equal(MAX_INTERFACE_NAME_LENGTH, 15));
  test("empty", () => assertCniError(() => validateInterfaceName(""), 4, "interface name is empty"));
  for (const name of ["testnamemorethan16", "1234567890123456"]) {
    test(`${name} is too long`, () => assertCniError(() => validateInterfaceName(name), 4, "interface name is too long", tooLong));
  }
  test("length counts UTF-8 bytes, not characters", () => {
    assert.doesNotThrow(() => validateInterfaceName("123456789012345"));
    assertCniError(() => validateInterfaceName("ééééééééé"), 4, "interface name is too long", tooLong); // 9 chars, 18 bytes
    assert.doesNotThrow(() => validateInterfaceName("éééééééa")); // 15 bytes
    assertCniError(() => validateInterfaceName("😀😀😀😀"), 4, "interface name is too long", tooLong); // 4 chars, 16 bytes
    assert.doesNotThrow(() => validateInterfaceName("😀😀😀abc")); // 15 bytes
    assert.doesNotThrow(() => validateInterfaceName("\ud800\ud800\ud800\ud800\ud800")); // lone surrogates: 3 bytes each, as encoded
    assertCniError(() => validateInterfaceName("\ud800\ud800\ud800\ud800\ud800a"), 4, "interface name is too long", tooLong);
  });
  test("too long is checked before the other rules", () => {
    assertCniError(() => validateInterfaceName("a/b:c d/e:f g/h:i"), 4, "interface name is too long", tooLong);
  });
  for (const name of [".", ".."]) {
    test(`${name}`, () => assertCniError(() => validateInterfaceName(name), 4, "interface name is . or .."));
  }
  const bad = [
    "/testname",
    "test/test",
    "test:test",
    "test name",
    "a\tb",
    "a\nb",
    "a\vb",
    "a\fb",
    "a\rb",
    "a\u0085b",
    "a\u00a0b",
    "a\u1680b",
    "a\u2000b",
    "a\u200ab",
    "a\u2028b",
    "a\u2029b",
    "a\u202fb",
    "a\u205fb",
    "a\u3000b",
  ];
  for (const name of bad) {
    test(`${JSON.stringify(name)} contains / : or white space`, () => {
      assertCniError(() => validateInterfaceName(name), 4, "interface name contains / or : or whitespace characters");
    });
  }
  // Go's unicode.IsSpace differs from JS \s: U+FEFF and U+180E are not white space for Go.
  for (const name of ["testname", "eth0", "some-eth0", "a\ufeffb", "a\u180eb", "...", "é", "eth0.100", "a_b-c@d"]) {
    test(`${JSON.stringify(name)} is valid`, () => {
      assert.doesNotThrow(() => validateInterfaceName(name));
    });
  }
});
