/**
 * The Go decoding layer, pinned table by table against encoding/json's documented behaviour: "Unmarshal matches
 * incoming object keys to the keys used by Marshal (either the struct field name or its tag), preferring an
 * exact match but also accepting a case-insensitive match"; "The JSON null value unmarshals into an interface,
 * map, pointer, or slice by setting that Go value to nil. Otherwise ... it has no effect on the value"; numbers
 * into integer fields go through strconv.ParseInt/ParseUint and the field's size; a repeated key is decoded
 * again into the same field, so the last one wins (and structs and maps merge).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  any,
  bool,
  DecodeError,
  decodeGo,
  float64,
  foldKey,
  type GoType,
  hasMember,
  int,
  int32,
  int64,
  list,
  map,
  member,
  ptr,
  refine,
  string,
  struct,
  uint8,
  uint16,
  uint32,
  uint64,
  withDefault,
} from "./go-decode.js";
import { type JsonValue, numberLiteral, parseJson } from "./json.js";

const Inner = struct("Inner", { a: int, b: int });
const T = struct("T", {
  hostPort: int,
  protocol: string,
  enabled: bool,
  ratio: float64,
  tags: list(string),
  labels: map(string),
  inner: Inner,
  p: ptr(int),
  anything: any,
  kind: string,
  status: string,
});

/** Decodes JSON text into `type` as Go's json.Unmarshal into a fresh value would. */
const decode = <V>(type: GoType<V>, text: string): V => decodeGo(type, parseJson(text));

describe("keys: exact match first, then Go's case folding", () => {
  const spellings: Array<[string, boolean]> = [
    ["hostPort", true],
    ["HostPort", true],
    ["HOSTPORT", true],
    ["hostport", true],
    ["hOsTpOrT", true],
    ["host_port", false],
    ["hostPort ", false],
    ["hostPorts", false],
    ["", false],
  ];
  for (const [key, matches] of spellings) {
    test(`${JSON.stringify(key)} ${matches ? "sets" : "does not set"} hostPort`, () => {
      assert.deepEqual(decode(T, `{${JSON.stringify(key)}: 8080}`), matches ? { hostPort: 8080 } : {});
    });
  }
  test("Unicode folding: the Kelvin sign is k, long s is s", () => {
    assert.deepEqual(decode(T, '{"\u212Aind": "x", "\u017Ftatus": "up"}'), { kind: "x", status: "up" });
    assert.equal(foldKey("\u212Aind"), "KIND");
    assert.equal(foldKey("\u017Ftatus"), "STATUS");
  });
  test("two fields that differ only in case: an exact key picks its own, a folded key the first declared", () => {
    const Two = struct("Two", { name: string, Name: string });
    assert.deepEqual(decode(Two, '{"name": "a"}'), { name: "a" });
    assert.deepEqual(decode(Two, '{"Name": "b"}'), { Name: "b" });
    assert.deepEqual(decode(Two, '{"NAME": "c"}'), { name: "c" });
  });
  test("unknown keys are ignored", () => {
    assert.deepEqual(decode(T, '{"unknown": {"deep": [1, 2]}, "protocol": "tcp"}'), { protocol: "tcp" });
  });
  test("map keys are data, not fields: kept exactly", () => {
    assert.deepEqual(
      [...decode(T, '{"labels": {"Net.IPv4": "1", "net.ipv4": "2"}}').labels!],
      [
        ["Net.IPv4", "1"],
        ["net.ipv4", "2"],
      ],
    );
  });
  test("member and hasMember find a field's key as Go does (the last matching key)", () => {
    const obj = parseJson('{"hostPort": 1, "HostPort": 2, "other": null, "Other": 3, "x": null}') as Record<string, JsonValue>;
    assert.equal(member(obj, "hostPort"), 2);
    assert.equal(member(obj, "other"), 3);
    assert.equal(hasMember(obj, "X"), true);
    assert.equal(hasMember(obj, "y"), false);
  });
});

describe("duplicate keys: the last one wins", () => {
  const cases: Array<[string, unknown]> = [
    ['{"hostPort": 1, "hostPort": 2}', { hostPort: 2 }],
    ['{"hostPort": 1, "HostPort": 2}', { hostPort: 2 }],
    ['{"HostPort": 1, "hostPort": 2}', { hostPort: 2 }],
    ['{"hostPort": 1, "HostPort": 2, "hostPort": 3}', { hostPort: 3 }],
    ['{"HostPort": 1, "hostPort": 2, "HostPort": 3}', { hostPort: 3 }],
    ['{"tags": ["a", "b"], "Tags": ["c"]}', { tags: ["c"] }],
    // A struct or a map decoded twice merges (Go decodes into the existing value); a list is replaced.
    ['{"inner": {"a": 1}, "Inner": {"b": 2}}', { inner: { a: 1, b: 2 } }],
    ['{"inner": {"a": 1, "b": 5}, "INNER": {"b": 2}}', { inner: { a: 1, b: 2 } }],
  ];
  for (const [text, expected] of cases) test(text, () => assert.deepEqual(decode(T, text), expected));
  test("maps merge, a repeated map key keeps its last value", () => {
    assert.deepEqual(
      [...decode(T, '{"labels": {"x": "1", "y": "2"}, "Labels": {"x": "3"}}').labels!],
      [
        ["y", "2"],
        ["x", "3"],
      ],
    );
  });
});

describe("null", () => {
  const cases: Array<[string, string, unknown]> = [
    ["a scalar field: absent", '{"hostPort": null}', {}],
    ["a scalar field after a value: no effect", '{"hostPort": 5, "HostPort": null}', { hostPort: 5 }],
    // parseJson keeps one value per exact key, as a Go map does (libcni passes every plugin config through one).
    ["an exact repeat of a key: only the last occurrence counts", '{"inner": {"a": 1}, "inner": null}', {}],
    ["a struct field after another spelling: no effect", '{"inner": {"a": 1}, "Inner": null}', { inner: { a: 1 } }],
    ["a pointer field after a value: reset", '{"p": 5, "P": null}', {}],
    ["a list field after a value: reset", '{"tags": ["a"], "TAGS": null}', {}],
    ["an interface field: reset", '{"anything": 1, "Anything": null}', {}],
    ["a list element: the zero value", '{"tags": ["a", null, "b"]}', { tags: ["a", "", "b"] }],
    ["a whole document: the zero value", "null", {}],
  ];
  for (const [name, text, expected] of cases) test(name, () => assert.deepEqual(decode(T, text), expected));
  test("a map value: the zero value", () => {
    assert.deepEqual([...decode(T, '{"labels": {"x": null}}').labels!], [["x", ""]]);
  });
});

describe("numbers into integer fields, as strconv and the field's size allow", () => {
  // [type, literal, decoded value or the "number ..." Go names in its error]
  const cases: Array<[GoType<number>, string, number | string]> = [
    [int, "80", 80],
    [int, "-80", -80],
    [int, "0", 0],
    [int, "-0", 0],
    [int, "80.0", "number 80.0"],
    [int, "8e1", "number 8e1"],
    [int, "8E1", "number 8E1"],
    [int, "0.5", "number 0.5"],
    // biome-ignore lint/correctness/noPrecisionLoss: Go's int64 limits as JSON numbers, rounded as Go's decoder rounds them
    [int, "9223372036854775807", 9223372036854775807],
    [int, "9223372036854775808", "number 9223372036854775808"],
    // biome-ignore lint/correctness/noPrecisionLoss: Go's int64 limits as JSON numbers, rounded as Go's decoder rounds them
    [int64, "-9223372036854775808", -9223372036854775808],
    [int64, "-9223372036854775809", "number -9223372036854775809"],
    [int32, "2147483647", 2147483647],
    [int32, "2147483648", "number 2147483648"],
    [int32, "-2147483649", "number -2147483649"],
    [uint8, "255", 255],
    [uint8, "256", "number 256"],
    [uint8, "-1", "number -1"],
    [uint16, "65535", 65535],
    [uint16, "65536", "number 65536"],
    [uint16, "-0", "number -0"],
    [uint32, "4294967295", 4294967295],
    [uint32, "4294967296", "number 4294967296"],
    // biome-ignore lint/correctness/noPrecisionLoss: Go's uint64 limit as a JSON number, rounded as Go's decoder rounds it
    [uint64, "18446744073709551615", 18446744073709551615],
    [uint64, "18446744073709551616", "number 18446744073709551616"],
    [uint64, "1e3", "number 1e3"],
  ];
  for (const [type, literal, expected] of cases) {
    test(`${literal} into ${type.goType}: ${typeof expected === "number" ? "accepted" : "refused"}`, () => {
      const S = struct("S", { v: type });
      if (typeof expected === "number") {
        assert.equal(decode(S, `{"v": ${literal}}`).v, expected);
      } else {
        assert.throws(() => decode(S, `{"v": ${literal}}`), {
          name: "DecodeError",
          message: `json: cannot unmarshal ${expected} into Go struct field S.v of type ${type.goType}`,
        });
      }
    });
  }
  test("a value built in code (no literal) is checked by its value", () => {
    assert.equal(decodeGo(struct("S", { v: uint16 }), { v: 443 }).v, 443);
    assert.throws(() => decodeGo(struct("S", { v: uint16 }), { v: 1.5 }), /number 1\.5 into Go struct field S\.v of type uint16/);
  });
  test("float64 takes any finite number, refuses one beyond float64", () => {
    const S = struct("S", { v: float64 });
    assert.equal(decode(S, '{"v": 1.5e3}').v, 1500);
    assert.throws(() => decode(S, '{"v": 1e400}'), /cannot unmarshal number into Go struct field S\.v of type float64/);
  });
});

describe("values of the wrong kind", () => {
  const cases: Array<[string, string, string, string]> = [
    // [input, Go's message, our path, what we wanted]
    ['{"hostPort": "80"}', "json: cannot unmarshal string into Go struct field T.hostPort of type int", "hostPort", "an integer"],
    ['{"HostPort": true}', "json: cannot unmarshal bool into Go struct field T.hostPort of type int", "HostPort", "an integer"],
    ['{"protocol": 6}', "json: cannot unmarshal number into Go struct field T.protocol of type string", "protocol", "a string"],
    ['{"enabled": "true"}', "json: cannot unmarshal string into Go struct field T.enabled of type bool", "enabled", "true or false"],
    ['{"tags": "a"}', "json: cannot unmarshal string into Go struct field T.tags of type []string", "tags", "a list"],
    ['{"tags": ["a", 1]}', "json: cannot unmarshal number into Go struct field T.tags of type string", "tags[1]", "a string"],
    ['{"labels": []}', "json: cannot unmarshal array into Go struct field T.labels of type map[string]string", "labels", "an object"],
    ['{"labels": {"k.1": 1}}', "json: cannot unmarshal number into Go struct field T.labels of type string", 'labels["k.1"]', "a string"],
    ['{"Inner": {"A": "x"}}', "json: cannot unmarshal string into Go struct field Inner.inner.a of type int", "Inner.A", "an integer"],
    ['{"inner": 5}', "json: cannot unmarshal number into Go struct field T.inner of type main.Inner", "inner", "an object"],
  ];
  for (const [text, goMessage, path, want] of cases) {
    test(text, () => {
      assert.throws(
        () => decode(T, text),
        (e: unknown) => {
          assert.ok(e instanceof DecodeError);
          assert.equal(e.message, goMessage);
          assert.equal(e.path, path);
          assert.equal(e.want, want);
          return true;
        },
      );
    });
  }
  test("a document of the wrong kind names the type", () => {
    assert.throws(() => decode(T, "[1]"), { message: "json: cannot unmarshal array into Go value of type main.T" });
  });
});

describe("parseJson keeps what Go's decoder sees", () => {
  test("a repeated key takes the position of its last occurrence", () => {
    const obj = parseJson('{"a": 1, "b": 2, "a": 3}') as Record<string, unknown>;
    assert.deepEqual(Object.entries(obj), [
      ["b", 2],
      ["a", 3],
    ]);
  });
  test("__proto__ is an ordinary member", () => {
    const obj = parseJson('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    assert.deepEqual(Object.keys(obj), ["__proto__"]);
    assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
    assert.equal(Object.getPrototypeOf(obj), Object.prototype);
  });
  test("number literals that a JS number does not show exactly are remembered", () => {
    const obj = parseJson('{"a": 1.0, "b": 1, "c": -0, "d": [1e2, 3], "e": 12345678901234567890}') as Record<string, unknown>;
    assert.equal(numberLiteral(obj, "a"), "1.0");
    assert.equal(numberLiteral(obj, "b"), undefined);
    assert.equal(numberLiteral(obj, "c"), "-0");
    assert.equal(numberLiteral(obj["d"] as object, 0), "1e2");
    assert.equal(numberLiteral(obj["d"] as object, 1), undefined);
    assert.equal(numberLiteral(obj, "e"), "12345678901234567890");
  });
  test("a repeated key with a plain number forgets the earlier literal", () => {
    const obj = parseJson('{"a": 1.5, "a": 2}') as Record<string, unknown>;
    assert.equal(numberLiteral(obj, "a"), undefined);
    assert.deepEqual(decodeGo(struct("S", { a: int }), obj as JsonValue), { a: 2 });
  });
  test("a lone surrogate escape becomes U+FFFD, a pair stays a pair", () => {
    assert.equal(parseJson('"a\\ud800b"'), "a\ufffdb");
    assert.equal(parseJson('"\\ud83d\\ude00"'), "\u{1f600}");
  });
  test("escapes and plain strings", () => {
    assert.deepEqual(parseJson('{"k\\u0041": "line\\nnext", "plain": "10.0.0.1/24"}'), { kA: "line\nnext", plain: "10.0.0.1/24" });
  });
});

describe("a schema as each key's one declaration: defaults and refined values", () => {
  const mode = refine(string, (v, path) => {
    if (v !== "l2" && v !== "l3") throw new Error(`bad ${path}: ${v}`);
    return v as "l2" | "l3";
  });
  const conf = struct("Conf", {
    mode: withDefault(mode, "l2", { orEmpty: true }),
    mtu: withDefault(int, 1500),
    name: string,
    tags: withDefault(list(string), ["a"]),
  });
  test("an absent or null field reads as its default; the rest stay absent", () => {
    assert.deepEqual(decodeGo(conf, parseJson('{"mtu": null}')), { mode: "l2", mtu: 1500, tags: ["a"] });
    assert.deepEqual(decodeGo(conf, parseJson('{"MODE": "l3", "mtu": 9000, "name": "x"}')), { mode: "l3", mtu: 9000, name: "x", tags: ["a"] });
  });
  test("orEmpty: an empty string reads as the default too, and the default is not checked", () => {
    assert.equal(decodeGo(conf, parseJson('{"mode": ""}')).mode, "l2");
  });
  test("a refined value is checked and named by the key as written", () => {
    assert.throws(() => decodeGo(conf, parseJson('{"Mode": "l9"}')), /bad Mode: l9/);
  });
  test("two spellings of a refined key: only the value that ends up is checked (Go's plugins check after decoding)", () => {
    assert.equal(decodeGo(conf, parseJson('{"mode": "l9", "Mode": "l3"}')).mode, "l3");
    assert.equal(decodeGo(conf, parseJson('{"mode": "l9", "Mode": null}')).mode, "l2");
    assert.throws(
      () => decodeGo(conf, parseJson('{"mode": 9, "Mode": "l3"}')),
      (e) => e instanceof DecodeError && e.path === "mode",
    );
  });
  test("a refined type still reports a value of the wrong kind as Go does", () => {
    assert.throws(
      () => decodeGo(conf, parseJson('{"mode": 3}')),
      (e) => e instanceof DecodeError && e.path === "mode",
    );
  });
  test("a default is a fresh copy each time", () => {
    const a = decodeGo(conf, parseJson("{}"));
    a.tags.push("b");
    assert.deepEqual(decodeGo(conf, parseJson("{}")).tags, ["a"]);
  });
  test("a struct's zero value (a null document or list element) has its defaults", () => {
    assert.deepEqual(decodeGo(conf, null), { mode: "l2", mtu: 1500, tags: ["a"] });
    assert.deepEqual(decodeGo(list(conf), parseJson("[null]")), [{ mode: "l2", mtu: 1500, tags: ["a"] }]);
  });
  test("a refined type's zero value is checked at its place", () => {
    const names = list(refine(string, (v, path) => (v ? v : assert.fail(`empty ${path}`))));
    assert.throws(() => decodeGo(names, parseJson('["a", null]')), /empty \[1\]/);
  });
});
