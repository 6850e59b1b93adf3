import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { marshalJson } from "#go-json/json.js";
import { RawExec } from "#invoke/exec.js";
import { type NetworkConfigList, type PluginConfig, parseConfList, parsePluginConfig } from "#spec/config.js";
import { CniError, unwrapCniError, WrappedError } from "#spec/errors.js";
import { marshalResult, type Result020, toCurrentResult } from "#spec/result/index.js";
import { installEnvRecorder, recordedEnv, resetRecorder } from "#testing/env-recorder.js";
import { TEST_BIN } from "#testing/harness.js";
import { crashKind, nullResults } from "#testing/null-results.js";
import { type NoopCmdArgs, type NoopDebug, readCommandLog, readDebug, stdinOf, writeDebug } from "#testing/plugins/noop-debug.js";
import { useTempDirs } from "#testing/temp.js";
import { CheckNotSupportedError, CNIConfig, type RuntimeConf } from "./api.js";
import { cacheFilePath } from "./cache.js";

/** dist/test-bin: the noop, sleep and legacy010 test plugins. */
const BIN = TEST_BIN;

const tempDir = useTempDirs();

/** Plugin stderr goes nowhere (noop logs to stderr when it has no debug file). */
const quietExec = () => new RawExec(new Writable({ write: (_chunk, _encoding, done) => done() }));

const parse = (s: string | Buffer): unknown => JSON.parse(s.toString());
/** The stdin the noop plugin recorded, decoded as JSON. */
const stdinJson = (debug: NoopDebug): Record<string, unknown> => JSON.parse(stdinOf(debug.CmdArgs)) as Record<string, unknown>;
/** The recorded call arguments without StdinData. */
function argsOf(cmdArgs: NoopCmdArgs | undefined): Omit<NoopCmdArgs, "StdinData"> {
  assert.ok(cmdArgs, "the plugin was not called");
  const { StdinData: _ignored, ...rest } = cmdArgs;
  return rest;
}
/** Asserts a rejection whose message contains `text`. */
async function rejectsContaining(p: Promise<unknown>, text: string): Promise<Error> {
  let caught: Error | undefined;
  await assert.rejects(p, (e: unknown) => {
    caught = e as Error;
    assert.ok(caught.message.includes(text), `"${caught.message}" does not contain "${text}"`);
    return true;
  });
  return caught!;
}
/** The cache file of an attachment. */
const cacheFileOf = (cacheDir: string, network: string, rt: RuntimeConf) =>
  cacheFilePath(cacheDir, { networkName: network, containerID: rt.containerID, ifName: rt.ifName });
function writeCache(cacheDir: string, network: string, rt: RuntimeConf, text: string): string {
  const file = cacheFileOf(cacheDir, network, rt);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
}

/** Tests of a suite run concurrently: each builds its own fixture (plugins are separate processes). */
const PARALLEL = { concurrency: true };

const PORT_MAPPINGS = [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }];
const IP_RESULT_110 = `{"cniVersion": "1.1.0", "ips":[{"address": "10.1.2.3/24"}]}`;

describe("capabilities", PARALLEL, () => {
  /** A fresh fixture per test (tests run concurrently). */
  function setup() {
    const cacheDir = tempDir();
    const debugFile = path.join(tempDir(), "debug.json");
    writeDebug(debugFile, { ReportResult: `{"cniVersion": "1.1.0", "ips": [{"address": "10.1.2.3/24"}], "dns": {}}` });
    const net = parsePluginConfig(`{
      "type": "noop", "name": "apitest", "cniVersion": "1.1.0",
      "capabilities": { "portMappings": true, "somethingElse": true, "noCapability": false }
    }`);
    const cni = new CNIConfig({ path: [BIN], cacheDir, exec: quietExec() });
    const rt: RuntimeConf = {
      containerID: "some-container-id",
      netNS: "/some/netns/path",
      ifName: "some-eth0",
      args: [["DEBUG", debugFile]],
      capabilityArgs: { portMappings: PORT_MAPPINGS, somethingElse: ["foobar", "baz"], noCapability: true, notAdded: [true, false] },
    };
    return { cacheDir, debugFile, cni, net, rt };
  }

  test("runtimeConfig holds exactly the enabled capabilities the runtime has arguments for", async () => {
    const { debugFile, cni, net, rt } = setup();
    await cni.addNetwork(net, rt);
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "ADD");
    assert.deepEqual(stdinJson(debug)["runtimeConfig"], { portMappings: PORT_MAPPINGS, somethingElse: ["foobar", "baz"] });
  });

  test("no runtimeConfig when no capability matches", async () => {
    const { debugFile, cni, net, rt } = setup();
    rt.capabilityArgs = { portMappings22: PORT_MAPPINGS, somethingElse22: ["foobar", "baz"] };
    await cni.addNetwork(net, rt);
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "ADD");
    assert.equal("runtimeConfig" in stdinJson(debug), false);
  });

  test("a static runtimeConfig passes through when nothing is injected, and is replaced otherwise", async () => {
    const { debugFile, cni, rt } = setup();
    const withStatic = parsePluginConfig(`{"type": "noop", "name": "apitest", "cniVersion": "1.1.0",
      "capabilities": {"portMappings": true}, "runtimeConfig": {"static": 1}}`);
    rt.capabilityArgs = {};
    await cni.addNetwork(withStatic, rt);
    assert.deepEqual(stdinJson(readDebug(debugFile))["runtimeConfig"], { static: 1 });
    rt.capabilityArgs = { portMappings: PORT_MAPPINGS };
    rt.ifName = "other0";
    await cni.addNetwork(withStatic, rt);
    assert.deepEqual(stdinJson(readDebug(debugFile))["runtimeConfig"], { portMappings: PORT_MAPPINGS });
  });

  test("validateNetwork reports the enabled capabilities", async () => {
    const { cni, net } = setup();
    assert.deepEqual((await cni.validateNetwork(net)).sort(), ["portMappings", "somethingElse"]);
  });
});

describe("a single plugin", PARALLEL, () => {
  const pluginConfig = `{
    "type": "noop",
    "name": "apitest",
    "some-key": "some-value",
    "cniVersion": "1.1.0",
    "capabilities": { "portMappings": true }
  }`;
  /** The stdin libcni must send (checklist 3.6), as JSON. */
  const expectedStdin = {
    capabilities: { portMappings: true },
    cniVersion: "1.1.0",
    name: "apitest",
    runtimeConfig: { portMappings: PORT_MAPPINGS },
    "some-key": "some-value",
    type: "noop",
  };

  /** A fresh fixture per test (tests run concurrently). */
  function setup() {
    const cacheDir = tempDir();
    const debugFile = path.join(tempDir(), "debug.json");
    writeDebug(debugFile, { ReportResult: `{"cniVersion": "1.1.0", "ips": [{"address": "10.1.2.3/24"}], "dns": {}}` });
    const cni = new CNIConfig({ path: [BIN], cacheDir, exec: quietExec() });
    const net = parsePluginConfig(pluginConfig);
    const rt: RuntimeConf = {
      containerID: "some-container-id",
      netNS: "/some/netns/path",
      ifName: "some-eth0",
      args: [["DEBUG", debugFile]],
      capabilityArgs: { portMappings: PORT_MAPPINGS },
    };
    const expectedArgs: Omit<NoopCmdArgs, "StdinData"> = {
      ContainerID: "some-container-id",
      Netns: "/some/netns/path",
      IfName: "some-eth0",
      Args: `DEBUG=${debugFile}`,
      Path: BIN,
      NetnsOverride: "",
    };
    return { cacheDir, debugFile, cni, net, rt, expectedArgs };
  }

  describe("addNetwork", () => {
    test("runs ADD with the request of checklist 3.6 and caches the attachment", async () => {
      const { debugFile, cni, net, rt, expectedArgs } = setup();
      const result = await cni.addNetwork(net, rt);
      assert.equal(marshalResult(result), `{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}`);

      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "ADD");
      assert.deepEqual(argsOf(debug.CmdArgs), expectedArgs);
      // The exact stdin bytes of Go's test, compared as JSON (Go keeps its portMapping struct order)...
      assert.deepEqual(stdinJson(debug), expectedStdin);
      assert.ok(stdinOf(debug.CmdArgs).includes(`"portMappings":`));
      // ...and, byte for byte, compact with every key sorted (a re-marshalled generic map).
      assert.equal(
        stdinOf(debug.CmdArgs),
        `{"capabilities":{"portMappings":true},"cniVersion":"1.1.0","name":"apitest","runtimeConfig":{"portMappings":[{"containerPort":80,"hostPort":8080,"protocol":"tcp"}]},"some-key":"some-value","type":"noop"}`,
      );

      const cached = await cni.getNetworkCachedConfig(net, rt);
      assert.ok(cached);
      assert.equal(cached.config.toString(), pluginConfig);
      assert.deepEqual(cached.rt.args, rt.args);
      assert.deepEqual(cached.rt.capabilityArgs, rt.capabilityArgs);

      const cachedResult = await cni.getNetworkCachedResult(net, rt);
      assert.ok(cachedResult);
      assert.deepEqual(parse(marshalResult(toCurrentResult(cachedResult))), parse(marshalResult(toCurrentResult(result))));

      for (const containerID of ["", "some-container-id"]) {
        const attachments = await cni.getCachedAttachments(containerID);
        assert.equal(attachments.length, 1);
        const a = attachments[0]!;
        assert.equal(a.containerID, "some-container-id");
        assert.equal(a.networkName, "apitest");
        assert.equal(a.netns, "/some/netns/path");
        assert.equal(a.ifName, "some-eth0");
        assert.equal(a.config.toString(), pluginConfig);
        assert.deepEqual(a.cniArgs, rt.args);
        assert.deepEqual(a.capabilityArgs, rt.capabilityArgs);
      }
      assert.deepEqual(await cni.getCachedAttachments("other-container"), []);
    });

    test("the cache file is Go's cniCacheV1 format, field for field", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      await cni.addNetwork(net, rt);
      const file = cacheFileOf(cacheDir, "apitest", rt);
      assert.equal(file, path.join(cacheDir, "results", "apitest-some-container-id-some-eth0"));
      const text = fs.readFileSync(file, "utf8");
      assert.equal(
        text,
        `{"kind":"cniCacheV1","containerId":"some-container-id",` +
          `"config":"${Buffer.from(pluginConfig).toString("base64")}",` +
          `"ifName":"some-eth0","networkName":"apitest","netns":"/some/netns/path",` +
          `"cniArgs":[["DEBUG",${JSON.stringify(debugFile)}]],` +
          `"capabilityArgs":{"portMappings":[{"containerPort":80,"hostPort":8080,"protocol":"tcp"}]},` +
          `"result":{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}}`,
      );
      assert.deepEqual(Object.keys(parse(text) as object), [
        "kind",
        "containerId",
        "config",
        "ifName",
        "networkName",
        "netns",
        "cniArgs",
        "capabilityArgs",
        "result",
      ]);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
    });

    test("optional cache fields are left out when empty", async () => {
      const { cacheDir, debugFile, cni, rt } = setup();
      rt.args = undefined;
      rt.capabilityArgs = undefined;
      writeDebug(debugFile, { ReportResult: IP_RESULT_110 });
      const withDebug = parsePluginConfig(`{"type":"noop","name":"apitest","cniVersion":"1.1.0","debugFile":${JSON.stringify(debugFile)}}`);
      await cni.addNetwork(withDebug, rt);
      const cached = parse(fs.readFileSync(cacheFileOf(cacheDir, "apitest", rt))) as object;
      assert.deepEqual(Object.keys(cached), ["kind", "containerId", "config", "ifName", "networkName", "netns", "result"]);
    });

    test("a plugin that cannot be found", async () => {
      const { cni, net, rt } = setup();
      net.network.type = "does-not-exist";
      await rejectsContaining(cni.addNetwork(net, rt), `failed to find plugin "does-not-exist"`);
    });

    test("a plugin error is returned as is", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      writeDebug(debugFile, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.addNetwork(net, rt), (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.message, "plugin error: banana");
        return true;
      });
      assert.equal(fs.existsSync(cacheFileOf(cacheDir, "apitest", rt)), false);
    });

    test("a cache that cannot be written fails the ADD", async () => {
      const { cacheDir, cni, net, rt } = setup();
      fs.writeFileSync(path.join(cacheDir, "results"), "afdsasdfasdf");
      await rejectsContaining(cni.addNetwork(net, rt), `failed to set network "apitest" cached result: `);
    });

    test("names are validated (addNetwork only)", async () => {
      const { cni, net, rt } = setup();
      rt.containerID = "some-%%container-id";
      await assert.rejects(cni.addNetwork(net, rt), { code: 4, msg: "invalid characters in containerID", details: "some-%%container-id" });
    });
  });

  describe("checkNetwork", () => {
    test("runs CHECK with the cached result as prevResult", async () => {
      const { cacheDir, debugFile, cni, net, rt, expectedArgs } = setup();
      const cachedJson = `{"cniVersion": "1.1.0", "ips": [{"address": "10.1.2.3/24"}]}`;
      writeCache(cacheDir, "apitest", rt, cachedJson);
      await cni.checkNetwork(net, rt);
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "CHECK");
      assert.ok(stdinOf(debug.CmdArgs).includes(`"portMappings":`));
      assert.deepEqual(stdinJson(debug), { ...expectedStdin, prevResult: parse(cachedJson) });
      assert.deepEqual(argsOf(debug.CmdArgs), expectedArgs);
    });

    test("without a cached result, CHECK still runs, without prevResult", async () => {
      const { debugFile, cni, net, rt } = setup();
      await cni.checkNetwork(net, rt);
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "CHECK");
      assert.deepEqual(stdinJson(debug), expectedStdin);
    });

    test("a plugin that cannot be found", async () => {
      const { cni, net, rt } = setup();
      net.network.type = "does-not-exist";
      await rejectsContaining(cni.checkNetwork(net, rt), `failed to find plugin "does-not-exist"`);
    });

    test("a plugin error is returned as is", async () => {
      const { debugFile, cni, net, rt } = setup();
      writeDebug(debugFile, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.checkNetwork(net, rt), { message: "plugin error: banana" });
    });

    test("a config older than 0.4.0 cannot CHECK; the plugin is not run", async () => {
      const { debugFile, cni, rt } = setup();
      const old = parsePluginConfig(`{"type": "noop", "name": "apitest", "cniVersion": "0.3.1"}`);
      await assert.rejects(cni.checkNetwork(old, rt), (e: unknown) => {
        assert.ok(e instanceof CheckNotSupportedError);
        assert.equal((e as Error).message, `configuration version "0.3.1" does not support the CHECK command`);
        return true;
      });
      assert.equal(readDebug(debugFile).Command, undefined);
    });

    test("a cache holding only a result: prevResult, and no cache fields leak into stdin", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      writeCache(cacheDir, "apitest", rt, `{"cniVersion": "1.1.0", "ips": [{"address": "10.1.2.3/24"}], "dns": {}}`);
      await cni.checkNetwork(net, rt);
      const stdin = stdinOf(readDebug(debugFile).CmdArgs);
      assert.ok(stdin.includes(`"prevResult":`));
      assert.ok(!stdin.includes(`"config":`));
      assert.ok(!stdin.includes(`"kind":`));
    });

    test("a 0.4.0 config gets a 0.4.0 cached result", async () => {
      const { cacheDir, debugFile, cni, rt } = setup();
      const ipResult = `{"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`;
      const net040 = parsePluginConfig(`{"type": "noop", "name": "apitest", "cniVersion": "0.4.0",
        "capabilities": {"portMappings": true, "somethingElse": true, "noCapability": false}}`);
      writeCache(cacheDir, "apitest", rt, ipResult);
      writeDebug(debugFile, { ReportResult: ipResult });
      await cni.checkNetwork(net040, rt);
      const stdin = stdinJson(readDebug(debugFile));
      assert.deepEqual(stdin["prevResult"], parse(ipResult));
    });

    test("an invalid cached result", async () => {
      const { cacheDir, cni, net, rt } = setup();
      writeCache(cacheDir, "apitest", rt, "adfadsfasdfasfdsafaf");
      // Go's words, then what the file is (docs/state.md).
      await assert.rejects(cni.checkNetwork(net, rt), {
        message:
          `failed to get network "apitest" cached result: decoding version from network config: invalid character 'a' looking for beginning of value ` +
          `(the cache file ${path.join(cacheDir, "results", "apitest-some-container-id-some-eth0")} is torn: not JSON: left by a crash or a power loss?)`,
      });
    });

    test("a cached result of another version is converted", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      writeCache(cacheDir, "apitest", rt, `{"cniVersion": "0.3.1", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`);
      await cni.checkNetwork(net, rt);
      assert.deepEqual(stdinJson(readDebug(debugFile))["prevResult"], { cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24" }] });
    });

    test("a cached result of an unknown version", async () => {
      const { cacheDir, cni, net, rt } = setup();
      writeCache(cacheDir, "apitest", rt, `{"cniVersion": "0.4567.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`);
      await assert.rejects(cni.checkNetwork(net, rt), {
        message: `failed to get network "apitest" cached result: unsupported CNI result version "0.4567.0"`,
      });
    });
  });

  describe("delNetwork", () => {
    test("runs DEL with the cached result, then forgets the attachment", async () => {
      const { cacheDir, debugFile, cni, net, rt, expectedArgs } = setup();
      const cachedJson = `{"cniVersion": "1.1.0", "ips": [{"address": "10.1.2.3/24"}]}`;
      writeCache(cacheDir, "apitest", rt, cachedJson);
      await cni.delNetwork(net, rt);
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "DEL");
      assert.ok(stdinOf(debug.CmdArgs).includes(`"portMappings":`));
      assert.deepEqual(stdinJson(debug), { ...expectedStdin, prevResult: parse(cachedJson) });
      assert.deepEqual(argsOf(debug.CmdArgs), expectedArgs);

      assert.equal(await cni.getNetworkCachedResult(net, rt), undefined);
      assert.equal(await cni.getNetworkCachedConfig(net, rt), undefined);
      assert.deepEqual(await cni.getCachedAttachments(""), []);
      assert.deepEqual(await cni.getCachedAttachments("some-container-id"), []);
    });

    test("ADD then DEL round trip removes the cache", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      await cni.addNetwork(net, rt);
      assert.equal((await cni.getCachedAttachments("")).length, 1);
      await cni.delNetwork(net, rt);
      assert.equal(fs.existsSync(cacheFileOf(cacheDir, "apitest", rt)), false);
      assert.deepEqual(stdinJson(readDebug(debugFile))["prevResult"], { cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24" }] });
    });

    test("a plugin that cannot be found", async () => {
      const { cni, net, rt } = setup();
      net.network.type = "does-not-exist";
      await rejectsContaining(cni.delNetwork(net, rt), `failed to find plugin "does-not-exist"`);
    });

    test("a plugin error is returned as is, and the cache is kept", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      const file = writeCache(cacheDir, "apitest", rt, IP_RESULT_110);
      writeDebug(debugFile, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.delNetwork(net, rt), { message: "plugin error: banana" });
      assert.equal(fs.existsSync(file), true);
    });

    test("DEL twice: the cache is gone after the first, the second succeeds", async () => {
      const { cacheDir, cni, net, rt } = setup();
      const file = writeCache(cacheDir, "apitest", rt, `{"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`);
      await cni.delNetwork(net, rt);
      assert.equal(fs.existsSync(file), false);
      await cni.delNetwork(net, rt);
    });

    test("a config older than 0.4.0 gets no prevResult", async () => {
      const { cacheDir, debugFile, cni, rt } = setup();
      writeCache(cacheDir, "apitest", rt, `{"cniVersion": "0.3.1", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`);
      const old = parsePluginConfig(`{"type": "noop", "name": "apitest", "cniVersion": "0.3.1"}`);
      await cni.delNetwork(old, rt);
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "DEL");
      assert.ok(!stdinOf(debug.CmdArgs).includes(`"prevResult":`));
      assert.equal(fs.existsSync(cacheFileOf(cacheDir, "apitest", rt)), false, "the cache is removed for old versions too");
    });

    test("a 0.4.0 cached result is passed", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      writeCache(cacheDir, "apitest", rt, `{"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`);
      await cni.delNetwork(net, rt);
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "DEL");
      assert.ok(stdinOf(debug.CmdArgs).includes(`"prevResult":`));
    });

    for (const [label, text] of [
      ["invalid JSON", "adfadsfasdfasfdsafaf"],
      ["a convertible other version", `{"cniVersion": "0.3.1", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`],
      ["an unconvertible version", `{"cniVersion": "0.4567.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`],
    ] as const) {
      test(`a cached result with ${label} does not block DEL`, async () => {
        const { cacheDir, cni, net, rt } = setup();
        const file = writeCache(cacheDir, "apitest", rt, text);
        await cni.delNetwork(net, rt);
        assert.equal(fs.existsSync(file), false);
      });
    }

    // Go's libcni crashes converting these (containernetworking/cni PRs #1191, #1192); spec PR #1156: DEL is best
    // effort, each plugin still runs, without the prevResult that cannot be read.
    test("cached results with null entries (cni#1191, cni#1192): CHECK fails with the cache named or runs, DEL runs and forgets", async () => {
      for (const version of ["0.4.0", "1.0.0", "1.1.0"]) {
        for (const { label, result } of nullResults(version)) {
          const { cacheDir, debugFile, cni, rt } = setup();
          const net = parsePluginConfig(pluginConfig.replace('"1.1.0"', `"${version}"`));
          const what = `${label} at ${version}`;
          const file = writeCache(cacheDir, "apitest", rt, JSON.stringify(result));
          try {
            const cached = await cni.getNetworkCachedResult(net, rt);
            if (cached) toCurrentResult(cached);
          } catch (e) {
            assert.equal(crashKind(e), undefined, what);
          }
          await cni.checkNetwork(net, rt).catch((e: unknown) => {
            assert.ok(e instanceof WrappedError, `${what}: ${String(e)}`);
            assert.match(e.message, /^failed to get network "apitest" cached result: /, what);
          });
          await cni.delNetwork(net, rt);
          const debug = readDebug(debugFile);
          assert.equal(debug.Command, "DEL", what);
          const prev = stdinJson(debug)["prevResult"];
          assert.ok(prev === undefined || !JSON.stringify(prev).includes("null"), `${what}: prevResult ${JSON.stringify(prev)}`);
          assert.equal(fs.existsSync(file), false, what);
        }
      }
    });

    test("an empty cached result ({}) does not block DEL (spec PR #1156)", async () => {
      const { cacheDir, debugFile, cni, net, rt } = setup();
      const file = writeCache(cacheDir, "apitest", rt, "{}");
      await cni.delNetwork(net, rt);
      assert.equal(readDebug(debugFile).Command, "DEL");
      assert.equal(fs.existsSync(file), false);
    });
  });

  describe("getVersionInfo", () => {
    test("runs VERSION", async () => {
      const { cni } = setup();
      assert.deepEqual((await cni.getVersionInfo("noop")).supportedVersions, [
        "0.-42.0",
        "0.1.0",
        "0.2.0",
        "0.3.0",
        "0.3.1",
        "0.4.0",
        "1.0.0",
        "1.1.0",
      ]);
    });

    test("a plugin that cannot be found", async () => {
      const { cni } = setup();
      await rejectsContaining(cni.getVersionInfo("does-not-exist"), `failed to find plugin "does-not-exist"`);
    });
  });

  describe("validateNetwork", () => {
    test("a good configuration", async () => {
      const { cni, net } = setup();
      assert.deepEqual(await cni.validateNetwork(net), ["portMappings"]);
    });

    test("a plugin that does not exist", async () => {
      const { cni, net } = setup();
      net.network.type = "nope";
      await assert.rejects(cni.validateNetwork(net), { message: `failed to find plugin "nope" in path [${BIN}]` });
    });

    test("an unsupported version", async () => {
      const { cni, net } = setup();
      net.network.cniVersion = "broken";
      await assert.rejects(cni.validateNetwork(net), { message: `plugin noop does not support config version "broken"` });
    });

    test("no version means 0.1.0", async () => {
      const { cni, net } = setup();
      net.network.cniVersion = "";
      assert.deepEqual(await cni.validateNetwork(net), ["portMappings"]);
      // A plugin that speaks only 0.1.0 tells "no version" (0.1.0: valid) from any other.
      const legacy = parsePluginConfig(`{ "name": "old-thing", "type": "legacy010" }`);
      assert.deepEqual(await cni.validateNetwork(legacy), []);
      legacy.network.cniVersion = "0.2.0";
      await assert.rejects(cni.validateNetwork(legacy), { message: `plugin legacy010 does not support config version "0.2.0"` });
    });
  });
});

/** One plugin of the list fixture: its config text, debug file and command log, and the stdin expected. */
interface PluginInfo {
  debugFile: string;
  commandLog: string;
  config: string;
  expectedStdin: Record<string, unknown>;
}

function newPluginInfo(
  cniVersion: string,
  configValue: string,
  prevResult: string,
  result: string,
  capabilityArgs: Record<string, unknown>,
  capabilities: string[],
): PluginInfo {
  const dir = tempDir();
  const debugFile = path.join(dir, "debug.json");
  const commandLog = path.join(dir, "commands.json");
  writeDebug(debugFile, { ReportResult: result });
  let config = `{"type": "noop", "some-key": "${configValue}"`;
  if (prevResult) config += `, "prevResult": ${prevResult}`;
  config += `, "debugFile": ${JSON.stringify(debugFile)}, "commandLog": ${JSON.stringify(commandLog)}`;
  if (capabilities.length > 0) config += `, "capabilities": {${capabilities.map((c) => `"${c}": true`).join(", ")}}`;
  config += "}";
  const expectedStdin: Record<string, unknown> = { ...(JSON.parse(config) as Record<string, unknown>), name: "some-list", cniVersion };
  const rc = Object.fromEntries(Object.entries(capabilityArgs).filter(([k]) => capabilities.includes(k)));
  if (Object.keys(rc).length > 0) expectedStdin["runtimeConfig"] = rc;
  return { debugFile, commandLog, config, expectedStdin };
}

function makePluginList(cniVersion: string, ipResult: string, capabilityArgs: Record<string, unknown>) {
  const plugins = [
    newPluginInfo(cniVersion, "some-value", "", ipResult, capabilityArgs, ["portMappings", "otherCapability"]),
    newPluginInfo(cniVersion, "some-other-value", ipResult, "PASSTHROUGH", capabilityArgs, ["otherCapability"]),
    newPluginInfo(cniVersion, "yet-another-value", ipResult, "INJECT-DNS", capabilityArgs, []),
  ];
  const text = `{
"name": "some-list",
"cniVersion": "${cniVersion}",
"plugins": [
${plugins.map((p) => p.config).join(",\n")}
]
}`;
  return { list: parseConfList(text), plugins };
}

describe("a plugin list", PARALLEL, () => {
  const capabilityArgs = { portMappings: PORT_MAPPINGS, otherCapability: 33 };

  /** A fresh fixture per test (tests run concurrently): the list fixture in `version`. */
  function setup(version = "1.1.0", ipResult = IP_RESULT_110) {
    const cacheDir = tempDir();
    const cni = new CNIConfig({ path: [BIN], cacheDir, exec: quietExec() });
    const rt: RuntimeConf = {
      containerID: "some-container-id",
      netNS: "/some/netns/path",
      ifName: "some-eth0",
      args: [["FOO", "BAR"]],
      capabilityArgs,
    };
    const expectedArgs: Omit<NoopCmdArgs, "StdinData"> = {
      ContainerID: "some-container-id",
      Netns: "/some/netns/path",
      IfName: "some-eth0",
      Args: "FOO=BAR",
      Path: BIN,
      NetnsOverride: "",
    };
    const { list, plugins } = makePluginList(version, ipResult, capabilityArgs);
    /** Rewrites a plugin's debug file. */
    const setDebug = (i: number, debug: NoopDebug) => writeDebug(plugins[i]!.debugFile, debug);
    return { cacheDir, cni, rt, expectedArgs, list, plugins, ipResult, setDebug };
  }

  describe("addNetworkList", () => {
    test("runs every plugin with ADD, chaining results", async () => {
      const { cni, rt, expectedArgs, list, plugins } = setup();
      const result = await cni.addNetworkList(list, rt);
      assert.equal(marshalResult(result), `{"cniVersion":"1.1.0","dns":{"nameservers":["1.2.3.4"]},"ips":[{"address":"10.1.2.3/24"}]}`);
      for (const p of plugins) {
        const debug = readDebug(p.debugFile);
        assert.equal(debug.Command, "ADD");
        assert.deepEqual(stdinJson(debug), p.expectedStdin);
        assert.deepEqual(argsOf(debug.CmdArgs), expectedArgs);
      }
    });

    test("caches the final result", async () => {
      const { cni, rt, list } = setup();
      const result = await cni.addNetworkList(list, rt);
      const cached = await cni.getNetworkListCachedResult(list, rt);
      assert.ok(cached);
      assert.deepEqual(parse(marshalResult(toCurrentResult(cached))), parse(marshalResult(toCurrentResult(result))));
    });

    test("caches the list's original bytes and the runtime arguments", async () => {
      const { cni, rt, list } = setup();
      await cni.addNetworkList(list, rt);
      const cached = await cni.getNetworkListCachedConfig(list, rt);
      assert.ok(cached);
      assert.ok(cached.config.equals(list.bytes));
      assert.deepEqual(cached.rt.args, rt.args);
      assert.deepEqual(cached.rt.capabilityArgs, rt.capabilityArgs);
    });

    test("a plugin's prevResult is the previous result in its own version (not converted)", async () => {
      const { cni, rt, list, plugins, setDebug } = setup();
      const r040 = `{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{}}`;
      setDebug(0, { ReportResult: r040 });
      setDebug(1, { ReportResult: IP_RESULT_110 });
      await cni.addNetworkList(list, rt);
      assert.deepEqual(stdinJson(readDebug(plugins[1]!.debugFile))["prevResult"], parse(r040));
    });

    test("a plugin that cannot be found", async () => {
      const { cni, rt, list } = setup();
      list.plugins[1]!.network.type = "does-not-exist";
      await rejectsContaining(cni.addNetworkList(list, rt), `failed to find plugin "does-not-exist"`);
    });

    const invalid: Array<[string, (rt: RuntimeConf, list: NetworkConfigList) => void, number, string, string]> = [
      [
        "container ID",
        (r) => {
          r.containerID = "some-%%container-id";
        },
        4,
        "invalid characters in containerID",
        "some-%%container-id",
      ],
      [
        "network name",
        (_r, l) => {
          l.name = "invalid-%%-name";
        },
        7,
        "invalid characters found in network name",
        "invalid-%%-name",
      ],
      [
        "empty ifname",
        (r) => {
          r.ifName = "";
        },
        4,
        "interface name is empty",
        "",
      ],
      [
        "long ifname",
        (r) => {
          r.ifName = "1234567890123456";
        },
        4,
        "interface name is too long",
        "interface name should be less than 16 characters",
      ],
      [
        "ifname .",
        (r) => {
          r.ifName = ".";
        },
        4,
        "interface name is . or ..",
        "",
      ],
      [
        "ifname ..",
        (r) => {
          r.ifName = "..";
        },
        4,
        "interface name is . or ..",
        "",
      ],
      [
        "ifname with /",
        (r) => {
          r.ifName = "test/test";
        },
        4,
        "interface name contains / or : or whitespace characters",
        "",
      ],
      [
        "ifname with :",
        (r) => {
          r.ifName = "test:test";
        },
        4,
        "interface name contains / or : or whitespace characters",
        "",
      ],
      [
        "ifname with a space",
        (r) => {
          r.ifName = "test test";
        },
        4,
        "interface name contains / or : or whitespace characters",
        "",
      ],
    ];
    for (const [label, mutate, code, msg, details] of invalid) {
      test(`invalid ${label}`, async () => {
        const { cni, rt, list, plugins } = setup();
        mutate(rt, list);
        await assert.rejects(cni.addNetworkList(list, rt), (e: unknown) => {
          assert.ok(e instanceof WrappedError);
          assert.ok(e.message.startsWith(`plugin type="noop" failed (add):`), e.message);
          const inner = unwrapCniError(e);
          assert.deepEqual({ code: inner?.code, msg: inner?.msg, details: inner?.details }, { code, msg, details });
          return true;
        });
        assert.equal(readDebug(plugins[0]!.debugFile).Command, undefined, "no plugin ran");
      });
    }

    test("the second plugin fails: the error is wrapped and nothing is cached", async () => {
      const { cacheDir, cni, rt, list, plugins, setDebug } = setup();
      setDebug(1, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.addNetworkList(list, rt), (e: unknown) => {
        assert.ok(e instanceof WrappedError);
        assert.equal(e.message, `plugin type="noop" failed (add): plugin error: banana`);
        assert.equal(unwrapCniError(e)?.message, "plugin error: banana");
        return true;
      });
      assert.equal(fs.existsSync(cacheFileOf(cacheDir, "some-list", rt)), false);
      assert.equal(readDebug(plugins[2]!.debugFile).Command, undefined, "later plugins are not run");
    });

    test("a plugin with its own name is described by it", async () => {
      const { cni, rt } = setup();
      const named = parseConfList(`{"name":"some-list","cniVersion":"1.1.0","plugins":[{"type":"nope","name":"mine"}]}`);
      await rejectsContaining(cni.addNetworkList(named, rt), `plugin type="nope" name="mine" failed (add): failed to find plugin "nope"`);
    });

    test("a cache that cannot be written fails the ADD", async () => {
      const { cacheDir, cni, rt, list } = setup();
      fs.writeFileSync(path.join(cacheDir, "results"), "afdsasdfasdf");
      await rejectsContaining(cni.addNetworkList(list, rt), `failed to set network "some-list" cached result`);
    });
  });

  describe("checkNetworkList", () => {
    test("runs every plugin with CHECK and the cached result", async () => {
      const { cacheDir, cni, rt, expectedArgs, list, plugins, ipResult } = setup();
      writeCache(cacheDir, "some-list", rt, ipResult);
      await cni.checkNetworkList(list, rt);
      for (const p of plugins) {
        const debug = readDebug(p.debugFile);
        assert.equal(debug.Command, "CHECK");
        assert.deepEqual(stdinJson(debug)["prevResult"], parse(ipResult));
        assert.deepEqual(argsOf(debug.CmdArgs), expectedArgs);
      }
    });

    test("disableCheck: no plugin runs", async () => {
      const { cni, rt, list, plugins } = setup();
      list.disableCheck = true;
      await cni.checkNetworkList(list, rt);
      for (const p of plugins) assert.equal(readDebug(p.debugFile).Command, undefined);
    });

    test("a 0.4.0 list gets a 0.4.0 cached result", async () => {
      const { cacheDir, cni, rt, list, plugins, ipResult, setDebug } = setup(
        "0.4.0",
        `{"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`,
      );
      writeCache(cacheDir, "some-list", rt, ipResult);
      for (let i = 0; i < 3; i++) setDebug(i, { ReportResult: ipResult });
      await cni.checkNetworkList(list, rt);
      assert.deepEqual(stdinJson(readDebug(plugins[0]!.debugFile))["prevResult"], parse(ipResult));
    });

    test("a list older than 0.4.0 cannot CHECK", async () => {
      const { cni, rt, list } = setup();
      const raw = JSON.parse(list.bytes.toString()) as Record<string, unknown>;
      raw["cniVersion"] = "0.3.1";
      const old = parseConfList(marshalJson(raw));
      await assert.rejects(cni.checkNetworkList(old, rt), (e: unknown) => {
        assert.ok(e instanceof CheckNotSupportedError);
        assert.equal((e as Error).message, `configuration version "0.3.1" does not support the CHECK command`);
        return true;
      });
    });

    test("a plugin that cannot be found", async () => {
      const { cni, rt, list } = setup();
      list.plugins[1]!.network.type = "does-not-exist";
      await rejectsContaining(cni.checkNetworkList(list, rt), `failed to find plugin "does-not-exist"`);
    });

    test("a plugin error is returned unwrapped", async () => {
      const { cni, rt, list, setDebug } = setup();
      setDebug(1, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.checkNetworkList(list, rt), { message: "plugin error: banana" });
    });

    test("an invalid cached result", async () => {
      const { cacheDir, cni, rt, list } = setup();
      writeCache(cacheDir, "some-list", rt, "adfadsfasdfasfdsafaf");
      await assert.rejects(cni.checkNetworkList(list, rt), {
        message:
          `failed to get network "some-list" cached result: decoding version from network config: invalid character 'a' looking for beginning of value ` +
          `(the cache file ${path.join(cacheDir, "results", "some-list-some-container-id-some-eth0")} is torn: not JSON: left by a crash or a power loss?)`,
      });
    });
  });

  describe("delNetworkList", () => {
    test("runs every plugin with DEL; static prevResults pass through; the cache is empty afterwards", async () => {
      const { cni, rt, expectedArgs, list, plugins } = setup();
      await cni.delNetworkList(list, rt);
      for (const p of plugins) {
        const debug = readDebug(p.debugFile);
        assert.equal(debug.Command, "DEL");
        assert.deepEqual(stdinJson(debug), p.expectedStdin);
        assert.deepEqual(argsOf(debug.CmdArgs), expectedArgs);
      }
      assert.equal(await cni.getNetworkListCachedResult(list, rt), undefined);
      assert.equal(await cni.getNetworkListCachedConfig(list, rt), undefined);
    });

    test("a 0.4.0 cached result is given to the plugins", async () => {
      const { cacheDir, cni, rt, list, plugins, ipResult, setDebug } = setup(
        "0.4.0",
        `{"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`,
      );
      writeCache(cacheDir, "some-list", rt, ipResult);
      for (let i = 0; i < 3; i++) setDebug(i, { ReportResult: ipResult });
      await cni.delNetworkList(list, rt);
      for (const p of plugins) assert.deepEqual(stdinJson(readDebug(p.debugFile))["prevResult"], parse(ipResult));
    });

    test("a list older than 0.4.0 gives no cached prevResult", async () => {
      const { cacheDir, cni, rt, list, plugins, ipResult, setDebug } = setup(
        "0.3.1",
        `{"cniVersion": "0.3.1", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {}}`,
      );
      writeCache(cacheDir, "some-list", rt, ipResult);
      for (let i = 0; i < 3; i++) setDebug(i, { ReportResult: ipResult });
      await cni.delNetworkList(list, rt);
      assert.ok(!stdinOf(readDebug(plugins[0]!.debugFile).CmdArgs).includes(`"prevResult":`));
    });

    test("a plugin that cannot be found", async () => {
      const { cni, rt, list } = setup();
      list.plugins[1]!.network.type = "does-not-exist";
      await rejectsContaining(cni.delNetworkList(list, rt), `failed to find plugin "does-not-exist"`);
    });

    test("a plugin error is wrapped and the cache is kept", async () => {
      const { cacheDir, cni, rt, list, plugins, ipResult, setDebug } = setup();
      const file = writeCache(cacheDir, "some-list", rt, ipResult);
      setDebug(1, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.delNetworkList(list, rt), (e: unknown) => {
        assert.ok((e as Error).message.startsWith(`plugin type="noop" failed (delete):`));
        assert.equal(unwrapCniError(e)?.message, "plugin error: banana");
        return true;
      });
      assert.equal(fs.existsSync(file), true);
      assert.equal(readDebug(plugins[0]!.debugFile).Command, undefined, "plugins before the failing one (in reverse) are not run");
      assert.equal(readDebug(plugins[2]!.debugFile).Command, "DEL");
    });

    test("an invalid cached result does not block DEL", async () => {
      const { cacheDir, cni, rt, list } = setup();
      writeCache(cacheDir, "some-list", rt, "adfadsfasdfasfdsafaf");
      await cni.delNetworkList(list, rt);
    });

    test("a cached result with null entries (cni#1191, cni#1192): every plugin still gets DEL, the cache is forgotten", async () => {
      for (const { label, result } of nullResults("1.1.0")) {
        const { cacheDir, cni, rt, list, plugins } = setup();
        const file = writeCache(cacheDir, "some-list", rt, JSON.stringify(result));
        await cni.checkNetworkList(list, rt).catch((e: unknown) => {
          assert.ok(e instanceof WrappedError, `${label}: ${String(e)}`);
          assert.match(e.message, /^failed to get network "some-list" cached result: /, label);
        });
        await cni.delNetworkList(list, rt);
        for (const p of plugins) assert.equal(readDebug(p.debugFile).Command, "DEL", label);
        assert.equal(fs.existsSync(file), false, label);
      }
    });
  });

  describe("ordering (one shared command log)", () => {
    test("ADD and CHECK run in order, DEL in reverse, each DEL with the final ADD result", async () => {
      const { cni, rt } = setup();
      const dir = tempDir();
      const debugFile = path.join(dir, "debug.json");
      const log = path.join(dir, "log.json");
      writeDebug(debugFile, { ReportResult: IP_RESULT_110 });
      const plugin = (n: number) => `{"type":"noop","n":${n},"debugFile":${JSON.stringify(debugFile)},"commandLog":${JSON.stringify(log)}}`;
      const shared = parseConfList(`{"name":"ordered","cniVersion":"1.1.0","plugins":[${plugin(0)},${plugin(1)},${plugin(2)}]}`);
      await cni.addNetworkList(shared, rt);
      await cni.checkNetworkList(shared, rt);
      await cni.delNetworkList(shared, rt);
      const entries = readCommandLog(log).map((e) => ({ cmd: e.Command, stdin: JSON.parse(stdinOf(e.CmdArgs)) as Record<string, unknown> }));
      assert.deepEqual(
        entries.map((e) => `${e.cmd}${e.stdin["n"] as number}`),
        ["ADD0", "ADD1", "ADD2", "CHECK0", "CHECK1", "CHECK2", "DEL2", "DEL1", "DEL0"],
      );
      for (const e of entries.slice(3)) assert.deepEqual(e.stdin["prevResult"], parse(IP_RESULT_110));
      assert.equal("prevResult" in entries[0]!.stdin, false, "the first ADD has no prevResult");
    });

    test("DEL's first plugin (the list's last) gets the cached final result, not an earlier plugin's (spec PR #1156)", async () => {
      const { cni, rt } = setup();
      const dir = tempDir();
      const log = path.join(dir, "log.json");
      const resultOf = (n: number) => `{"cniVersion": "1.1.0", "ips":[{"address": "10.1.2.${n + 1}/24"}]}`;
      const plugin = (n: number) => {
        const debugFile = path.join(dir, `debug-${n}.json`);
        writeDebug(debugFile, { ReportResult: resultOf(n) });
        return `{"type":"noop","n":${n},"debugFile":${JSON.stringify(debugFile)},"commandLog":${JSON.stringify(log)}}`;
      };
      const chain = parseConfList(`{"name":"final","cniVersion":"1.1.0","plugins":[${plugin(0)},${plugin(1)},${plugin(2)}]}`);
      assert.deepEqual(parse(marshalResult(await cni.addNetworkList(chain, rt))), parse(resultOf(2)));
      await cni.delNetworkList(chain, rt);
      const dels = readCommandLog(log)
        .filter((e) => e.Command === "DEL")
        .map((e) => JSON.parse(stdinOf(e.CmdArgs)) as Record<string, unknown>);
      assert.deepEqual(
        dels.map((s) => s["n"]),
        [2, 1, 0],
      );
      for (const s of dels) assert.deepEqual(s["prevResult"], parse(resultOf(2)), `DEL of plugin ${s["n"] as number}`);
    });
  });

  describe("validateNetworkList", () => {
    test("every plugin must exist", async () => {
      const { cni, list } = setup();
      assert.deepEqual((await cni.validateNetworkList(list)).sort(), ["otherCapability", "portMappings"]);
      list.plugins[1]!.network.type = "nope";
      await assert.rejects(cni.validateNetworkList(list), { message: `[failed to find plugin "nope" in path [${BIN}]]` });
    });

    test("every plugin must support the list's version", async () => {
      const { cni, list } = setup();
      list.cniVersion = "broken";
      const one = `plugin noop does not support config version "broken"`;
      await assert.rejects(cni.validateNetworkList(list), { message: `[${one} ${one} ${one}]` });
    });
  });

  describe("gcNetworkList", () => {
    test("DELs stale attachments and GCs every plugin with the valid ones", async () => {
      const { cni, rt, list, plugins } = setup();
      await cni.addNetworkList(list, rt);

      list.disableGC = true;
      await cni.gcNetworkList(list, {});
      assert.equal(readCommandLog(plugins[0]!.commandLog).length, 1, "disableGC: nothing ran");

      list.disableGC = false;
      await cni.gcNetworkList(list, { validAttachments: [{ containerID: rt.containerID, ifname: rt.ifName }] });
      await cni.gcNetworkList(list, { validAttachments: undefined });

      const commands = readCommandLog(plugins[0]!.commandLog);
      assert.deepEqual(
        commands.map((c) => c.Command),
        ["ADD", "GC", "DEL", "GC"],
      );
      assert.equal(commands[0]!.CmdArgs.ContainerID, rt.containerID);
      assert.equal(commands[0]!.CmdArgs.IfName, rt.ifName);

      const gc1 = JSON.parse(stdinOf(commands[1]!.CmdArgs)) as Record<string, unknown>;
      assert.deepEqual(gc1["cni.dev/valid-attachments"], [{ containerID: "some-container-id", ifname: "some-eth0" }]);
      assert.deepEqual(gc1["cni.dev/attachments"], [{ containerID: "some-container-id", ifname: "some-eth0" }]);
      assert.equal(gc1["name"], "some-list");
      assert.equal(gc1["cniVersion"], "1.1.0");
      assert.equal("runtimeConfig" in gc1, false);
      assert.deepEqual(argsOf(commands[1]!.CmdArgs), { ContainerID: "", Netns: "", IfName: "", Args: "", Path: BIN, NetnsOverride: "" });

      assert.equal(commands[2]!.CmdArgs.ContainerID, rt.containerID);
      assert.equal(commands[2]!.CmdArgs.IfName, rt.ifName);
      assert.equal(commands[2]!.CmdArgs.Args, "FOO=BAR", "the stale DEL uses the cached CNI_ARGS");

      const gc2 = JSON.parse(stdinOf(commands[3]!.CmdArgs)) as Record<string, unknown>;
      assert.ok(
        gc2["cni.dev/valid-attachments"] === null ||
          (Array.isArray(gc2["cni.dev/valid-attachments"]) && (gc2["cni.dev/valid-attachments"] as unknown[]).length === 0),
      );
      assert.deepEqual(await cni.getCachedAttachments(""), [], "the stale attachment is forgotten");

      // Every plugin of the list, not only the first, got the DEL and both GCs.
      for (const p of plugins.slice(1)) {
        const log = readCommandLog(p.commandLog);
        assert.deepEqual(
          log.map((c) => c.Command),
          ["ADD", "GC", "DEL", "GC"],
        );
        const gc = JSON.parse(stdinOf(log[1]!.CmdArgs)) as Record<string, unknown>;
        assert.deepEqual(gc["cni.dev/valid-attachments"], [{ containerID: "some-container-id", ifname: "some-eth0" }]);
      }
    });

    test("without GC arguments (cnitool) there is no valid-attachments key and every attachment is stale", async () => {
      const { cni, rt, list, plugins } = setup();
      await cni.addNetworkList(list, rt);
      await cni.gcNetworkList(list);
      const commands = readCommandLog(plugins[0]!.commandLog);
      assert.deepEqual(
        commands.map((c) => c.Command),
        ["ADD", "DEL", "GC"],
      );
      const gc = JSON.parse(stdinOf(commands[2]!.CmdArgs)) as Record<string, unknown>;
      assert.equal("cni.dev/valid-attachments" in gc, false);
      assert.equal("cni.dev/attachments" in gc, false);
    });

    test("attachments of other networks are left alone", async () => {
      const { cni, rt, list, plugins } = setup();
      await cni.addNetworkList(list, rt);
      const other = parseConfList(list.bytes.toString().replace(`"name": "some-list"`, `"name": "other-list"`));
      await cni.gcNetworkList(other);
      for (const p of plugins) {
        assert.deepEqual(
          readCommandLog(p.commandLog).map((c) => c.Command),
          ["ADD", "GC"],
          "no DEL of another network's attachment",
        );
      }
      assert.deepEqual(
        (await cni.getCachedAttachments("")).map((a) => a.networkName),
        ["some-list"],
      );
    });

    test("a list older than 1.1.0 gets the stale DELs but no GC verb", async () => {
      const { cni, rt, list, plugins } = setup("1.0.0", `{"cniVersion": "1.0.0", "ips": [{"address": "10.1.2.3/24"}]}`);
      await cni.addNetworkList(list, rt);
      await cni.gcNetworkList(list, {});
      assert.deepEqual(
        readCommandLog(plugins[0]!.commandLog).map((c) => c.Command),
        ["ADD", "DEL"],
      );
    });

    test("errors are collected, one per line, and GC continues", async () => {
      const { cni, rt, list, plugins, setDebug } = setup();
      await cni.addNetworkList(list, rt);
      setDebug(0, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.gcNetworkList(list, {}), {
        message:
          `failed to delete stale attachment some-container-id some-eth0: plugin type="noop" failed (delete): plugin error: banana\n` +
          "failed to GC plugin noop: plugin error: banana",
      });
      assert.equal(readDebug(plugins[2]!.debugFile).Command, "GC", "the later plugins still got GC");
    });
  });

  describe("gcNetworkListPlugins", () => {
    test("the GC verb alone: no cached attachment is DELeted, whatever the valid list says", async () => {
      const { cni, rt, list, plugins } = setup();
      await cni.addNetworkList(list, rt);
      await cni.gcNetworkListPlugins(list, { validAttachments: [] });
      assert.deepEqual(
        readCommandLog(plugins[0]!.commandLog).map((c) => c.Command),
        ["ADD", "GC"],
      );
      const gc = JSON.parse(stdinOf(readCommandLog(plugins[0]!.commandLog)[1]!.CmdArgs)) as Record<string, unknown>;
      assert.deepEqual(gc["cni.dev/valid-attachments"], []);
      assert.equal((await cni.getCachedAttachments("")).length, 1, "the attachment stays cached");
    });

    test("nothing with disableGC or before 1.1.0; errors collected", async () => {
      const { cni, list, plugins, setDebug } = setup();
      list.disableGC = true;
      await cni.gcNetworkListPlugins(list, {});
      list.disableGC = false;
      list.cniVersion = "1.0.0";
      await cni.gcNetworkListPlugins(list, {});
      assert.deepEqual(readCommandLog(plugins[0]!.commandLog), []);
      list.cniVersion = "1.1.0";
      setDebug(1, { ReportError: "plugin error: banana" });
      await assert.rejects(cni.gcNetworkListPlugins(list, {}), { message: "failed to GC plugin noop: plugin error: banana" });
      assert.equal(readDebug(plugins[2]!.debugFile).Command, "GC", "the later plugins still got GC");
    });
  });

  describe("getStatusNetworkList", () => {
    test("runs STATUS", async () => {
      const { cni, list, plugins } = setup();
      await cni.getStatusNetworkList(list);
      const debug = readDebug(plugins[0]!.debugFile);
      assert.equal(debug.Command, "STATUS");
      assert.deepEqual(stdinJson(debug), { ...JSON.parse(plugins[0]!.config), name: "some-list", cniVersion: "1.1.0" });
      assert.deepEqual(argsOf(debug.CmdArgs), { ContainerID: "", Netns: "", IfName: "", Args: "", Path: BIN, NetnsOverride: "" });
    });

    test("stops at the first error and returns it unwrapped (code 50 kept)", async () => {
      const { cni, list, plugins, setDebug } = setup();
      setDebug(1, { ReportError: "plugin error: banana", ReportErrorCode: 50 });
      await assert.rejects(cni.getStatusNetworkList(list), (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.code, 50);
        assert.equal(e.message, "plugin error: banana");
        return true;
      });
      assert.equal(readDebug(plugins[0]!.debugFile).Command, "STATUS");
      assert.equal(readDebug(plugins[1]!.debugFile).Command, "STATUS");
      assert.equal(readDebug(plugins[2]!.debugFile).Command, undefined);
    });

    test("a list older than 1.1.0 is ready without asking", async () => {
      const { cni, list, plugins } = setup("1.0.0", `{"cniVersion": "1.0.0", "ips": [{"address": "10.1.2.3/24"}]}`);
      await cni.getStatusNetworkList(list);
      assert.equal(readDebug(plugins[0]!.debugFile).Command, undefined);
    });
  });
});

describe("timeouts (sleep plugin)", PARALLEL, () => {
  const TIMEOUT = { timeoutMs: 1500 };
  const pluginConfig = `{"type": "sleep", "name": "apitest", "some-key": "some-value", "cniVersion": "1.1.0",
    "capabilities": { "portMappings": true }}`;
  function setup() {
    const cni = new CNIConfig({ path: [BIN], cacheDir: tempDir(), exec: quietExec() });
    const net = parsePluginConfig(pluginConfig);
    const list = parseConfList(`{"name": "some-list", "cniVersion": "1.1.0", "plugins": [${pluginConfig}]}`);
    const rt: RuntimeConf = { containerID: "some-container-id", netNS: "/some/netns/path", ifName: "some-eth0" };
    return { cni, net, list, rt };
  }
  const expectKilled = async (p: Promise<unknown>): Promise<void> => {
    await rejectsContaining(p, "netplugin failed with no error message");
  };

  test("addNetwork", async () => {
    const { cni, net, rt } = setup();
    await expectKilled(cni.addNetwork(net, rt, TIMEOUT));
    assert.deepEqual(await cni.getCachedAttachments(""), []);
  });
  test("delNetwork", async () => {
    const { cni, net, rt } = setup();
    await expectKilled(cni.delNetwork(net, rt, TIMEOUT));
  });
  test("checkNetwork", async () => {
    const { cni, net, rt } = setup();
    await expectKilled(cni.checkNetwork(net, rt, TIMEOUT));
  });
  test("getVersionInfo", async () => {
    const { cni } = setup();
    await expectKilled(cni.getVersionInfo("sleep", TIMEOUT));
  });
  test("validateNetwork", async () => {
    const { cni, net } = setup();
    await expectKilled(cni.validateNetwork(net, TIMEOUT));
  });
  test("addNetworkList", async () => {
    const { cni, list, rt } = setup();
    await expectKilled(cni.addNetworkList(list, rt, TIMEOUT));
  });
  test("delNetworkList", async () => {
    const { cni, list, rt } = setup();
    await expectKilled(cni.delNetworkList(list, rt, TIMEOUT));
  });
  test("checkNetworkList", async () => {
    const { cni, list, rt } = setup();
    await expectKilled(cni.checkNetworkList(list, rt, TIMEOUT));
  });
  test("validateNetworkList", async () => {
    const { cni, list } = setup();
    await expectKilled(cni.validateNetworkList(list, TIMEOUT));
  });
  test("an AbortSignal works the same way", async () => {
    const { cni, net, rt } = setup();
    await expectKilled(cni.addNetwork(net, rt, { signal: AbortSignal.timeout(1500) }));
  });
});

describe("the result cache", PARALLEL, () => {
  const containerID = "some-container-id";
  const netNS = "/some/netns/path";
  const reportFor = (ip: string) => `{"cniVersion": "1.1.0", "ips": [{"version": "4", "address": "${ip}"}]}`;

  /** A fresh fixture per test (tests run concurrently). */
  function setup() {
    const cacheDir = tempDir();
    const debugFile = path.join(tempDir(), "debug.json");
    writeDebug(debugFile, { ReportResult: reportFor("10.1.2.3/24") });
    const cni = new CNIConfig({ path: [BIN], cacheDir, exec: quietExec() });
    const net = parsePluginConfig(`{"type": "noop", "name": "cachetest", "cniVersion": "1.1.0"}`);
    const rt: RuntimeConf = { containerID, netNS, ifName: "eth0", args: [["DEBUG", debugFile]] };
    return { cacheDir, debugFile, cni, net, rt };
  }

  test("one file per attachment", async () => {
    const { cacheDir, debugFile, cni, net, rt } = setup();
    await cni.addNetwork(net, rt);
    writeDebug(debugFile, { ReportResult: reportFor("10.1.2.5/24") });
    await cni.addNetwork(net, { ...rt, ifName: "eth1" });
    const dir = path.join(cacheDir, "results");
    const files = fs.readdirSync(dir).sort();
    assert.deepEqual(files, ["cachetest-some-container-id-eth0", "cachetest-some-container-id-eth1"]);
    for (const [name, ifName, ip] of [
      [files[0]!, "eth0", "10.1.2.3/24"],
      [files[1]!, "eth1", "10.1.2.5/24"],
    ]) {
      const text = fs.readFileSync(path.join(dir, name!), "utf8");
      const cc = JSON.parse(text) as Record<string, unknown>;
      assert.equal(cc["kind"], "cniCacheV1");
      assert.equal(cc["containerId"], containerID);
      assert.equal(cc["networkName"], "cachetest");
      assert.equal(cc["ifName"], ifName);
      assert.ok(text.includes(ip!));
    }
  });

  test("getNetworkListCachedConfig fills the runtime conf from the cache", async () => {
    const { cni, net, rt } = setup();
    await cni.addNetwork(net, rt);
    const got = await cni.getNetworkListCachedConfig({ name: "cachetest" }, { containerID, netNS, ifName: "eth0" });
    assert.ok(got);
    assert.equal(got.rt.ifName, "eth0");
    assert.equal(got.rt.containerID, containerID);
    assert.deepEqual(got.rt.args, rt.args);
    assert.equal(got.rt.capabilityArgs, undefined);
  });

  describe("an incomplete runtime conf", () => {
    const empty: PluginConfig = { network: { name: "", cniVersion: "", type: "" }, raw: {}, bytes: Buffer.alloc(0) };
    const cases: Array<[string, string, RuntimeConf]> = [
      ["network name", "", { containerID, netNS: "", ifName: "eth0" }],
      ["container ID", "foobar", { containerID: "", netNS: "", ifName: "eth0" }],
      ["interface name", "foobar", { containerID, netNS: "", ifName: "" }],
    ];
    for (const [label, name, r] of cases) {
      test(`missing ${label}`, async () => {
        const { cni } = setup();
        const msg = `cache file path requires network name ("${name}"), container ID ("${r.containerID}"), and interface name ("${r.ifName}")`;
        const netConf = { ...empty, network: { ...empty.network, name } };
        await assert.rejects(cni.getNetworkCachedConfig(netConf, r), { message: msg });
        await assert.rejects(cni.getNetworkListCachedConfig({ name }, r), { message: msg });
      });
    }
  });

  test("a cached config that is not JSON", async () => {
    const { cacheDir, cni, net, rt } = setup();
    writeCache(cacheDir, "cachetest", rt, "adfadsfasdfasfdsafaf");
    await assert.rejects(cni.getNetworkCachedConfig(net, rt), {
      message: `failed to unmarshal cached network "cachetest" config: invalid character 'a' looking for beginning of value`,
    });
  });

  test("a cached config of the wrong kind (a legacy bare result)", async () => {
    const { cacheDir, cni, net, rt } = setup();
    writeCache(cacheDir, "cachetest", rt, IP_RESULT_110);
    await assert.rejects(cni.getNetworkCachedConfig(net, rt), { message: `read cached network "cachetest" config has wrong kind: ` });
  });

  test("no cached config", async () => {
    const { cacheDir, cni, net, rt } = setup();
    fs.mkdirSync(path.join(cacheDir, "results"));
    assert.equal(await cni.getNetworkCachedConfig(net, rt), undefined);
    assert.equal(await cni.getNetworkCachedResult(net, rt), undefined);
  });

  describe("a file written by Go's libcni", () => {
    const goConfig = `{"cniVersion":"1.1.0","name":"cachetest","plugins":[{"type":"noop"}]}`;
    const goFile = `{"kind":"cniCacheV1","containerId":"some-container-id","config":"eyJjbmlWZXJzaW9uIjoiMS4xLjAiLCJuYW1lIjoiY2FjaGV0ZXN0IiwicGx1Z2lucyI6W3sidHlwZSI6Im5vb3AifV19","ifName":"eth0","networkName":"cachetest","netns":"/some/netns/path","cniArgs":[["DEBUG","/tmp/cni_debug123"]],"result":{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}}`;
    const goRt: RuntimeConf = { containerID, netNS, ifName: "eth0" };

    /** The fixture with Go's cache file in place. */
    function setupGo() {
      const f = setup();
      writeCache(f.cacheDir, "cachetest", goRt, goFile);
      return f;
    }

    test("its base64 config is the list's bytes", () => {
      assert.equal(
        Buffer.from(goConfig).toString("base64"),
        "eyJjbmlWZXJzaW9uIjoiMS4xLjAiLCJuYW1lIjoiY2FjaGV0ZXN0IiwicGx1Z2lucyI6W3sidHlwZSI6Im5vb3AifV19",
      );
    });

    test("config and runtime arguments", async () => {
      const { cni } = setupGo();
      const got = await cni.getNetworkListCachedConfig({ name: "cachetest" }, goRt);
      assert.ok(got);
      assert.equal(got.config.toString(), goConfig);
      assert.deepEqual(got.rt.args, [["DEBUG", "/tmp/cni_debug123"]]);
      assert.equal(got.rt.capabilityArgs, undefined);
      assert.equal(got.rt.netNS, netNS);
    });

    test("the result, in the asking list's version", async () => {
      const { cni } = setupGo();
      const list = parseConfList(goConfig);
      const r = await cni.getNetworkListCachedResult(list, goRt);
      assert.ok(r);
      assert.equal(marshalResult(r), `{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}`);
      const old = parseConfList(goConfig.replace("1.1.0", "0.4.0"));
      const r040 = await cni.getNetworkListCachedResult(old, goRt);
      assert.ok(r040);
      assert.equal(marshalResult(r040), `{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{}}`);
    });

    test("the attachment is listed", async () => {
      const { cni } = setupGo();
      const attachments = await cni.getCachedAttachments(containerID);
      assert.equal(attachments.length, 1);
      assert.equal(attachments[0]?.networkName, "cachetest");
      assert.equal(attachments[0]?.ifName, "eth0");
      assert.equal(attachments[0]?.netns, netNS);
      assert.equal(attachments[0]?.config.toString(), goConfig);
      assert.deepEqual(attachments[0]?.cniArgs, [["DEBUG", "/tmp/cni_debug123"]]);
    });

    test("DEL of the list uses the cached result as prevResult and removes the file", async () => {
      const { debugFile, cni } = setupGo();
      const list = parseConfList(goConfig);
      await cni.delNetworkList(list, { ...goRt, args: [["DEBUG", debugFile]] });
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, "DEL");
      assert.deepEqual(stdinJson(debug)["prevResult"], { cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24" }] });
      assert.deepEqual(await cni.getCachedAttachments(""), []);
    });
  });

  test("a legacy bare-result cache file is a result but not an attachment", async () => {
    const { cacheDir, cni, net, rt } = setup();
    writeCache(cacheDir, "cachetest", rt, `{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{}}`);
    const r = await cni.getNetworkCachedResult(net, rt);
    assert.ok(r);
    assert.equal(marshalResult(r), `{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}`);
    assert.deepEqual(await cni.getCachedAttachments(""), []);
  });

  test("getCachedAttachments filters by container ID and skips junk", async () => {
    const { cacheDir, cni } = setup();
    const entry = (cid: string, ifName: string, network = "net") =>
      `{"kind":"cniCacheV1","containerId":"${cid}","config":"e30=","ifName":"${ifName}","networkName":"${network}"}`;
    const dir = path.join(cacheDir, "results");
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "net-abc-eth0"), entry("abc", "eth0"));
    fs.writeFileSync(path.join(dir, "net-abcd-eth0"), entry("abcd", "eth0"));
    fs.writeFileSync(path.join(dir, "net-abc-eth1"), "not json");
    fs.writeFileSync(path.join(dir, "net-abc-eth2"), IP_RESULT_110);
    fs.writeFileSync(path.join(dir, "net-abc-eth3"), entry("abc", ""));
    fs.writeFileSync(path.join(dir, "net-abc-eth4"), entry("other", "eth4"), "utf8");
    fs.writeFileSync(path.join(dir, "abc-x"), entry("abc", "x"));
    assert.deepEqual(
      (await cni.getCachedAttachments("abc")).map((a) => `${a.containerID}/${a.ifName}`),
      ["abc/eth0"],
    );
    assert.deepEqual(
      (await cni.getCachedAttachments("")).map((a) => `${a.containerID}/${a.ifName}`),
      ["abc/x", "abc/eth0", "other/eth4", "abcd/eth0"],
    );
  });

  test("no results directory: no attachments", async () => {
    const { cni } = setup();
    assert.deepEqual(await cni.getCachedAttachments(""), []);
  });

  test("the runtime conf's cacheDir is used when the CNIConfig has none", async () => {
    const { cacheDir, net, rt } = setup();
    const rtDir = tempDir();
    const plain = new CNIConfig({ path: [BIN], exec: quietExec() });
    await plain.addNetwork(net, { ...rt, cacheDir: rtDir });
    assert.ok(fs.existsSync(path.join(rtDir, "results", "cachetest-some-container-id-eth0")));
    const withOwn = new CNIConfig({ path: [BIN], cacheDir, exec: quietExec() });
    await withOwn.addNetwork(net, { ...rt, ifName: "eth9", cacheDir: rtDir });
    assert.ok(fs.existsSync(path.join(cacheDir, "results", "cachetest-some-container-id-eth9")), "the CNIConfig's own dir wins");
  });
});

describe("backwards compatibility", PARALLEL, () => {
  const rt: RuntimeConf = { containerID: "some-container-id", netNS: "/some/netns/path", ifName: "eth0" };
  const setup = () => ({ cni: new CNIConfig({ path: [BIN], cacheDir: tempDir(), exec: quietExec() }) });

  test("a legacy 0.1.0 plugin without VERSION support", async () => {
    const { cni } = setup();
    const net = parsePluginConfig(`{ "name": "old-thing", "type": "legacy010" }`);
    const result = await cni.addNetwork(net, rt);
    assert.equal(result.cniVersion, "0.1.0");
    const r = result as Result020;
    assert.deepEqual(r.ip4, { ip: "10.1.2.3/24", gateway: "10.1.2.1", routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }] });
    assert.deepEqual(r.dns, { nameservers: ["8.8.8.8"], domain: "example.com" });
    assert.equal(
      marshalResult(result),
      `{"cniVersion":"0.1.0","ip4":{"ip":"10.1.2.3/24","gateway":"10.1.2.1","routes":[{"dst":"0.0.0.0/0","gw":"10.1.0.1"}]},"dns":{"nameservers":["8.8.8.8"],"domain":"example.com"}}`,
    );
    assert.deepEqual(await cni.validateNetwork(net), []);
    await cni.delNetwork(net, rt);
  });

  const legacyResult = `{"ip4": {"ip": "1.2.3.30/24", "gateway": "1.2.3.1",
      "routes": [{"dst": "15.5.6.0/24", "gw": "15.5.6.8"}]},
    "ip6": {"ip": "abcd:1234:ffff::cdde/64", "gateway": "abcd:1234:ffff::1",
      "routes": [{"dst": "1111:dddd::/80", "gw": "1111:dddd::aaaa"}]},
    "dns":{}}`;
  for (const [label, confTemplate, result] of [
    ["unversioned", `{"name": "default", "type": "noop", "debugFile": "%s"}`, legacyResult],
    ["0.1.0", `{"cniVersion": "0.1.0", "name": "default", "type": "noop", "debugFile": "%s"}`, legacyResult.replace("{", `{"cniVersion": "0.1.0", `)],
  ] as const) {
    test(`the current noop plugin driven with a ${label} config`, async () => {
      const { cni } = setup();
      const debugFile = path.join(tempDir(), "debug.json");
      writeDebug(debugFile, { ReportResult: result });
      const net = parsePluginConfig(confTemplate.replace("%s", debugFile));
      const r = (await cni.addNetwork(net, rt)) as Result020;
      assert.equal(r.cniVersion, "0.1.0");
      assert.equal(r.ip4?.ip, "1.2.3.30/24");
      assert.equal(r.ip6?.ip, "abcd:1234:ffff::cdde/64");
      await cni.delNetwork(net, rt);
      assert.equal(readDebug(debugFile).Command, "DEL");
    });
  }
});

/** Not PARALLEL: one test sets this process's environment, which every CNIConfig call passes on. */
describe("trace context (TRACEPARENT, TRACESTATE, BAGGAGE) reaches every plugin of a list", () => {
  const dir = tempDir();
  const recorders = ["trace-a", "trace-b"].map((name) => installEnvRecorder(dir, name));
  const list = parseConfList(
    Buffer.from(
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "traced",
        plugins: [{ type: "trace-a" }, { type: "trace-b" }],
      }),
    ),
  );
  const rt: RuntimeConf = { containerID: "traced-ctr", netNS: "/some/netns/path", ifName: "eth0" };
  const cni = () => new CNIConfig({ path: [dir], cacheDir: tempDir(), exec: quietExec() });
  const traceOf = (recorder: string) => {
    const env = recordedEnv(recorder);
    return { command: env?.["CNI_COMMAND"], TRACEPARENT: env?.["TRACEPARENT"], TRACESTATE: env?.["TRACESTATE"], BAGGAGE: env?.["BAGGAGE"] };
  };
  const reset = () => recorders.forEach(resetRecorder);

  test("from the runtime's environment, on every verb", async () => {
    const runtime = {
      TRACEPARENT: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      TRACESTATE: "rojo=00f067aa0ba902b7",
      BAGGAGE: "userId=alice",
    };
    const saved = Object.fromEntries(Object.keys(runtime).map((k) => [k, process.env[k]]));
    Object.assign(process.env, runtime);
    try {
      const c = cni();
      for (const [command, run] of [
        ["ADD", () => c.addNetworkList(list, rt)],
        ["CHECK", () => c.checkNetworkList(list, rt)],
        ["STATUS", () => c.getStatusNetworkList(list)],
        ["GC", () => c.gcNetworkList(list, { validAttachments: [] })],
        ["DEL", () => c.delNetworkList(list, rt)],
      ] as const) {
        reset();
        await run();
        for (const r of recorders) assert.deepEqual(traceOf(r), { command, ...runtime }, `${command} ${path.basename(r)}`);
      }
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("from the call's options, in place of the environment's", async () => {
    const traceContext = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", baggage: "tenant=a" };
    const c = cni();
    reset();
    await c.addNetworkList(list, rt, { traceContext });
    for (const r of recorders)
      assert.deepEqual(traceOf(r), { command: "ADD", TRACEPARENT: traceContext.traceparent, TRACESTATE: undefined, BAGGAGE: "tenant=a" });
    reset();
    await c.delNetworkList(list, rt, { traceContext });
    for (const r of recorders) assert.equal(traceOf(r).TRACEPARENT, traceContext.traceparent);
  });
});
