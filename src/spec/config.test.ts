import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { configError, confListFromConf, decodePluginConf, describePlugin, injectConf, parseConfList, parsePluginConfig } from "./config.js";
import { CniError } from "./errors.js";

/**
 * Asserts a config error: a CniError whose `.msg` is Go's exact text; with no file given, `.message` is that text
 * too (details are only added for a file or a syntax-error offset).
 */
function assertConfigError(fn: () => unknown, goText: string, code?: number): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CniError, `expected a CniError, got ${String(e)}`);
    assert.equal(e.msg, goText);
    assert.ok(e.message === goText || e.message.startsWith(`${goText}; at byte offset `), e.message);
    if (code !== undefined) assert.equal(e.code, code);
    return true;
  });
}

/** The plain Error message of fn, for the functions that throw non-CNI errors. */
function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  assert.fail("expected an error");
}

describe("parsePluginConfig (NetworkPluginConfFromBytes, checklist 3.3)", () => {
  test("typed view, raw object and verbatim bytes", () => {
    const text = '{ "name": "some-plugin", "type": "foobar", "some-key": "some-value" }';
    const conf = parsePluginConfig(text);
    assert.deepEqual(conf.network, { cniVersion: "", name: "some-plugin", type: "foobar" });
    assert.deepEqual(conf.raw, { name: "some-plugin", type: "foobar", "some-key": "some-value" });
    assert.ok(Buffer.isBuffer(conf.bytes));
    assert.equal(conf.bytes.toString(), text);
  });
  test("bytes input is kept byte for byte", () => {
    const bytes = Buffer.from('{"type":"x",  "z":1}\n');
    assert.deepEqual(parsePluginConfig(bytes).bytes, bytes);
  });
  test("missing type", () => {
    assertConfigError(
      () => parsePluginConfig('{ "name": "some-plugin", "some-key": "some-value" }'),
      "error parsing configuration: missing 'type'",
      7,
    );
    assertConfigError(() => parsePluginConfig('{ "type": "" }'), "error parsing configuration: missing 'type'");
    assertConfigError(() => parsePluginConfig("null"), "error parsing configuration: missing 'type'");
    assertConfigError(() => parsePluginConfig("{}"), "error parsing configuration: missing 'type'");
  });
  test("syntax errors", () => {
    assertConfigError(() => parsePluginConfig("{"), "error parsing configuration: unexpected end of JSON input", 6);
    assertConfigError(() => parsePluginConfig(""), "error parsing configuration: unexpected end of JSON input");
    assertConfigError(
      () => parsePluginConfig("{ cc cc cc}"),
      "error parsing configuration: invalid character 'c' looking for beginning of object key string",
    );
  });
  test("non-object JSON", () => {
    assertConfigError(
      () => parsePluginConfig("[]"),
      "error parsing configuration: json: cannot unmarshal array into Go value of type types.PluginConf",
    );
    assertConfigError(
      () => parsePluginConfig("5"),
      "error parsing configuration: json: cannot unmarshal number into Go value of type types.PluginConf",
    );
    assertConfigError(
      () => parsePluginConfig("true"),
      "error parsing configuration: json: cannot unmarshal bool into Go value of type types.PluginConf",
    );
  });
  test("capabilities", () => {
    const conf = parsePluginConfig('{"type":"x","capabilities": { "portMappings": true, "somethingElse": true, "noCapability": false }}');
    assert.deepEqual(conf.network.capabilities, { portMappings: true, somethingElse: true, noCapability: false });
    assert.throws(
      () => parsePluginConfig('{"type":"x","capabilities":{"a":"yes"}}'),
      (e: unknown) => (e as CniError).msg.startsWith("error parsing configuration: json: cannot unmarshal string into Go struct field"),
    );
    assert.throws(
      () => parsePluginConfig('{"type":"x","capabilities":[]}'),
      (e: unknown) => (e as CniError).msg.startsWith("error parsing configuration: json: cannot unmarshal array into Go struct field"),
    );
  });
  test("typed fields must have their Go types", () => {
    for (const bad of [
      '{"type":1}',
      '{"type":"x","name":["n"]}',
      '{"type":"x","cniVersion":1.0}',
      '{"type":"x","ipam":"host-local"}',
      '{"type":"x","ipam":{"type":5}}',
      '{"type":"x","dns":[]}',
      '{"type":"x","dns":{"nameservers":"1.1.1.1"}}',
      '{"type":"x","prevResult":"r"}',
      '{"type":"x","cni.dev/valid-attachments":{}}',
      '{"type":"x","cni.dev/valid-attachments":[{"containerID":1}]}',
    ]) {
      assert.throws(
        () => parsePluginConfig(bad),
        (e: unknown) => {
          assert.ok(e instanceof CniError);
          assert.match(e.msg, /^error parsing configuration: json: cannot unmarshal /, bad);
          assert.equal(e.code, 6);
          return true;
        },
      );
    }
  });
  test("keys unknown to Go's PluginConf are not type-checked", () => {
    const conf = parsePluginConfig('{"type":"x","runtimeConfig":"nope","args":5,"mtu":"1500"}');
    assert.equal(conf.network.runtimeConfig, undefined);
    assert.equal(conf.network.args, undefined);
    assert.equal(conf.raw["mtu"], "1500");
  });
  test("the typed view of every known key", () => {
    const conf = parsePluginConfig(
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "dbnet",
        type: "bridge",
        capabilities: { portMappings: true },
        ipam: { type: "host-local", subnet: "10.1.0.0/16" },
        dns: { nameservers: ["10.1.0.1"], domain: "example.com", search: ["a"], options: ["ndots:2"] },
        prevResult: { cniVersion: "1.1.0", ips: [] },
        runtimeConfig: { portMappings: [] },
        args: { cni: { x: 1 } },
        "cni.dev/valid-attachments": [{ containerID: "c1", ifname: "eth0" }, {}],
      }),
    );
    assert.deepEqual(conf.network, {
      cniVersion: "1.1.0",
      name: "dbnet",
      type: "bridge",
      capabilities: { portMappings: true },
      ipam: { type: "host-local", subnet: "10.1.0.0/16" },
      dns: { nameservers: ["10.1.0.1"], domain: "example.com", search: ["a"], options: ["ndots:2"] },
      prevResult: { cniVersion: "1.1.0", ips: [] },
      runtimeConfig: { portMappings: [] },
      args: { cni: { x: 1 } },
      validAttachments: [
        { containerID: "c1", ifname: "eth0" },
        { containerID: "", ifname: "" },
      ],
    });
  });
  test("struct keys match case-insensitively, null is absent", () => {
    const conf = parsePluginConfig('{"TYPE":"bridge","Name":"n","CNIVersion":"0.4.0","capabilities":null,"ipam":null}');
    assert.deepEqual(conf.network, { cniVersion: "0.4.0", name: "n", type: "bridge" });
  });
  test("a file name goes into the details, not into msg", () => {
    assert.throws(
      () => parsePluginConfig('{"name":"x"}', "/etc/cni/net.d/10-x.conf"),
      (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.msg, "error parsing configuration: missing 'type'");
        assert.equal(e.details, "in file /etc/cni/net.d/10-x.conf");
        assert.equal(e.message, "error parsing configuration: missing 'type'; in file /etc/cni/net.d/10-x.conf");
        return true;
      },
    );
    assert.throws(
      () => parsePluginConfig("{", "/x.conf"),
      (e: unknown) => {
        assert.equal((e as CniError).msg, "error parsing configuration: unexpected end of JSON input");
        assert.equal((e as CniError).details, "in file /x.conf at byte offset 1");
        return true;
      },
    );
  });
  test("decodePluginConf does not require type", () => {
    assert.deepEqual(decodePluginConf({ name: "n" }), { cniVersion: "", name: "n", type: "" });
  });
});

describe("parseConfList (NetworkConfFromBytes, checklist 3.2 / 6.9)", () => {
  const CONFLIST = `{
  "name": "some-network",
  "cniVersion": "0.2.0",
  "disableCheck": true,
  "plugins": [
    { "type": "host-local", "subnet": "10.0.0.1/24" },
    { "type": "bridge", "mtu": 1400 },
    { "type": "port-forwarding", "ports": {"20.0.0.1:8080": "80"} }
  ]
}`;

  test("the upstream conflist", () => {
    const list = parseConfList(CONFLIST);
    assert.equal(list.name, "some-network");
    assert.equal(list.cniVersion, "0.2.0");
    assert.equal(list.disableCheck, true);
    assert.equal(list.disableGC, false);
    assert.equal(list.loadOnlyInlinedPlugins, false);
    assert.equal(list.bytes.toString(), CONFLIST); // the original bytes
    assert.deepEqual(
      list.plugins.map((p) => p.bytes.toString()),
      ['{"subnet":"10.0.0.1/24","type":"host-local"}', '{"mtu":1400,"type":"bridge"}', '{"ports":{"20.0.0.1:8080":"80"},"type":"port-forwarding"}'],
    );
    assert.deepEqual(
      list.plugins.map((p) => p.network.type),
      ["host-local", "bridge", "port-forwarding"],
    );
    assert.equal(list.cniVersions, undefined);
    assert.equal(list.raw["name"], "some-network");
  });
  test("re-marshalled plugin bytes are sorted at every level and HTML-escaped", () => {
    const list = parseConfList('{"name":"n","plugins":[{"type":"t","z":{"b":1,"a":[{"d":1,"c":2}]},"url":"a<b&c>"}]}');
    assert.equal(list.plugins[0]!.bytes.toString(), '{"type":"t","url":"a\\u003cb\\u0026c\\u003e","z":{"a":[{"c":2,"d":1}],"b":1}}');
  });
  test("syntax errors", () => {
    assertConfigError(() => parseConfList("{"), "error parsing configuration list: unexpected end of JSON input", 6);
    assertConfigError(() => parseConfList("adfadsf"), "error parsing configuration list: invalid character 'a' looking for beginning of value");
  });
  test("syntax error with a file: the message gets the details", () => {
    assert.throws(
      () => parseConfList("{", "/etc/cni/net.d/00-bad.conflist"),
      (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.msg, "error parsing configuration list: unexpected end of JSON input");
        assert.ok(e.message.startsWith("error parsing configuration list: unexpected end of JSON input; "));
        assert.ok(e.message.includes("/etc/cni/net.d/00-bad.conflist"));
        return true;
      },
    );
  });
  test("non-object JSON", () => {
    assertConfigError(
      () => parseConfList("[]"),
      "error parsing configuration list: json: cannot unmarshal array into Go value of type map[string]interface {}",
    );
    assertConfigError(
      () => parseConfList('"x"'),
      "error parsing configuration list: json: cannot unmarshal string into Go value of type map[string]interface {}",
    );
    assertConfigError(
      () => parseConfList("false"),
      "error parsing configuration list: json: cannot unmarshal bool into Go value of type map[string]interface {}",
    );
    assertConfigError(() => parseConfList("null"), "error parsing configuration list: no name");
  });
  test("name", () => {
    assertConfigError(() => parseConfList('{"plugins":[{"type":"x"}]}'), "error parsing configuration list: no name");
    assertConfigError(() => parseConfList('{"Name":"n"}'), "error parsing configuration list: no name"); // map keys are exact
    assertConfigError(() => parseConfList('{"name":5}'), "error parsing configuration list: invalid name type float64");
    assertConfigError(() => parseConfList('{"name":null}'), "error parsing configuration list: invalid name type <nil>");
    assertConfigError(() => parseConfList('{"name":{}}'), "error parsing configuration list: invalid name type map[string]interface {}");
    assertConfigError(() => parseConfList('{"name":[]}'), "error parsing configuration list: invalid name type []interface {}");
    assert.equal(parseConfList('{"name":""}').name, ""); // not validated here
    assert.equal(parseConfList('{"name":"in valid %%"}').name, "in valid %%");
  });
  test("cniVersion", () => {
    assertConfigError(() => parseConfList('{"name":"n","cniVersion":1.0}'), "error parsing configuration list: invalid cniVersion type float64");
    assertConfigError(() => parseConfList('{"name":"n","cniVersion":true}'), "error parsing configuration list: invalid cniVersion type bool");
    assertConfigError(() => parseConfList('{"name":"n","cniVersion":null}'), "error parsing configuration list: invalid cniVersion type <nil>");
    assert.equal(parseConfList('{"name":"n"}').cniVersion, "");
    // without cniVersions the version is taken verbatim
    assert.equal(parseConfList('{"name":"test","cniVersion":"1.2.3","plugins":[{"type":"foo"}]}').cniVersion, "1.2.3");
    assert.equal(parseConfList('{"name":"test","cniVersion":"garbage"}').cniVersion, "garbage");
  });

  describe("cniVersions selection", () => {
    const pick = (extra: string) => parseConfList(`{"name": "test", ${extra}, "plugins": [{"type": "foo"}]}`);
    test('["1.1.0","0.4.0","1.0.0"] => 1.1.0', () => assert.equal(pick('"cniVersions": ["1.1.0", "0.4.0", "1.0.0"]').cniVersion, "1.1.0"));
    test("entries newer than 1.1.0 are skipped", () => {
      assert.equal(pick('"cniVersions": ["99.0.0", "1.1.0", "0.4.0", "1.0.0"]').cniVersion, "1.1.0");
      assert.equal(pick('"cniVersions": ["1.2.0", "1.0.0"]').cniVersion, "1.0.0");
    });
    test("an unparsable entry fails", () => {
      assertConfigError(
        () => pick('"cniVersions": ["1.1.0", "0.4.0", "1.0.f"]'),
        'error parsing configuration list: invalid cniVersions entry 1.0.f at index 2: failed to convert micro version part "f": strconv.Atoi: parsing "f": invalid syntax',
      );
      assertConfigError(
        () => pick('"cniVersions": ["1.2.3.4"]'),
        'error parsing configuration list: invalid cniVersions entry 1.2.3.4 at index 0: invalid version "1.2.3.4": too many parts',
      );
    });
    test("cniVersion joins the set", () => {
      assert.equal(pick('"cniVersion": "1.0.0", "cniVersions": ["0.1.0", "0.4.0"]').cniVersion, "1.0.0");
      assert.equal(pick('"cniVersion": "0.3.1", "cniVersions": ["0.1.0", "0.4.0"]').cniVersion, "0.4.0");
      assert.equal(pick('"cniVersion": "2.0.0", "cniVersions": ["0.4.0"]').cniVersion, "0.4.0"); // a too new cniVersion is skipped too
    });
    test("an unparsable cniVersion fails only when cniVersions is present", () => {
      assertConfigError(
        () => pick('"cniVersion": "x.y", "cniVersions": ["0.4.0"]'),
        'error parsing configuration list: invalid cniVersion x.y: failed to convert major version part "x": strconv.Atoi: parsing "x": invalid syntax',
      );
    });
    test("an empty set keeps cniVersion as it is", () => {
      assert.equal(pick('"cniVersions": []').cniVersion, "");
      assert.equal(pick('"cniVersions": ["3.0.0"]').cniVersion, "");
      assert.equal(pick('"cniVersion": "2.0.0", "cniVersions": []').cniVersion, "2.0.0");
    });
    test("the list of entries is kept", () => {
      assert.deepEqual(pick('"cniVersions": ["99.0.0", "1.1.0"]').cniVersions, ["99.0.0", "1.1.0"]);
    });
    test("type errors", () => {
      assertConfigError(() => pick('"cniVersions": "1.0.0"'), "error parsing configuration list: invalid type for cniVersions: []interface {}");
      assertConfigError(() => pick('"cniVersions": {}'), "error parsing configuration list: invalid type for cniVersions: []interface {}");
      assertConfigError(() => pick('"cniVersions": null'), "error parsing configuration list: invalid type for cniVersions: []interface {}");
      assertConfigError(() => pick('"cniVersions": ["1.0.0", 1]'), "error parsing configuration list: invalid type for cniVersions index 1: float64");
      assertConfigError(() => pick('"cniVersions": [null]'), "error parsing configuration list: invalid type for cniVersions index 0: <nil>");
    });
    test("cniVersion type is checked before cniVersions", () => {
      assertConfigError(() => pick('"cniVersion": 1, "cniVersions": "x"'), "error parsing configuration list: invalid cniVersion type float64");
    });
  });

  describe("boolean flags (readBool)", () => {
    const flags = (extra: string) => parseConfList(`{"name":"n",${extra},"plugins":[{"type":"x"}]}`);
    for (const key of ["disableCheck", "disableGC", "loadOnlyInlinedPlugins"] as const) {
      test(`${key}`, () => {
        assert.equal(flags(`"${key}": true`)[key], true);
        assert.equal(flags(`"${key}": false`)[key], false);
        assert.equal(flags(`"${key}": "true"`)[key], true);
        assert.equal(flags(`"${key}": "TRUE"`)[key], true);
        assert.equal(flags(`"${key}": "False"`)[key], false);
        assert.equal(flags('"other": 1')[key], false);
        assertConfigError(() => flags(`"${key}": "adsfasdfasf"`), `error parsing configuration list: invalid value "adsfasdfasf" for ${key}`);
        assertConfigError(() => flags(`"${key}": "YES"`), `error parsing configuration list: invalid value "yes" for ${key}`);
        assertConfigError(() => flags(`"${key}": ""`), `error parsing configuration list: invalid value "" for ${key}`);
        assertConfigError(() => flags(`"${key}": 1`), `error parsing configuration list: invalid type float64 for ${key}`);
        assertConfigError(() => flags(`"${key}": null`), `error parsing configuration list: invalid type <nil> for ${key}`);
        assertConfigError(() => flags(`"${key}": []`), `error parsing configuration list: invalid type []interface {} for ${key}`);
      });
    }
    test("upstream vectors", () => {
      assertConfigError(
        () => flags('"loadOnlyInlinedPlugins": "sphagnum"'),
        'error parsing configuration list: invalid value "sphagnum" for loadOnlyInlinedPlugins',
      );
      assertConfigError(
        () => flags('"disableCheck": "adsfasdfasf"'),
        'error parsing configuration list: invalid value "adsfasdfasf" for disableCheck',
      );
    });
    test("flags are read in order disableCheck, disableGC, loadOnlyInlinedPlugins", () => {
      assertConfigError(
        () => flags('"loadOnlyInlinedPlugins": 1, "disableGC": 1, "disableCheck": 1'),
        "error parsing configuration list: invalid type float64 for disableCheck",
      );
      assertConfigError(
        () => flags('"loadOnlyInlinedPlugins": 1, "disableGC": 1'),
        "error parsing configuration list: invalid type float64 for disableGC",
      );
    });
    test("a bad flag is reported before bad plugins", () => {
      assertConfigError(
        () => parseConfList('{"name":"n","disableGC":"x","plugins":5}'),
        'error parsing configuration list: invalid value "x" for disableGC',
      );
    });
  });

  describe("plugins", () => {
    test("absent: an empty list, unless loadOnlyInlinedPlugins", () => {
      assert.deepEqual(parseConfList('{"name":"n"}').plugins, []);
      assert.deepEqual(parseConfList('{"name":"n","loadOnlyInlinedPlugins":false}').plugins, []);
      assertConfigError(
        () => parseConfList('{"name":"n","loadOnlyInlinedPlugins":true}'),
        "error parsing configuration list: `loadOnlyInlinedPlugins` is true, and no 'plugins' key",
      );
    });
    test("loadOnlyInlinedPlugins with inline plugins", () => {
      const list = parseConfList('{"name":"n","loadOnlyInlinedPlugins":true,"plugins":[{"type":"host-local","subnet":"10.0.0.1/24"}]}');
      assert.equal(list.loadOnlyInlinedPlugins, true);
      assert.deepEqual(
        list.plugins.map((p) => p.network.type),
        ["host-local"],
      );
    });
    test("wrong types and empty list", () => {
      assertConfigError(() => parseConfList('{"name":"n","plugins":null}'), "error parsing configuration list: invalid 'plugins' type <nil>");
      assertConfigError(
        () => parseConfList('{"name":"n","plugins":{}}'),
        "error parsing configuration list: invalid 'plugins' type map[string]interface {}",
      );
      assertConfigError(() => parseConfList('{"name":"n","plugins":"bridge"}'), "error parsing configuration list: invalid 'plugins' type string");
      assertConfigError(() => parseConfList('{"name":"n","plugins":[]}'), "error parsing configuration list: no plugins in list");
    });
    test("plugin errors are not prefixed with the list error text", () => {
      assertConfigError(
        () => parseConfList('{"name":"n","plugins":[{"type":"a"},{"name":"b"}]}'),
        "failed to parse plugin config 1: error parsing configuration: missing 'type'",
        7,
      );
      assertConfigError(
        () => parseConfList('{"name":"n","plugins":[5]}'),
        "failed to parse plugin config 0: error parsing configuration: json: cannot unmarshal number into Go value of type types.PluginConf",
        6,
      );
      assertConfigError(
        () => parseConfList('{"name":"n","plugins":[["x"]]}'),
        "failed to parse plugin config 0: error parsing configuration: json: cannot unmarshal array into Go value of type types.PluginConf",
      );
      assertConfigError(
        () => parseConfList('{"name":"n","plugins":[null]}'),
        "failed to parse plugin config 0: error parsing configuration: missing 'type'",
      );
      assert.throws(
        () => parseConfList('{"name":"n","plugins":[{"type":"a","capabilities":{"x":1}}]}'),
        (e: unknown) => (e as CniError).msg.startsWith("failed to parse plugin config 0: error parsing configuration: json: cannot unmarshal number"),
      );
    });
    test("plugins keep their own name and cniVersion (no inheritance here)", () => {
      const list = parseConfList('{"name":"net","cniVersion":"1.0.0","plugins":[{"type":"a"},{"type":"b","name":"own","cniVersion":"0.4.0"}]}');
      assert.deepEqual(
        list.plugins.map((p) => p.network),
        [
          { cniVersion: "", name: "", type: "a" },
          { cniVersion: "0.4.0", name: "own", type: "b" },
        ],
      );
    });
  });
});

describe("confListFromConf", () => {
  test("upconverts a single plugin config", () => {
    const conf = parsePluginConfig('{"name":"some-plugin","cniVersion":"0.3.1", "type":"foobar"}');
    const list = confListFromConf(conf);
    assert.equal(list.name, "some-plugin");
    assert.equal(list.cniVersion, "0.3.1");
    assert.equal(list.disableCheck, false);
    assert.equal(list.disableGC, false);
    assert.equal(list.loadOnlyInlinedPlugins, false);
    assert.equal(list.plugins.length, 1);
    assert.deepEqual(list.plugins[0]!.network, conf.network);
    assert.equal(
      list.bytes.toString(),
      '{"cniVersion":"0.3.1","name":"some-plugin","plugins":[{"cniVersion":"0.3.1","name":"some-plugin","type":"foobar"}]}',
    );
    const again = parseConfList(list.bytes);
    assert.deepEqual({ ...again, bytes: again.bytes.toString() }, { ...list, bytes: list.bytes.toString() });
  });
  test("a config without name or version gives empty strings", () => {
    const list = confListFromConf(parsePluginConfig('{"type":"x","disableCheck":true}'));
    assert.equal(list.bytes.toString(), '{"cniVersion":"","name":"","plugins":[{"disableCheck":true,"type":"x"}]}');
    assert.equal(list.disableCheck, false); // the flag belongs to the plugin object, not the list
  });
});

describe("injectConf (InjectConf, checklist 3.4 / 6.9)", () => {
  const original = () => parsePluginConfig('{ "name": "some-plugin", "type": "foobar" }');

  test("bad existing bytes", () => {
    const broken = { ...original(), bytes: Buffer.from("{ cc cc cc}") };
    assert.ok(messageOf(() => injectConf(broken, { a: 1 })).startsWith("unmarshal existing network bytes"));
    assert.equal(
      messageOf(() => injectConf(broken, { a: 1 })),
      "unmarshal existing network bytes: invalid character 'c' looking for beginning of object key string",
    );
    assert.equal(
      messageOf(() => injectConf({ ...original(), bytes: Buffer.from("[]") }, { a: 1 })),
      "unmarshal existing network bytes: json: cannot unmarshal array into Go value of type map[string]interface {}",
    );
  });
  test("empty keys and nil values", () => {
    assert.ok(messageOf(() => injectConf(original(), { "": null })).startsWith("keys cannot be empty"));
    assert.equal(
      messageOf(() => injectConf(original(), { "": "x" })),
      "keys cannot be empty",
    );
    assert.equal(
      messageOf(() => injectConf(original(), { test: null })),
      "key 'test' value must not be nil",
    );
    assert.equal(
      messageOf(() => injectConf(original(), { test: undefined })),
      "key 'test' value must not be nil",
    );
  });
  test("adds, changes and re-injects a key", () => {
    const a = injectConf(original(), { test: "test" });
    assert.equal(a.bytes.toString(), '{"name":"some-plugin","test":"test","type":"foobar"}');
    const b = injectConf(a, { test: "changedValue" });
    assert.equal(b.bytes.toString(), '{"name":"some-plugin","test":"changedValue","type":"foobar"}');
    const c = injectConf(b, { test: "changedValue" });
    assert.equal(c.bytes.toString(), '{"name":"some-plugin","test":"changedValue","type":"foobar"}');
  });
  test("injects a DNS object and replaces type", () => {
    const withDns = injectConf(original(), { dns: { nameservers: ["server1", "server2"], domain: "local" } });
    const result = injectConf(withDns, { type: "bridge" });
    assert.equal(result.bytes.toString(), '{"dns":{"domain":"local","nameservers":["server1","server2"]},"name":"some-plugin","type":"bridge"}');
    assert.deepEqual(result.network, {
      cniVersion: "",
      name: "some-plugin",
      type: "bridge",
      dns: { nameservers: ["server1", "server2"], domain: "local" },
    });
  });
  test("the result must still be a valid plugin config", () => {
    assertConfigError(() => injectConf(original(), { type: "" }), "error parsing configuration: missing 'type'");
  });
  test("nested values are sorted and the input is not modified", () => {
    const orig = original();
    const out = injectConf(orig, { runtimeConfig: { z: 1, a: { y: [1, { k: "<" }], b: false } }, args: { cni: {} } });
    assert.equal(
      out.bytes.toString(),
      '{"args":{"cni":{}},"name":"some-plugin","runtimeConfig":{"a":{"b":false,"y":[1,{"k":"\\u003c"}]},"z":1},"type":"foobar"}',
    );
    assert.equal(orig.bytes.toString(), '{ "name": "some-plugin", "type": "foobar" }');
    assert.deepEqual(out.network.runtimeConfig, { z: 1, a: { y: [1, { k: "<" }], b: false } });
  });
  test("empty arrays are not nil", () => {
    const out = injectConf(original(), { "cni.dev/valid-attachments": [] });
    assert.equal(out.bytes.toString(), '{"cni.dev/valid-attachments":[],"name":"some-plugin","type":"foobar"}');
  });
});

describe("small helpers", () => {
  test("describePlugin", () => {
    assert.equal(describePlugin({ cniVersion: "", name: "", type: "noop" }), 'type="noop"');
    assert.equal(describePlugin({ cniVersion: "", name: "n", type: "noop" }), 'type="noop" name="n"');
  });
  test("configError", () => {
    const e = configError(7, "bad", { file: "/f", offset: 3 });
    assert.deepEqual([e.code, e.msg, e.details, e.message], [7, "bad", "in file /f at byte offset 3", "bad; in file /f at byte offset 3"]);
    assert.equal(configError(6, "bad").message, "bad");
  });
});
