import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { before, beforeEach, describe, test } from "node:test";
import { marshalJson, parseJson } from "#go-json/json.js";
import { CniError } from "#spec/errors.js";
import { marshalResult, type Result100, toCurrentResult } from "#spec/result/index.js";
import { installEnvRecorder, RECORDER_RESULT, recordedEnv, resetRecorder } from "#testing/env-recorder.js";
import { TEST_BIN } from "#testing/harness.js";
import { readDebug, stdinOf, writeDebug } from "#testing/plugins/noop-debug.js";
import { useTempDirs } from "#testing/temp.js";
import { delegateEnv, type Env, invokeEnv } from "./args.js";
import { type PluginExec, pluginFailure, RawExec, UnknownOutcomeError } from "./exec.js";
import { findInPath, findInPathSync, splitPathList } from "./find.js";
import {
  decodePluginResult,
  delegateAdd,
  delegateCheck,
  delegateDel,
  delegateGC,
  delegateStatus,
  execPluginWithoutResult,
  execPluginWithResult,
  getVersionInfo,
  versionProbeEnv,
} from "./plugin.js";

/** dist/test-bin: the noop, sleep and legacy010 test plugins. */
const BIN = TEST_BIN;
const NOOP = path.join(BIN, "noop");
const SLEEP = path.join(BIN, "sleep");
const LEGACY = path.join(BIN, "legacy010");

const tempDir = useTempDirs();

/** A Writable collecting what is written to it. */
function sink(): Writable & { text: () => string } {
  const chunks: Buffer[] = [];
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(Buffer.from(chunk));
      cb();
    },
  }) as Writable & { text: () => string };
  w.text = () => Buffer.concat(chunks).toString();
  return w;
}

/** A fake exec recording its call and returning canned stdout (or throwing). */
function fakeExec(stdout: string, error?: Error) {
  const received: { pluginPath?: string; stdin?: Buffer; env?: Env } = {};
  const exec: PluginExec = {
    async execPlugin(pluginPath, stdin, env) {
      received.pluginPath = pluginPath;
      received.stdin = Buffer.from(stdin);
      received.env = env;
      if (error) throw error;
      return Buffer.from(stdout);
    },
  };
  return { exec, received };
}

describe("invokeEnv (Args.AsEnv)", () => {
  const base: Env = {
    HOME: "/root",
    PATH: "/usr/bin",
    CNI_COMMAND: "DEL",
    CNI_IFNAME: "eth0",
    CNI_CONTAINERID: "id",
    CNI_ARGS: "args",
    CNI_NETNS: "testns",
    CNI_PATH: "testpath",
  };
  const args = {
    command: "ADD",
    containerID: "some-container-id",
    netNS: "/some/netns/path",
    pluginArgs: [
      ["KEY1", "VALUE1"],
      ["KEY2", "VALUE2"],
    ] as Array<[string, string]>,
    ifName: "eth7",
    path: ["/some/cni/path"],
  };

  test("replaces the six CNI variables and keeps the rest", () => {
    const env = invokeEnv(args, base);
    assert.equal(Object.keys(env).length, Object.keys(base).length);
    assert.deepEqual(env, {
      HOME: "/root",
      PATH: "/usr/bin",
      CNI_COMMAND: "ADD",
      CNI_IFNAME: "eth7",
      CNI_CONTAINERID: "some-container-id",
      CNI_ARGS: "KEY1=VALUE1;KEY2=VALUE2",
      CNI_NETNS: "/some/netns/path",
      CNI_PATH: "/some/cni/path",
    });
    assert.equal(base["CNI_COMMAND"], "DEL", "the base environment is not modified");
  });

  test("always sets all six, empty when not given", () => {
    const env = invokeEnv({ command: "STATUS" }, {});
    assert.deepEqual(env, { CNI_COMMAND: "STATUS", CNI_CONTAINERID: "", CNI_NETNS: "", CNI_ARGS: "", CNI_IFNAME: "", CNI_PATH: "" });
  });

  test("joins several plugin directories with ':'", () => {
    assert.equal(invokeEnv({ command: "ADD", path: ["/a", "/b"] }, {})["CNI_PATH"], "/a:/b");
  });

  test("pluginArgsStr wins over pluginArgs when non-empty", () => {
    assert.equal(invokeEnv({ ...args, pluginArgsStr: "X=Y" }, {})["CNI_ARGS"], "X=Y");
    assert.equal(invokeEnv({ ...args, pluginArgsStr: "" }, {})["CNI_ARGS"], "KEY1=VALUE1;KEY2=VALUE2");
  });

  test("defaults to the process environment", () => {
    const env = invokeEnv({ command: "ADD" });
    assert.equal(env["PATH"], process.env["PATH"]);
  });
});

describe("delegateEnv (DelegateArgs.AsEnv)", () => {
  test("overrides an existing CNI_COMMAND", () => {
    const base: Env = { A: "1", CNI_COMMAND: "DEL", CNI_IFNAME: "eth0" };
    const env = delegateEnv("ADD", base);
    assert.equal(Object.keys(env).length, Object.keys(base).length);
    assert.equal(env["CNI_COMMAND"], "ADD");
    assert.equal(env["CNI_IFNAME"], "eth0");
    assert.equal(base["CNI_COMMAND"], "DEL", "the caller's environment is not modified");
  });

  test("appends CNI_COMMAND when absent", () => {
    const base: Env = { A: "1" };
    const env = delegateEnv("ADD", base);
    assert.equal(Object.keys(env).length, 2);
    assert.equal(env["CNI_COMMAND"], "ADD");
  });
});

describe("findInPath", () => {
  let pluginDir: string;
  let emptyDir: string;
  const pluginName = "a-cni-plugin";

  before(() => {
    pluginDir = tempDir();
    emptyDir = tempDir();
    fs.writeFileSync(path.join(pluginDir, pluginName), "");
    fs.mkdirSync(path.join(pluginDir, "a-directory"));
    fs.symlinkSync(path.join(pluginDir, pluginName), path.join(pluginDir, "a-link"));
  });

  for (const [label, find] of [
    ["async", findInPath],
    ["sync", async (p: string, d: readonly string[]) => findInPathSync(p, d)],
  ] as const) {
    describe(label, () => {
      test("returns the path in the first directory holding the plugin", async () => {
        assert.equal(await find(pluginName, [emptyDir, pluginDir]), path.join(pluginDir, pluginName));
      });

      test("no paths", async () => {
        await assert.rejects(find(pluginName, []), { message: "no paths provided" });
      });

      test("no plugin name", async () => {
        await assert.rejects(find("", [emptyDir, pluginDir]), { message: "no plugin name provided" });
      });

      test("not found names the directories", async () => {
        await assert.rejects(find(pluginName, [emptyDir]), { message: `failed to find plugin "${pluginName}" in path [${emptyDir}]` });
        await assert.rejects(find("nope", [emptyDir, pluginDir]), { message: `failed to find plugin "nope" in path [${emptyDir} ${pluginDir}]` });
      });

      test("a name with a directory separator is refused", async () => {
        await assert.rejects(find("../pluginname", [emptyDir]), { message: "invalid plugin name: ../pluginname" });
      });

      test("a directory is not a plugin; a symlink to a file is", async () => {
        await assert.rejects(find("a-directory", [pluginDir]), { message: `failed to find plugin "a-directory" in path [${pluginDir}]` });
        assert.equal(await find("a-link", [pluginDir]), path.join(pluginDir, "a-link"));
      });
    });
  }

  test("splitPathList", () => {
    assert.deepEqual(splitPathList(undefined), []);
    assert.deepEqual(splitPathList(""), []);
    assert.deepEqual(splitPathList("/a:/b"), ["/a", "/b"]);
  });
});

describe("execPluginWithResult / execPluginWithoutResult (fake exec)", () => {
  const netconf = Buffer.from(`{ "some": "stdin", "cniVersion": "0.3.1" }`);
  const env: Env = { SOME: "ENV" };
  const stdout031 = `{ "cniVersion": "0.3.1", "ips": [ { "version": "4", "address": "1.2.3.4/24" } ] }`;

  test("decodes the result bytes", async () => {
    const { exec } = fakeExec(stdout031);
    const r = await execPluginWithResult("/some/plugin/path", netconf, env, exec);
    assert.equal(r.cniVersion, "0.3.1");
    const current = toCurrentResult(r);
    assert.equal(current.ips?.length, 1);
    assert.equal(current.ips?.[0]?.address, "1.2.3.4/24");
  });

  test("passes path, stdin and environment through unchanged", async () => {
    const { exec, received } = fakeExec(stdout031);
    await execPluginWithResult("/some/plugin/path", netconf, env, exec);
    assert.equal(received.pluginPath, "/some/plugin/path");
    assert.deepEqual(received.stdin, netconf);
    assert.deepEqual(received.env, { SOME: "ENV" });
  });

  test("returns the exec error", async () => {
    const { exec } = fakeExec("", new Error("banana"));
    await assert.rejects(execPluginWithResult("/p", netconf, env, exec), { message: "banana" });
    await assert.rejects(execPluginWithoutResult("/p", netconf, env, exec), { message: "banana" });
  });

  test("the default exec runs the real file (which does not exist)", async () => {
    await assert.rejects(execPluginWithResult("/some/plugin/path", netconf, env), /\/some\/plugin\/path/);
    await assert.rejects(execPluginWithoutResult("/some/plugin/path", netconf, env), /\/some\/plugin\/path/);
  });

  test("a result without cniVersion takes the config's version", async () => {
    const { exec } = fakeExec(`{ "ips": [ { "version": "4", "address": "1.2.3.4/24" } ] }`);
    const r = await execPluginWithResult("/p", netconf, env, exec);
    assert.equal(r.cniVersion, "0.3.1");
    assert.equal(toCurrentResult(r).ips?.[0]?.address, "1.2.3.4/24");
  });

  test("a result with an empty cniVersion takes the config's version", async () => {
    const { exec } = fakeExec(`{ "cniVersion": "", "ips": [ { "version": "4", "address": "1.2.3.4/24" } ] }`);
    const r = await execPluginWithResult("/p", netconf, env, exec);
    assert.equal(r.cniVersion, "0.3.1");
  });

  test("no version anywhere means 0.1.0", async () => {
    const { exec } = fakeExec(`{ "some": "version-info" }`);
    const r = await execPluginWithResult("/p", Buffer.from(`{ "some": "stdin" }`), env, exec);
    assert.equal(r.cniVersion, "0.1.0");
  });

  test("empty output of an ADD is an error", async () => {
    const { exec } = fakeExec("");
    await assert.rejects(execPluginWithResult("/p", netconf, env, exec), { message: "failed to unmarshal raw result: unexpected end of JSON input" });
  });

  test("decodePluginResult: null output is an empty result; a bad config version is reported", () => {
    assert.equal(decodePluginResult(netconf, Buffer.from("null")).cniVersion, "0.3.1");
    assert.throws(() => decodePluginResult(Buffer.from("{"), Buffer.from("{}")), {
      message: "decoding version from network config: unexpected end of JSON input",
    });
  });

  test("execPluginWithoutResult ignores stdout and passes arguments through", async () => {
    const { exec, received } = fakeExec("not json at all");
    await execPluginWithoutResult("/some/plugin/path", netconf, env, exec);
    assert.equal(received.pluginPath, "/some/plugin/path");
    assert.deepEqual(received.stdin, netconf);
    assert.deepEqual(received.env, { SOME: "ENV" });
  });
});

describe("getVersionInfo (fake exec)", () => {
  test("runs VERSION with dummy values for very old plugins and the current version on stdin", async () => {
    const { exec, received } = fakeExec(`{ "cniVersion": "1.1.0", "supportedVersions": ["0.42.0"] }`);
    const info = await getVersionInfo("/some/plugin/path", exec);
    assert.deepEqual(info.supportedVersions, ["0.42.0"]);
    assert.equal(received.pluginPath, "/some/plugin/path");
    assert.equal(received.env?.["CNI_COMMAND"], "VERSION");
    assert.equal(received.env?.["CNI_NETNS"], "dummy");
    assert.equal(received.env?.["CNI_IFNAME"], "dummy");
    assert.equal(received.env?.["CNI_PATH"], "dummy");
    assert.deepEqual(parseJson(received.stdin!), { cniVersion: "1.1.0" });
  });

  test("versionProbeEnv keeps the rest of the environment", () => {
    const env = versionProbeEnv({ KEEP: "me", CNI_ARGS: "X=Y" });
    assert.equal(env["KEEP"], "me");
    assert.equal(env["CNI_ARGS"], "");
  });

  test("a plugin that does not know VERSION supports 0.1.0", async () => {
    const { exec } = fakeExec("", new Error("unknown CNI_COMMAND: VERSION"));
    assert.deepEqual((await getVersionInfo("/p", exec)).supportedVersions, ["0.1.0"]);
  });

  test("other errors are returned", async () => {
    const { exec } = fakeExec("", new Error("banana"));
    await assert.rejects(getVersionInfo("/p", exec), { message: "banana" });
  });

  test("a 0.2.0 answer without supportedVersions means 0.1.0 and 0.2.0", async () => {
    const { exec } = fakeExec(`{"cniVersion":"0.2.0"}`);
    assert.deepEqual((await getVersionInfo("/p", exec)).supportedVersions, ["0.1.0", "0.2.0"]);
  });

  test("the legacy010 plugin (no VERSION support) is treated as 0.1.0", async () => {
    assert.deepEqual((await getVersionInfo(LEGACY)).supportedVersions, ["0.1.0"]);
  });

  test("the noop plugin reports its default list", async () => {
    assert.deepEqual((await getVersionInfo(NOOP)).supportedVersions, ["0.-42.0", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]);
  });
});

describe("pluginFailure (mapping a failed run to an error)", () => {
  const empty = Buffer.alloc(0);

  test("no output at all", () => {
    const e = pluginFailure("exit status 1", empty, empty);
    assert.equal(e.code, 999, "what Go's plugins print when they pass this plain error on");
    assert.ok(e instanceof UnknownOutcomeError);
    assert.equal(e.message, "netplugin failed with no error message: exit status 1");
  });

  test("only stderr: quoted in the message", () => {
    const e = pluginFailure("exit status 1", empty, Buffer.from("some stderr message"));
    assert.equal(e.message, `netplugin failed: "some stderr message": exit status 1`);
    assert.equal(pluginFailure("exit status 2", empty, Buffer.from("line\n")).message, `netplugin failed: "line\\n": exit status 2`);
  });

  test("an error object on stdout is returned as a CniError (unknown keys ignored)", () => {
    const e = pluginFailure("exit status 1", Buffer.from(`{"cniVersion":"1.0.0","code":7,"msg":"bad","details":"why"}`), Buffer.from("noise"));
    assert.ok(e instanceof CniError);
    assert.equal(e.code, 7);
    assert.equal(e.msg, "bad");
    assert.equal(e.details, "why");
    assert.equal(e.message, "bad; why");
  });

  test("garbage on stdout", () => {
    const e = pluginFailure("exit status 1", Buffer.from("not json"), empty);
    assert.equal(e.code, 999);
    assert.ok(e instanceof UnknownOutcomeError);
    assert.ok(e.message.startsWith(`netplugin failed but error parsing its diagnostic message "not json": `), e.message);
  });
});

describe("RawExec with the noop plugin", () => {
  let debugFile: string;
  let env: Env;
  const stdin = Buffer.from(`{"name": "raw-exec-test", "some":"stdin-json", "cniVersion": "0.3.1"}`);
  const reportResult = `{ "some": "result" }`;

  beforeEach(() => {
    debugFile = path.join(tempDir(), "debug.json");
    writeDebug(debugFile, { ReportResult: reportResult, ReportStderr: "some stderr message" });
    env = {
      PATH: process.env["PATH"], // the test plugins are node scripts
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: "some-container-id",
      CNI_ARGS: `DEBUG=${debugFile}`,
      CNI_NETNS: "/some/netns/path",
      CNI_PATH: "/some/bin/path",
      CNI_IFNAME: "some-eth0",
    };
  });

  test("runs the plugin with the given stdin and environment", async () => {
    await new RawExec(sink()).execPlugin(NOOP, stdin, env);
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "ADD");
    assert.equal(stdinOf(debug.CmdArgs), stdin.toString());
    assert.equal(debug.CmdArgs?.Netns, "/some/netns/path");
    assert.equal(debug.CmdArgs?.ContainerID, "some-container-id");
    assert.equal(debug.CmdArgs?.IfName, "some-eth0");
    assert.equal(debug.CmdArgs?.Path, "/some/bin/path");
  });

  test("returns stdout as bytes and forwards stderr", async () => {
    const stderr = sink();
    const out = await new RawExec(stderr).execPlugin(NOOP, stdin, env);
    assert.equal(out.toString(), reportResult);
    assert.equal(stderr.text(), "some stderr message");
  });

  test("a per-call stderr wins over the exec's", async () => {
    const own = sink();
    const perCall = sink();
    await new RawExec(own).execPlugin(NOOP, stdin, env, { stderr: perCall });
    assert.equal(own.text(), "");
    assert.equal(perCall.text(), "some stderr message");
  });

  test("an error JSON on stdout is returned", async () => {
    writeDebug(debugFile, { ReportError: "banana", ReportStderr: "some stderr message" });
    await assert.rejects(new RawExec(sink()).execPlugin(NOOP, stdin, env), (e: unknown) => {
      assert.ok(e instanceof CniError);
      assert.equal(e.code, 999);
      assert.equal(e.message, "banana");
      return true;
    });
  });

  test("an error code from the plugin is kept", async () => {
    writeDebug(debugFile, { ReportError: "not ready", ReportErrorCode: 50 });
    await assert.rejects(new RawExec(sink()).execPlugin(NOOP, stdin, env), { code: 50, msg: "not ready" });
  });

  test("exit 1 with only stderr", async () => {
    writeDebug(debugFile, { ExitWithCode: 1, ReportStderr: "some stderr message" });
    await assert.rejects(new RawExec(sink()).execPlugin(NOOP, stdin, env), { message: `netplugin failed: "some stderr message": exit status 1` });
  });

  test("exit 1 with no output", async () => {
    writeDebug(debugFile, { ExitWithCode: 1 });
    await assert.rejects(new RawExec(sink()).execPlugin(NOOP, stdin, env), { message: "netplugin failed with no error message: exit status 1" });
  });

  test("an exit code of 0 with no output is success", async () => {
    writeDebug(debugFile, { ReportResult: "" });
    assert.equal((await new RawExec(sink()).execPlugin(NOOP, stdin, env)).length, 0);
  });

  test("a plugin that cannot be executed: the error names the path", async () => {
    await assert.rejects(new RawExec(sink()).execPlugin("/tmp/some/invalid/plugin/path", stdin, env), (e: unknown) => {
      assert.match((e as Error).message, /\/tmp\/some\/invalid\/plugin\/path/);
      assert.equal(
        (e as Error).message,
        "netplugin failed with no error message: fork/exec /tmp/some/invalid/plugin/path: no such file or directory",
      );
      return true;
    });
  });
});

describe("RawExec timeouts (sleep plugin)", { concurrency: true }, () => {
  const env = (): Env => ({
    PATH: process.env["PATH"],
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "c",
    CNI_NETNS: "/some/netns",
    CNI_IFNAME: "eth0",
    CNI_PATH: BIN,
  });
  const stdin = Buffer.from(`{"name":"sleepy","cniVersion":"1.1.0"}`);

  test("timeoutMs kills the plugin, and the error names the time limit (not a bare 'signal: killed')", async () => {
    const started = Date.now();
    await assert.rejects(new RawExec(sink()).execPlugin(SLEEP, stdin, env(), { timeoutMs: 800 }), {
      message: "netplugin failed with no error message: signal: killed (it ran past its time limit of 0.8 s and was killed)",
    });
    assert.ok(Date.now() - started < 10_000);
  });

  test("an AbortSignal kills the plugin", async () => {
    await assert.rejects(new RawExec(sink()).execPlugin(SLEEP, stdin, env(), { signal: AbortSignal.timeout(800) }), {
      message: "netplugin failed with no error message: signal: killed",
    });
  });
});

describe("delegation (noop plugin)", () => {
  let debugFile: string;
  let env: Env;
  const netconf = Buffer.from(marshalJson({ name: "delegate-test", cniVersion: "1.1.0" }));
  const expected: Result100 = { cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24" }] };

  beforeEach(() => {
    debugFile = path.join(tempDir(), "debug.json");
    writeDebug(debugFile, { ReportResult: marshalResult(expected) });
    env = {
      PATH: process.env["PATH"],
      CNI_COMMAND: "NOPE",
      CNI_ARGS: `DEBUG=${debugFile}`,
      CNI_PATH: BIN,
      CNI_NETNS: "/tmp/some/netns/path",
      CNI_IFNAME: "eth7",
      CNI_CONTAINERID: "container",
    };
  });

  test("delegateAdd finds and runs the plugin, returning its result", async () => {
    const result = await delegateAdd("noop", netconf, { env, stderr: sink() });
    assert.equal(marshalResult(result), marshalResult(expected));
    assert.equal(marshalResult(result), `{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}`);
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "ADD");
    assert.equal(debug.CmdArgs?.IfName, "eth7");
    assert.equal(debug.CmdArgs?.ContainerID, "container");
    assert.equal(stdinOf(debug.CmdArgs), netconf.toString(), "stdin is passed unchanged");
    assert.equal(env["CNI_COMMAND"], "NOPE", "the caller's CNI_COMMAND is not modified");
  });

  for (const [verb, fn] of [
    ["CHECK", delegateCheck],
    ["DEL", delegateDel],
    ["STATUS", delegateStatus],
    ["GC", delegateGC],
  ] as const) {
    test(`delegate ${verb}`, async () => {
      await fn("noop", netconf, { env, stderr: sink() });
      const debug = readDebug(debugFile);
      assert.equal(debug.Command, verb);
      assert.equal(debug.CmdArgs?.IfName, "eth7");
      assert.equal(env["CNI_COMMAND"], "NOPE");
    });
  }

  test("an unknown plugin", async () => {
    for (const fn of [delegateAdd, delegateCheck, delegateDel, delegateStatus, delegateGC]) {
      await assert.rejects(fn("non-existent-plugin", netconf, { env }), (e: unknown) => {
        assert.ok((e as Error).message.startsWith("failed to find plugin"), (e as Error).message);
        return true;
      });
    }
  });

  test("defaults to this process's environment", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      await delegateDel("noop", netconf, { stderr: sink() });
      assert.equal(readDebug(debugFile).Command, "DEL");
      assert.equal(process.env["CNI_COMMAND"], "NOPE");
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  test("a delegated plugin's error is returned", async () => {
    writeDebug(debugFile, { ReportError: "plugin error: banana" });
    await assert.rejects(delegateAdd("noop", netconf, { env }), { message: "plugin error: banana" });
  });
});

describe("the noop test plugin (checklist 6.11)", () => {
  let debugFile: string;
  const env = (command = "ADD", cniArgs?: string): Env => ({
    PATH: process.env["PATH"],
    CNI_COMMAND: command,
    CNI_CONTAINERID: "some-container-id",
    CNI_NETNS: "/some/netns/path",
    CNI_IFNAME: "eth0",
    CNI_PATH: BIN,
    CNI_ARGS: cniArgs ?? `DEBUG=${debugFile};FOO=BAR`,
  });
  const run = (stdin: string, e: Env = env()) => new RawExec(sink()).execPlugin(NOOP, Buffer.from(stdin), e);

  beforeEach(() => {
    debugFile = path.join(tempDir(), "debug.json");
  });

  test("reports the result verbatim and records the call", async () => {
    const report = `{ "ips": [{ "version": "4", "address": "10.1.2.3/24" }], "dns": {} }`;
    writeDebug(debugFile, { ReportResult: report });
    const stdin = `{"name": "noop-test", "some":"stdin-json", "cniVersion": "0.3.1"}`;
    assert.equal((await run(stdin)).toString(), report);
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "ADD");
    assert.equal(debug.CmdArgs?.Args, `DEBUG=${debugFile};FOO=BAR`);
    assert.equal(stdinOf(debug.CmdArgs), stdin);
  });

  for (const version of ["0.3.1", "0.4.0"]) {
    test(`PASSTHROUGH prints the ${version} prevResult`, async () => {
      writeDebug(debugFile, { ReportResult: "PASSTHROUGH" });
      const out = await run(`{"name": "noop-test", "cniVersion": "${version}",
        "prevResult": {"cniVersion": "${version}", "ips": [{"version": "4", "address": "10.1.2.15/24"}]}}`);
      assert.deepEqual(parseJson(out), { cniVersion: version, ips: [{ version: "4", address: "10.1.2.15/24" }], dns: {} });
    });
  }

  test("INJECT-DNS adds a nameserver to the prevResult", async () => {
    writeDebug(debugFile, { ReportResult: "INJECT-DNS" });
    const out = await run(`{"name": "noop-test", "cniVersion": "0.4.0",
      "prevResult": {"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{}}}`);
    assert.equal(out.toString(), `{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{"nameservers":["1.2.3.4"]}}`);
  });

  test("the debug file may come from the config", async () => {
    writeDebug(debugFile, { ReportResult: `{"from":"config"}` });
    const out = await run(`{"name": "noop-test", "cniVersion": "1.0.0", "debugFile": ${JSON.stringify(debugFile)}}`, env("ADD", "FOO=BAR"));
    assert.equal(out.toString(), `{"from":"config"}`);
  });

  test("no debug file: prints {} and says so on stderr", async () => {
    const stderr = sink();
    const out = await new RawExec(stderr).execPlugin(NOOP, Buffer.from(`{"name":"noop-test","cniVersion":"1.0.0"}`), env("ADD", ""));
    assert.equal(out.toString(), "{}");
    assert.equal(stderr.text(), "CNI_ARGS or config empty, no debug behavior\n");
  });

  test("an empty ReportResult prints nothing", async () => {
    writeDebug(debugFile, { ReportResult: "" });
    assert.equal((await run(`{"name":"noop-test","cniVersion":"1.0.0"}`)).length, 0);
  });

  test("ExitWithCode", async () => {
    writeDebug(debugFile, { ExitWithCode: 3 });
    await assert.rejects(run(`{"name":"noop-test","cniVersion":"1.0.0"}`), { message: "netplugin failed with no error message: exit status 3" });
  });

  test("ReportError prints a CNI error and exits 1", () => {
    writeDebug(debugFile, { ReportError: "banana" });
    const r = spawnSync(NOOP, { input: `{"name":"noop-test","cniVersion":"1.0.0"}`, env: env() as NodeJS.ProcessEnv, encoding: "utf8" });
    assert.equal(r.status, 1);
    assert.deepEqual(parseJson(r.stdout), { code: 999, msg: "banana" });
  });

  test("DEL output is printed as well", async () => {
    writeDebug(debugFile, { ReportResult: `{ "some": "delete-data" }` });
    assert.equal((await run(`{"name":"noop-test","cniVersion":"1.0.0"}`, env("DEL"))).toString(), `{ "some": "delete-data" }`);
    assert.equal(readDebug(debugFile).Command, "DEL");
  });

  test("VERSION reports ReportVersionSupport", async () => {
    writeDebug(debugFile, { ReportVersionSupport: ["0.123.0", "0.2.0"] });
    const out = await run(`{"cniVersion":"1.1.0"}`, env("VERSION"));
    assert.deepEqual(parseJson(out), { cniVersion: "1.1.0", supportedVersions: ["0.123.0", "0.2.0"] });
  });

  test("a CNI_ARGS pair without '=' is an error", async () => {
    await assert.rejects(run(`{"name":"noop-test","cniVersion":"1.0.0"}`, env("ADD", "NOTAPAIR")), {
      message: "CNI_ARGS invalid key/value pair: NOTAPAIR",
    });
  });
});

describe("trace context (TRACEPARENT, TRACESTATE, BAGGAGE)", () => {
  const dir = tempDir();
  const recorder = installEnvRecorder(dir, "recorder");
  const conf = Buffer.from(`{"name":"traced","cniVersion":"1.0.0","type":"recorder"}`);
  const quiet = new RawExec(sink());
  const runtimeTrace = {
    TRACEPARENT: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    TRACESTATE: "rojo=00f067aa0ba902b7",
    BAGGAGE: "userId=alice",
  };
  const callTrace = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "congo=t61rcWkgMzE" };
  const traceOf = (env: Record<string, string> | undefined) => ({
    TRACEPARENT: env?.["TRACEPARENT"],
    TRACESTATE: env?.["TRACESTATE"],
    BAGGAGE: env?.["BAGGAGE"],
  });
  beforeEach(() => resetRecorder(recorder));

  test("the caller's environment reaches the plugin as it is", async () => {
    const env = invokeEnv(
      { command: "ADD", containerID: "c1", netNS: "/run/netns/x", ifName: "eth0", path: [dir] },
      { PATH: "/bin", ...runtimeTrace },
    );
    const result = await execPluginWithResult(recorder, conf, env, quiet);
    assert.deepEqual(toCurrentResult(result).ips?.[0]?.address, RECORDER_RESULT.ips[0]!.address);
    assert.deepEqual(traceOf(recordedEnv(recorder)), runtimeTrace);
  });

  test("a delegate gets the delegating plugin's trace context (from its call's environment)", async () => {
    const pluginEnv: Env = {
      PATH: "/bin",
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: "c1",
      CNI_NETNS: "/run/netns/x",
      CNI_IFNAME: "eth0",
      CNI_PATH: dir,
      ...runtimeTrace,
    };
    await delegateAdd("recorder", conf, { env: pluginEnv, exec: quiet });
    assert.deepEqual(traceOf(recordedEnv(recorder)), runtimeTrace);
    resetRecorder(recorder);
    await delegateDel("recorder", conf, { env: pluginEnv, exec: quiet });
    assert.equal(recordedEnv(recorder)?.["CNI_COMMAND"], "DEL");
    assert.deepEqual(traceOf(recordedEnv(recorder)), runtimeTrace);
  });

  test("a call's own trace context replaces the environment's (TRACESTATE and BAGGAGE of the other trace go)", async () => {
    const env = invokeEnv({ command: "DEL", containerID: "c1", ifName: "eth0", path: [dir] }, { PATH: "/bin", ...runtimeTrace });
    await execPluginWithoutResult(recorder, conf, env, quiet, { traceContext: callTrace });
    assert.deepEqual(traceOf(recordedEnv(recorder)), { TRACEPARENT: callTrace.traceparent, TRACESTATE: callTrace.tracestate, BAGGAGE: undefined });
    resetRecorder(recorder);
    await getVersionInfo(recorder, quiet, { traceContext: { ...callTrace, baggage: "k=v" } });
    assert.deepEqual(traceOf(recordedEnv(recorder)), { TRACEPARENT: callTrace.traceparent, TRACESTATE: callTrace.tracestate, BAGGAGE: "k=v" });
  });

  test("a call's trace context with an invalid traceparent is ignored: the environment's pass", async () => {
    const env = invokeEnv({ command: "DEL", containerID: "c1", ifName: "eth0", path: [dir] }, { PATH: "/bin", ...runtimeTrace });
    await execPluginWithoutResult(recorder, conf, env, quiet, { traceContext: { traceparent: "00-not-a-trace-01" } });
    assert.deepEqual(traceOf(recordedEnv(recorder)), runtimeTrace);
  });
});
