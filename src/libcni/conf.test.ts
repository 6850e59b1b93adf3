import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { beforeEach, describe, test } from "node:test";
import { confListFromConf, injectConf, parseConfList, parsePluginConfig } from "#spec/config.js";
import { CniError } from "#spec/errors.js";
import { useTempDirs } from "#testing/temp.js";
import {
  confFiles,
  confFromFile,
  confListFromFile,
  loadAllNetworks,
  loadConf,
  loadConfList,
  NoConfigsFoundError,
  NotFoundError,
  pluginConfsFromDir,
} from "./conf.js";

const tempDir = useTempDirs();

const write = (dir: string, name: string, text: string): string => {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
};

/** The Go text of a config error (its `.msg`), whatever file suffix `.message` carries. */
function goText(e: unknown): string {
  return e instanceof CniError ? e.msg : (e as Error).message;
}

/** Asserts that `p` rejects with an error whose Go text equals `text`. */
async function rejectsWith(p: Promise<unknown>, text: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.equal(goText(e), text);
    return true;
  });
}

describe("confFiles", () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });

  test("a missing directory has no files and no error", async () => {
    assert.deepEqual(await confFiles(path.join(dir, "nope"), [".conf"]), []);
  });

  test("matches the last extension exactly, sorted, without sub-directories", async () => {
    for (const name of ["b.conf", "a.conf", "c.conf.bak", "d.json", ".conf", "e.CONF", "f.conflist"]) write(dir, name, "{}");
    fs.mkdirSync(path.join(dir, "sub.conf"));
    write(dir, "nested/x.conf", "{}");
    assert.deepEqual(
      await confFiles(dir, [".conf"]),
      [".conf", "a.conf", "b.conf"].map((n) => path.join(dir, n)),
    );
    assert.deepEqual(
      await confFiles(dir, [".conf", ".json"]),
      [".conf", "a.conf", "b.conf", "d.json"].map((n) => path.join(dir, n)),
    );
    assert.deepEqual(await confFiles(dir, [".conflist"]), [path.join(dir, "f.conflist")]);
  });

  test("sorts by bytes (upper case first)", async () => {
    for (const name of ["b.conf", "B.conf", "10.conf", "9.conf"]) write(dir, name, "{}");
    assert.deepEqual(
      (await confFiles(dir, [".conf"])).map((f) => path.basename(f)),
      ["10.conf", "9.conf", "B.conf", "b.conf"],
    );
  });
});

describe("loadConf (single-plugin configs)", () => {
  let dir: string;
  const text = `{ "name": "some-plugin", "type": "foobar", "some-key": "some-value" }`;
  beforeEach(() => {
    dir = tempDir();
    write(dir, "50-whatever.conf", text);
  });

  test("finds the config by network name", async () => {
    const conf = await loadConf(dir, "some-plugin");
    assert.equal(conf.network.name, "some-plugin");
    assert.equal(conf.network.type, "foobar");
    assert.equal(conf.bytes.toString(), text);
  });

  test("a .json file works as well", async () => {
    fs.renameSync(path.join(dir, "50-whatever.conf"), path.join(dir, "50-whatever.json"));
    const conf = await loadConf(dir, "some-plugin");
    assert.equal(conf.network.type, "foobar");
    assert.equal(conf.bytes.toString(), text);
  });

  test("a missing directory", async () => {
    const missing = path.join(dir, "nope");
    await assert.rejects(loadConf(missing, "some-plugin"), (e: unknown) => {
      assert.ok(e instanceof NoConfigsFoundError);
      assert.equal(e.message, `no net configurations found in ${missing}`);
      assert.equal(e.dir, missing);
      return true;
    });
  });

  test("no config of that name", async () => {
    await assert.rejects(loadConf(dir, "some-other-plugin"), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.ok(e.message.includes(`no net configuration with name "some-other-plugin" in`));
      assert.equal(e.message, `no net configuration with name "some-other-plugin" in ${dir}`);
      return true;
    });
  });

  test("a malformed file stops the search", async () => {
    write(dir, "00-bad.conf", "{");
    await rejectsWith(loadConf(dir, "some-plugin"), "error parsing configuration: unexpected end of JSON input");
  });

  test("the error of a file-loaded config names the file", async () => {
    const bad = write(dir, "00-bad.conf", "{");
    await assert.rejects(loadConf(dir, "some-plugin"), (e: unknown) => {
      assert.ok((e as Error).message.startsWith("error parsing configuration: unexpected end of JSON input"));
      assert.ok((e as Error).message.includes(bad));
      return true;
    });
  });

  test("a config in a nested sub-directory is not found", async () => {
    write(dir, "subdir1/subdir2/90-deep.conf", `{ "name": "deep", "type": "bridge" }`);
    await assert.rejects(loadConf(dir, "deep"), (e: unknown) => {
      assert.ok((e as Error).message.startsWith("no net configuration with name"));
      return true;
    });
  });

  test("reads capabilities", async () => {
    write(
      dir,
      "50-whatever.conf",
      `{ "name": "some-plugin", "type": "noop", "cniVersion": "0.3.1",
      "capabilities": { "portMappings": true, "somethingElse": true, "noCapability": false } }`,
    );
    const conf = await loadConf(dir, "some-plugin");
    assert.deepEqual(conf.network.capabilities, { portMappings: true, somethingElse: true, noCapability: false });
  });
});

describe("confFromFile", () => {
  test("a file that cannot be opened", async () => {
    await assert.rejects(confFromFile("/tmp/nope/not-here"), (e: unknown) => {
      assert.ok((e as Error).message.startsWith("error reading /tmp/nope/not-here: open /tmp/nope/not-here"), (e as Error).message);
      assert.equal((e as Error).message, "error reading /tmp/nope/not-here: open /tmp/nope/not-here: no such file or directory");
      return true;
    });
  });

  test("a file without 'type'", async () => {
    const file = write(tempDir(), "x.conf", `{ "name": "some-plugin", "some-key": "some-value" }`);
    await rejectsWith(confFromFile(file), "error parsing configuration: missing 'type'");
  });

  test("the same from bytes", () => {
    assert.throws(() => parsePluginConfig(`{ "name": "some-plugin", "some-key": "some-value" }`), {
      message: "error parsing configuration: missing 'type'",
    });
  });
});

describe("loadConfList (conflists first)", () => {
  let dir: string;
  const listText = `{
  "name": "some-network",
  "cniVersion": "0.2.0",
  "disableCheck": true,
  "plugins": [
    {
      "type": "host-local",
      "subnet": "10.0.0.1/24"
    },
    {
      "type": "bridge",
      "mtu": 1400
    },
    {
      "type": "port-forwarding",
      "ports": {"20.0.0.1:8080": "80"}
    }
  ]
}`;
  beforeEach(() => {
    dir = tempDir();
    write(dir, "50-whatever.conflist", listText);
  });

  test("loads the list", async () => {
    const list = await loadConfList(dir, "some-network");
    assert.equal(list.name, "some-network");
    assert.equal(list.cniVersion, "0.2.0");
    assert.equal(list.disableCheck, true);
    assert.equal(list.disableGC, false);
    assert.equal(list.loadOnlyInlinedPlugins, false);
    assert.equal(list.bytes.toString(), listText);
    assert.deepEqual(
      list.plugins.map((p) => p.network.type),
      ["host-local", "bridge", "port-forwarding"],
    );
    assert.deepEqual(
      list.plugins.map((p) => p.bytes.toString()),
      [`{"subnet":"10.0.0.1/24","type":"host-local"}`, `{"mtu":1400,"type":"bridge"}`, `{"ports":{"20.0.0.1:8080":"80"},"type":"port-forwarding"}`],
    );
  });

  test("a conflist wins over a .conf of the same name; the .conf is the fallback", async () => {
    write(dir, "49-whatever.conf", `{ "name": "some-network", "cniVersion": "0.2.0", "type": "bridge" }`);
    assert.equal((await loadConfList(dir, "some-network")).plugins.length, 3);
    fs.rmSync(path.join(dir, "50-whatever.conflist"));
    const list = await loadConfList(dir, "some-network");
    assert.equal(list.plugins.length, 1);
    assert.equal(list.plugins[0]?.network.type, "bridge");
    assert.equal(list.name, "some-network");
    assert.equal(list.cniVersion, "0.2.0");
  });

  test("a missing directory", async () => {
    const missing = path.join(dir, "nope");
    await assert.rejects(loadConfList(missing, "some-network"), (e: unknown) => {
      assert.ok(e instanceof NoConfigsFoundError);
      assert.equal(e.message, `no net configurations found in ${missing}`);
      return true;
    });
  });

  test("no network of that name (conflists exist, no single configs)", async () => {
    await assert.rejects(loadConfList(dir, "some-other-network"), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.message, `no net configuration with name "some-other-network" in ${dir}`);
      assert.equal(e.dir, dir);
      assert.equal(e.networkName, "some-other-network");
      return true;
    });
  });

  test("no network of that name (single configs exist too)", async () => {
    write(dir, "60-other.conf", `{ "name": "other", "type": "bridge" }`);
    await assert.rejects(loadConfList(dir, "some-other-network"), NotFoundError);
  });

  test("a malformed conflist stops the search", async () => {
    write(dir, "00-bad.conflist", "{");
    await rejectsWith(loadConfList(dir, "some-plugin"), "error parsing configuration list: unexpected end of JSON input");
  });

  test("a malformed conflist stops the search even for a network found later", async () => {
    write(dir, "00-bad.conflist", "{");
    await rejectsWith(loadConfList(dir, "some-network"), "error parsing configuration list: unexpected end of JSON input");
  });

  test("a conflist in a nested sub-directory is not found", async () => {
    write(
      dir,
      "subdir1/subdir2/90-deep.conflist",
      `{
  "name": "deep",
  "cniVersion": "0.2.0",
  "plugins": [
    {
      "type": "host-local",
      "subnet": "10.0.0.1/24"
    },
  ]
}`,
    );
    await assert.rejects(loadConfList(dir, "deep"), (e: unknown) => {
      assert.ok((e as Error).message.startsWith("no net configuration with name"));
      return true;
    });
  });

  describe("disableCheck as a string", () => {
    const withDisableCheck = (value: string) => `{
  "name": "some-network",
  "cniVersion": "0.4.0",
  "disableCheck": "${value}",
  "plugins": [{ "type": "host-local", "subnet": "10.0.0.1/24" }]
}`;

    test("'true'", async () => {
      write(dir, "50-whatever.conflist", withDisableCheck("true"));
      assert.equal((await loadConfList(dir, "some-network")).disableCheck, true);
    });

    test("'false'", async () => {
      write(dir, "50-whatever.conflist", withDisableCheck("false"));
      assert.equal((await loadConfList(dir, "some-network")).disableCheck, false);
    });

    test("'TRUE' (case-insensitive)", async () => {
      write(dir, "50-whatever.conflist", withDisableCheck("TRUE"));
      assert.equal((await loadConfList(dir, "some-network")).disableCheck, true);
    });

    test("anything else", async () => {
      write(dir, "50-whatever.conflist", withDisableCheck("adsfasdfasf"));
      await rejectsWith(loadConfList(dir, "some-network"), `error parsing configuration list: invalid value "adsfasdfasf" for disableCheck`);
    });
  });

  describe("loadOnlyInlinedPlugins", () => {
    const subPlugin = `{
      "type": "bro-check-out-my-plugin",
      "subnet": "10.0.0.1/24"
    }`;
    const list = (extra: string, plugins = true) => `{
  "name": "some-network",
  "cniVersion": "0.4.0"${extra}${
    plugins
      ? `,
  "plugins": [{ "type": "host-local", "subnet": "10.0.0.1/24" }]`
      : ""
  }
}`;

    test("true: sub-directory plugins are ignored", async () => {
      write(dir, "50-whatever.conflist", list(`, "loadOnlyInlinedPlugins": true`));
      write(dir, "some-network/funky-second-plugin.conf", subPlugin);
      const l = await loadConfList(dir, "some-network");
      assert.equal(l.loadOnlyInlinedPlugins, true);
      assert.deepEqual(
        l.plugins.map((p) => p.network.type),
        ["host-local"],
      );
    });

    test("absent: false", async () => {
      write(dir, "50-whatever.conflist", list(""));
      assert.equal((await loadConfList(dir, "some-network")).loadOnlyInlinedPlugins, false);
    });

    test("an unknown value", async () => {
      write(dir, "50-whatever.conflist", list(`, "loadOnlyInlinedPlugins": "sphagnum"`));
      await rejectsWith(loadConfList(dir, "some-network"), `error parsing configuration list: invalid value "sphagnum" for loadOnlyInlinedPlugins`);
    });

    test("true without plugins", async () => {
      write(dir, "50-whatever.conflist", list(`, "loadOnlyInlinedPlugins": true`, false));
      await rejectsWith(
        loadConfList(dir, "some-network"),
        "error parsing configuration list: `loadOnlyInlinedPlugins` is true, and no 'plugins' key",
      );
    });

    test("false without plugins takes the sub-directory's", async () => {
      write(dir, "50-whatever.conflist", list(`, "loadOnlyInlinedPlugins": false`, false));
      write(dir, "some-network/funky-second-plugin.conf", subPlugin);
      const l = await loadConfList(dir, "some-network");
      assert.equal(l.loadOnlyInlinedPlugins, false);
      assert.deepEqual(
        l.plugins.map((p) => p.network.type),
        ["bro-check-out-my-plugin"],
      );
      assert.equal(l.plugins[0]?.bytes.toString(), subPlugin, "a sub-directory plugin keeps its file bytes");
    });

    test("no plugins and no sub-directory", async () => {
      write(dir, "50-whatever.conflist", list("", false));
      await rejectsWith(loadConfList(dir, "some-network"), "no plugin configs found");
    });

    test("inline plugins and no sub-directory", async () => {
      write(dir, "50-whatever.conflist", list(""));
      assert.equal((await loadConfList(dir, "some-network")).plugins.length, 1);
    });

    test("inline plugins and an empty sub-directory", async () => {
      write(dir, "50-whatever.conflist", list(""));
      fs.mkdirSync(path.join(dir, "some-network"));
      assert.equal((await loadConfList(dir, "some-network")).plugins.length, 1);
    });

    test("inline plugins and sub-directory plugins are merged, inline first, files sorted", async () => {
      write(dir, "50-whatever.conflist", list(""));
      write(dir, "some-network/funky-second-plugin.conf", subPlugin);
      write(dir, "some-network/a-first.conf", `{ "type": "a-first" }`);
      write(dir, "some-network/ignored.json", `{ "type": "ignored" }`);
      const l = await loadConfList(dir, "some-network");
      assert.equal(l.loadOnlyInlinedPlugins, false);
      assert.deepEqual(
        l.plugins.map((p) => p.network.type),
        ["host-local", "a-first", "bro-check-out-my-plugin"],
      );
    });

    test("a malformed sub-directory plugin is an error", async () => {
      write(dir, "50-whatever.conflist", list(""));
      write(dir, "some-network/bad.conf", `{ "name": "x" }`);
      await rejectsWith(loadConfList(dir, "some-network"), "error parsing configuration: missing 'type'");
    });
  });

  test("a conflist without plugins aborts the search even for another network", async () => {
    write(dir, "00-empty.conflist", `{ "name": "empty", "cniVersion": "0.4.0" }`);
    await rejectsWith(loadConfList(dir, "some-network"), "no plugin configs found");
  });
});

describe("confListFromFile / pluginConfsFromDir", () => {
  test("a file that cannot be opened", async () => {
    await assert.rejects(confListFromFile("/tmp/nope/not-here"), (e: unknown) => {
      assert.ok((e as Error).message.startsWith("error reading /tmp/nope/not-here: open /tmp/nope/not-here"));
      return true;
    });
  });

  test("pluginConfsFromDir: missing directory is no plugins", async () => {
    assert.deepEqual(await pluginConfsFromDir(tempDir(), "nothing"), []);
  });
});

describe("loadAllNetworks", () => {
  test("every network in file order, bad files reported", async () => {
    const dir = tempDir();
    write(dir, "10-a.conflist", `{ "name": "a", "cniVersion": "1.0.0", "plugins": [{ "type": "bridge" }] }`);
    write(dir, "20-b.conf", `{ "name": "b", "cniVersion": "0.3.1", "type": "ptp" }`);
    write(dir, "30-bad.json", "{");
    const { networks, errors } = await loadAllNetworks(dir);
    assert.deepEqual(
      networks.map((n) => n.list.name),
      ["a", "b"],
    );
    assert.deepEqual(
      errors.map((e) => path.basename(e.file)),
      ["30-bad.json"],
    );
  });
});

describe("injectConf", () => {
  const base = () => parsePluginConfig(`{ "name": "some-plugin", "type": "foobar" }`);

  test("existing bytes that do not decode", () => {
    const conf = { ...base(), bytes: Buffer.from("{ cc cc cc}") };
    assert.throws(
      () => injectConf(conf, { "": null }),
      (e: unknown) => {
        assert.ok((e as Error).message.startsWith("unmarshal existing network bytes"));
        return true;
      },
    );
  });

  test("an empty key", () => {
    assert.throws(
      () => injectConf(base(), { "": null }),
      (e: unknown) => {
        assert.ok((e as Error).message.startsWith("keys cannot be empty"));
        return true;
      },
    );
  });

  test("a nil value", () => {
    assert.throws(() => injectConf(base(), { test: null }), { message: "key 'test' value must not be nil" });
  });

  test("adds a key; keys come out sorted", () => {
    const conf = injectConf(base(), { test: "test" });
    assert.equal(conf.bytes.toString(), `{"name":"some-plugin","test":"test","type":"foobar"}`);
    assert.equal(conf.network.name, "some-plugin");
    assert.equal(conf.network.type, "foobar");
  });

  test("replaces an existing key; re-injecting the same value changes nothing", () => {
    const once = injectConf(base(), { test: "test" });
    assert.equal(injectConf(once, { test: "changedValue" }).bytes.toString(), `{"name":"some-plugin","test":"changedValue","type":"foobar"}`);
    assert.equal(injectConf(once, { test: "test" }).bytes.toString(), `{"name":"some-plugin","test":"test","type":"foobar"}`);
  });

  test("injects typed sub-fields (dns, type)", () => {
    let conf = injectConf(base(), { dns: { nameservers: ["server1", "server2"], domain: "local" } });
    conf = injectConf(conf, { type: "bridge" });
    assert.equal(conf.bytes.toString(), `{"dns":{"domain":"local","nameservers":["server1","server2"]},"name":"some-plugin","type":"bridge"}`);
    assert.equal(conf.network.type, "bridge");
    assert.deepEqual(conf.network.dns, { nameservers: ["server1", "server2"], domain: "local" });
  });
});

describe("conflist version selection", () => {
  const withVersions = (...versions: string[]) =>
    `{"name": "test", "cniVersions": [${versions.map((v) => JSON.stringify(v)).join(",")}], "plugins": [{"type": "foo"}]}`;

  test("the maximum of cniVersions", () => {
    assert.equal(parseConfList(withVersions("1.1.0", "0.4.0", "1.0.0")).cniVersion, "1.1.0");
  });

  test("versions newer than this implementation are skipped", () => {
    assert.equal(parseConfList(withVersions("99.0.0", "1.1.0", "0.4.0", "1.0.0")).cniVersion, "1.1.0");
  });

  test("an invalid version is an error", () => {
    assert.throws(
      () => parseConfList(withVersions("1.1.0", "0.4.0", "1.0.f")),
      (e: unknown) => {
        assert.ok(goText(e).startsWith("error parsing configuration list: invalid cniVersions entry 1.0.f at index 2: "), goText(e));
        return true;
      },
    );
  });

  test("cniVersion alone is taken verbatim", () => {
    assert.equal(parseConfList(`{"name": "test", "cniVersion": "1.2.3", "plugins": [{"type": "foo"}]}`).cniVersion, "1.2.3");
  });

  test("cniVersion and cniVersions are merged", () => {
    assert.equal(
      parseConfList(`{"name": "test", "cniVersion": "1.0.0", "cniVersions": ["0.1.0", "0.4.0"], "plugins": [{"type": "foo"}]}`).cniVersion,
      "1.0.0",
    );
  });

  test("an empty cniVersions and no cniVersion", () => {
    assert.equal(parseConfList(`{"name": "test", "cniVersions": [], "plugins": [{"type": "foo"}]}`).cniVersion, "");
  });
});

describe("confListFromConf", () => {
  test("up-converts a single config to a one-plugin list", () => {
    const conf = parsePluginConfig(`{"name":"some-plugin","cniVersion":"0.3.1", "type":"foobar"}`);
    const list = confListFromConf(conf);
    assert.equal(list.name, "some-plugin");
    assert.equal(list.cniVersion, "0.3.1");
    assert.equal(list.disableCheck, false);
    assert.equal(list.plugins.length, 1);
    assert.deepEqual(list.plugins[0]?.network, conf.network);
    const again = parseConfList(list.bytes);
    assert.equal(again.name, list.name);
    assert.equal(again.cniVersion, list.cniVersion);
    assert.deepEqual(
      again.plugins.map((p) => p.network),
      list.plugins.map((p) => p.network),
    );
    assert.equal(
      list.bytes.toString(),
      `{"cniVersion":"0.3.1","name":"some-plugin","plugins":[{"cniVersion":"0.3.1","name":"some-plugin","type":"foobar"}]}`,
    );
  });
});
