import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CniError } from "./errors.js";
import {
  ALL_VERSIONS,
  CURRENT_VERSION,
  compareVersions,
  decodeConfigVersion,
  decodeVersionInfo,
  IncompatibleVersionError,
  LEGACY_VERSIONS,
  negotiateVersion,
  parseVersion,
  pluginSupports,
  quoteList,
  reconcileVersion,
  VersionInfo,
  versionGreaterThan,
  versionGreaterThanOrEqualTo,
  versionsStartingFrom,
} from "./version.js";

describe("version lists", () => {
  test("All, Legacy, Current", () => {
    assert.deepEqual([...ALL_VERSIONS], ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]);
    assert.deepEqual([...LEGACY_VERSIONS], ["0.1.0", "0.2.0"]);
    assert.equal(CURRENT_VERSION, "1.1.0");
  });
  test("versionsStartingFrom", () => {
    assert.deepEqual(versionsStartingFrom("0.3.1"), ["0.3.1", "0.4.0", "1.0.0", "1.1.0"]);
    assert.deepEqual(versionsStartingFrom("0.1.0"), [...ALL_VERSIONS]);
    assert.deepEqual(versionsStartingFrom("1.1.0"), ["1.1.0"]);
    assert.deepEqual(versionsStartingFrom("1.0"), []); // exact match only
    assert.deepEqual(versionsStartingFrom("9.9.9"), []);
  });
});

describe("parseVersion (not semver: Atoi on up to 3 parts)", () => {
  test("1.2.3", () => assert.deepEqual(parseVersion("1.2.3"), { major: 1, minor: 2, micro: 3 }));
  test('"" means 0.1.0', () => assert.deepEqual(parseVersion(""), { major: 0, minor: 1, micro: 0 }));
  test("missing parts are 0", () => {
    assert.deepEqual(parseVersion("1"), { major: 1, minor: 0, micro: 0 });
    assert.deepEqual(parseVersion("1.2"), { major: 1, minor: 2, micro: 0 });
  });
  test("Atoi accepts signs and leading zeros", () => {
    assert.deepEqual(parseVersion("+1.-1.01"), { major: 1, minor: -1, micro: 1 });
    assert.deepEqual(parseVersion("5678.456"), { major: 5678, minor: 456, micro: 0 });
  });
  const errors: Array<[string, string]> = [
    ["asdfasdf", 'failed to convert major version part "asdfasdf": strconv.Atoi: parsing "asdfasdf": invalid syntax'],
    ["asdf.", 'failed to convert major version part "asdf": strconv.Atoi: parsing "asdf": invalid syntax'],
    [".asdfas", 'failed to convert major version part "": strconv.Atoi: parsing "": invalid syntax'],
    ["asdf.adsf.", 'failed to convert major version part "asdf": strconv.Atoi: parsing "asdf": invalid syntax'],
    ["0.", 'failed to convert minor version part "": strconv.Atoi: parsing "": invalid syntax'],
    ["..", 'failed to convert major version part "": strconv.Atoi: parsing "": invalid syntax'],
    ["1.2.3.4.5", 'invalid version "1.2.3.4.5": too many parts'],
    ["1.2.3.4", 'invalid version "1.2.3.4": too many parts'],
    ["1.0.f", 'failed to convert micro version part "f": strconv.Atoi: parsing "f": invalid syntax'],
    ["1. 2", 'failed to convert minor version part " 2": strconv.Atoi: parsing " 2": invalid syntax'],
    ["v1.0.0", 'failed to convert major version part "v1": strconv.Atoi: parsing "v1": invalid syntax'],
    ["1.0.0-rc1", 'failed to convert micro version part "0-rc1": strconv.Atoi: parsing "0-rc1": invalid syntax'],
    [
      "99999999999999999999",
      'failed to convert major version part "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range',
    ],
  ];
  for (const [input, message] of errors) {
    test(`${JSON.stringify(input)} fails`, () => assert.throws(() => parseVersion(input), { message }));
  }
});

describe("version comparison", () => {
  test("GreaterThan", () => {
    assert.equal(versionGreaterThan("1.1.0", "1.1.1"), false);
    assert.equal(versionGreaterThan("1.1.1", "1.1.0"), true);
    assert.equal(versionGreaterThan("1.1.1", "1.1.1"), false);
  });
  const ordered: Array<[string, string]> = [
    ["1.2.34", "1.2.14"],
    ["2.5.4", "2.4.4"],
    ["1.2.3", "0.2.3"],
    ["0.4.0", "0.3.1"],
    ["1.10.0", "1.9.0"],
    ["1.0.0", "0.99.99"],
  ];
  for (const [a, b] of ordered) {
    test(`${a} >= ${b} and not the reverse`, () => {
      assert.equal(versionGreaterThanOrEqualTo(a, b), true);
      assert.equal(versionGreaterThanOrEqualTo(b, a), false);
      assert.ok(compareVersions(a, b) > 0);
    });
  }
  test("equal versions", () => {
    assert.equal(versionGreaterThanOrEqualTo("1.2.3", "1.2.3"), true);
    assert.equal(compareVersions("1.0", "1.0.0"), 0);
    assert.equal(compareVersions("", "0.1.0"), 0);
  });
  test("parse errors propagate", () => {
    assert.throws(() => versionGreaterThanOrEqualTo("1.2.34", "asdadf"), /failed to convert major version part "asdadf"/);
    assert.throws(() => versionGreaterThanOrEqualTo("adsfad", "2.5.4"), /failed to convert major version part "adsfad"/);
    assert.throws(() => versionGreaterThan("1.2.3.4", "1.0.0"), /too many parts/);
  });
});

describe("VersionInfo / pluginSupports (VERSION output)", () => {
  test("encode: compact, cniVersion 1.1.0, trailing newline", () => {
    assert.equal(pluginSupports("0.1.0", "0.2.0").encode(), '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0"]}\n');
    assert.equal(
      new VersionInfo(ALL_VERSIONS).encode(),
      '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}\n',
    );
  });
  test("at least one version is required", () => {
    assert.throws(() => pluginSupports());
    assert.throws(() => new VersionInfo(versionsStartingFrom("bogus")));
  });
  test("supports is exact string membership", () => {
    const info = pluginSupports("1.0.0", "1.1.0");
    assert.equal(info.supports("1.0.0"), true);
    assert.equal(info.supports("1.0"), false);
    assert.deepEqual([...info.supportedVersions], ["1.0.0", "1.1.0"]);
  });
});

describe("decodeVersionInfo (PluginDecoder)", () => {
  test("reported versions are taken as given", () => {
    const info = decodeVersionInfo('{"cniVersion":"some-library-version","supportedVersions":["some-version","some-other-version"]}');
    assert.deepEqual([...info.supportedVersions], ["some-version", "some-other-version"]);
  });
  test("syntax errors", () => {
    assert.throws(() => decodeVersionInfo("{{{"), {
      message: "decoding version info: invalid character '{' looking for beginning of object key string",
    });
    assert.throws(() => decodeVersionInfo(""), { message: "decoding version info: unexpected end of JSON input" });
  });
  test("missing cniVersion", () => {
    assert.throws(() => decodeVersionInfo('{ "supportedVersions": [ "foo" ] }'), { message: "decoding version info: missing field cniVersion" });
    assert.throws(() => decodeVersionInfo('{ "cniVersion": "", "supportedVersions": [ "foo" ] }'), {
      message: "decoding version info: missing field cniVersion",
    });
    assert.throws(() => decodeVersionInfo("null"), { message: "decoding version info: missing field cniVersion" });
  });
  test("0.2.0 without supportedVersions means 0.1.0 and 0.2.0", () => {
    assert.deepEqual([...decodeVersionInfo('{ "cniVersion": "0.2.0" }').supportedVersions], ["0.1.0", "0.2.0"]);
    assert.deepEqual([...decodeVersionInfo('{ "cniVersion": "0.2.0", "supportedVersions": [] }').supportedVersions], ["0.1.0", "0.2.0"]);
    assert.deepEqual([...decodeVersionInfo('{ "cniVersion": "0.2.0", "supportedVersions": null }').supportedVersions], ["0.1.0", "0.2.0"]);
  });
  test("other versions without supportedVersions fail", () => {
    assert.throws(() => decodeVersionInfo('{ "cniVersion": "0.3.0" }'), { message: "decoding version info: missing field supportedVersions" });
    assert.throws(() => decodeVersionInfo('{ "cniVersion": "1.1.0", "supportedVersions": [] }'), {
      message: "decoding version info: missing field supportedVersions",
    });
  });
  test("keys match case-insensitively, as Go's decoder does", () => {
    assert.deepEqual([...decodeVersionInfo('{"CNIVersion":"1.1.0","SupportedVersions":["1.0.0"]}').supportedVersions], ["1.0.0"]);
  });
  test("type mismatches are Go unmarshal errors", () => {
    assert.throws(
      () => decodeVersionInfo('{"cniVersion":1}'),
      /^Error: decoding version info: json: cannot unmarshal number into Go struct field pluginInfo.cniVersion of type string$/,
    );
    assert.throws(
      () => decodeVersionInfo('{"cniVersion":"1.0.0","supportedVersions":"1.0.0"}'),
      /^Error: decoding version info: json: cannot unmarshal string into Go struct field pluginInfo.supportedVersions of type \[\]string$/,
    );
    assert.throws(() => decodeVersionInfo('{"cniVersion":"1.0.0","supportedVersions":[1]}'), /decoding version info: json: cannot unmarshal number/);
    assert.throws(() => decodeVersionInfo("[]"), {
      message: "decoding version info: json: cannot unmarshal array into Go value of type version.pluginInfo",
    });
  });
  test("bytes input", () => {
    assert.deepEqual([...decodeVersionInfo(Buffer.from('{"cniVersion":"1.1.0","supportedVersions":["1.1.0"]}')).supportedVersions], ["1.1.0"]);
  });
});

describe("decodeConfigVersion (ConfigDecoder / create.DecodeVersion)", () => {
  test("declared version", () => assert.equal(decodeConfigVersion('{ "cniVersion": "4.3.2" }'), "4.3.2"));
  test("missing or empty means 0.1.0", () => {
    assert.equal(decodeConfigVersion('{ "not-a-version-field": "foo" }'), "0.1.0");
    assert.equal(decodeConfigVersion('{ "cniVersion": "" }'), "0.1.0");
    assert.equal(decodeConfigVersion('{ "cniVersion": null }'), "0.1.0");
    assert.equal(decodeConfigVersion("null"), "0.1.0");
  });
  test("syntax errors are prefixed", () => {
    assert.throws(
      () => decodeConfigVersion("{{{"),
      (e: unknown) => (e as Error).message.startsWith("decoding version from network config: invalid character"),
    );
    assert.throws(() => decodeConfigVersion("{"), { message: "decoding version from network config: unexpected end of JSON input" });
  });
  test("keys match case-insensitively; the last match wins", () => {
    assert.equal(decodeConfigVersion('{"CNIVersion":"1.0.0"}'), "1.0.0");
    assert.equal(decodeConfigVersion('{"CNIVersion":"1.0.0","cniVersion":"0.4.0"}'), "0.4.0");
    assert.equal(decodeConfigVersion('{"cniVersion":"0.4.0","CNIVersion":"1.0.0"}'), "1.0.0");
  });
  test("type mismatches", () => {
    assert.throws(() => decodeConfigVersion('{"cniVersion": 1}'), {
      message: "decoding version from network config: json: cannot unmarshal number into Go struct field .cniVersion of type string",
    });
    assert.throws(
      () => decodeConfigVersion("[1]"),
      /^Error: decoding version from network config: json: cannot unmarshal array into Go value of type struct/,
    );
  });
});

describe("reconcileVersion (Reconciler.Check)", () => {
  const info = pluginSupports("1.2.3", "4.3.2");
  test("a supported version passes", () => assert.doesNotThrow(() => reconcileVersion("4.3.2", info)));
  test("an unsupported version is IncompatibleVersionError", () => {
    assert.throws(
      () => reconcileVersion("0.1.0", info),
      (e: unknown) => {
        assert.ok(e instanceof IncompatibleVersionError);
        assert.ok(e instanceof CniError);
        assert.equal(e.message, 'incompatible CNI versions: config is "0.1.0", plugin supports ["1.2.3" "4.3.2"]');
        assert.equal(e.code, 1);
        assert.equal(e.msg, "incompatible CNI versions");
        assert.equal(e.details, 'config is "0.1.0", plugin supports ["1.2.3" "4.3.2"]');
        assert.equal(e.configVersion, "0.1.0");
        assert.deepEqual([...e.supported], ["1.2.3", "4.3.2"]);
        return true;
      },
    );
  });
  test("membership is exact: 1.2 is not 1.2.3", () => {
    assert.throws(() => reconcileVersion("1.2", pluginSupports("1.2.0")), IncompatibleVersionError);
    assert.throws(() => reconcileVersion("", pluginSupports("0.1.0")), {
      message: 'incompatible CNI versions: config is "", plugin supports ["0.1.0"]',
    });
  });
  test("quoteList is Go's %q of a slice", () => {
    assert.equal(quoteList(["a", 'b"c']), '["a" "b\\"c"]');
  });
});

describe("negotiateVersion", () => {
  test("picks the highest version both sides know", () => {
    assert.equal(negotiateVersion(["0.4.0", "1.1.0", "1.0.0"], pluginSupports("0.3.1", "0.4.0", "1.0.0")), "1.0.0");
    assert.equal(negotiateVersion(["0.4.0"], pluginSupports("1.0.0")), undefined);
    assert.equal(negotiateVersion(["bogus", "0.4.0"], pluginSupports("bogus", "0.4.0")), "0.4.0");
  });
});
