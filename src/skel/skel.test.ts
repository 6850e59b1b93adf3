import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { parseJson } from "#go-json/json.js";
import { CniError } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { pluginSupports, type VersionInfo } from "#spec/version.js";
import { ALL_VERSIONS } from "#spec/versions.js";
import { nullResults } from "#testing/null-results.js";
import { loadPluginConf, parsePrevResult } from "./conf.js";
import { type CmdArgs, type Handler, type PluginFuncs, type PluginIO, pluginMain, runPlugin } from "./skel.js";

const BASE_STDIN = `{ "name":"skel-test", "some": "config", "cniVersion": "9.8.7" }`;

/** A handler recording its calls and returning (or throwing) what the test says. */
class FakeCmd {
  /** The CmdArgs of each call, without the call's stderr stream (checked on its own where it matters). */
  calls: Array<Omit<CmdArgs, "stderr">> = [];
  returns: unknown = undefined;
  throws: unknown = undefined;
  readonly fn: Handler = (args) => {
    const { stderr: _stderr, ...rest } = args;
    this.calls.push(rest);
    if (this.throws !== undefined) throw this.throws;
    return this.returns as ReturnType<Handler>;
  };
}

/** Per-test state: the environment, stdin and io skel is driven with, and the fake handlers. */
class Dispatch {
  env: Record<string, string | undefined> = {
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "some-container-id",
    CNI_NETNS: "/some/netns/path",
    CNI_IFNAME: "eth0",
    CNI_ARGS: "some;extra;args",
    CNI_PATH: "/some/cni/path",
  };
  stdin: string | Error = BASE_STDIN;
  stdinReads = 0;
  stdout = "";
  stderr = "";
  versionInfo: VersionInfo = pluginSupports("9.8.7", "10.0.0");
  /** (ADD must give a result: a JSON object, here as the string printed verbatim.) */
  add = Object.assign(new FakeCmd(), { returns: "{}" as unknown });
  check = new FakeCmd();
  del = new FakeCmd();
  gc = new FakeCmd();
  status = new FakeCmd();

  get funcs(): PluginFuncs {
    return { add: this.add.fn, check: this.check.fn, del: this.del.fn, gc: this.gc.fn, status: this.status.fn };
  }

  get io(): PluginIO {
    return {
      env: this.env,
      readStdin: async () => {
        this.stdinReads++;
        if (this.stdin instanceof Error) throw this.stdin;
        return Buffer.from(this.stdin);
      },
      writeStdout: (s) => {
        this.stdout += s;
      },
      writeStderr: (s) => {
        this.stderr += s;
      },
    };
  }

  run(about = ""): Promise<CniError | undefined> {
    return runPlugin(this.funcs, this.versionInfo, about, this.io);
  }

  expectedCmdArgs(): Omit<CmdArgs, "stderr"> {
    return {
      containerID: this.env["CNI_CONTAINERID"] ?? "",
      netns: this.env["CNI_NETNS"] ?? "",
      ifName: this.env["CNI_IFNAME"] ?? "",
      args: this.env["CNI_ARGS"] ?? "",
      path: this.env["CNI_PATH"] ?? "",
      netnsOverride: this.env["CNI_NETNS_OVERRIDE"] ?? "",
      stdinData: Buffer.from(this.stdin as string),
      env: this.env,
    };
  }

  noCallbacks(): void {
    for (const c of [this.add, this.check, this.del, this.gc, this.status]) assert.equal(c.calls.length, 0);
  }
}

/** Asserts a CNI error equal to Go's types.Error{code, msg, details}. */
function assertCniError(err: CniError | undefined, code: number, msg: string, details = ""): void {
  assert.ok(err instanceof CniError, `expected a CniError, got ${String(err)}`);
  assert.deepEqual({ code: err.code, msg: err.msg, details: err.details }, { code, msg, details });
}

/** Deletes one variable and checks it is reported missing (or that its absence is fine). */
async function envVarChecker(d: Dispatch, name: string, required: boolean): Promise<void> {
  delete d.env[name];
  const err = await d.run();
  if (required) assertCniError(err, 4, `required env variables [${name}] missing`);
  else assert.equal(err, undefined, `${name} should be optional, got ${err?.message}`);
}

const ENV_TABLE: Record<string, Array<[string, boolean]>> = {
  ADD: [
    ["CNI_COMMAND", true],
    ["CNI_CONTAINERID", true],
    ["CNI_NETNS", true],
    ["CNI_IFNAME", true],
    ["CNI_ARGS", false],
    ["CNI_PATH", true],
  ],
  CHECK: [
    ["CNI_COMMAND", true],
    ["CNI_CONTAINERID", true],
    ["CNI_NETNS", true],
    ["CNI_IFNAME", true],
    ["CNI_ARGS", false],
    ["CNI_PATH", true],
  ],
  DEL: [
    ["CNI_COMMAND", true],
    ["CNI_CONTAINERID", true],
    ["CNI_NETNS", false],
    ["CNI_IFNAME", true],
    ["CNI_ARGS", false],
    ["CNI_PATH", true],
  ],
  GC: [
    ["CNI_COMMAND", true],
    ["CNI_CONTAINERID", false],
    ["CNI_NETNS", false],
    ["CNI_IFNAME", false],
    ["CNI_ARGS", false],
    ["CNI_PATH", true],
  ],
  VERSION: [
    ["CNI_COMMAND", true],
    ["CNI_CONTAINERID", false],
    ["CNI_NETNS", false],
    ["CNI_IFNAME", false],
    ["CNI_ARGS", false],
    ["CNI_PATH", false],
  ],
};

let d: Dispatch;
beforeEach(() => {
  d = new Dispatch();
});

describe("ADD", () => {
  test("extracts env vars and stdin and calls add once", async () => {
    assert.equal(await d.run(), undefined);
    assert.equal(d.add.calls.length, 1);
    assert.equal(d.check.calls.length, 0);
    assert.equal(d.del.calls.length, 0);
    assert.deepEqual(d.add.calls[0], d.expectedCmdArgs());
  });

  test("invalid characters in the container ID", async () => {
    d.env["CNI_CONTAINERID"] = "some-%%container-id";
    assertCniError(await d.run(), 4, "invalid characters in containerID", "some-%%container-id");
    d.noCallbacks();
  });

  const badIfNames: Array<[string, string, string]> = [
    ["1234567890123456", "interface name is too long", "interface name should be less than 16 characters"],
    [".", "interface name is . or ..", ""],
    ["..", "interface name is . or ..", ""],
    ["test/test", "interface name contains / or : or whitespace characters", ""],
    ["test:test", "interface name contains / or : or whitespace characters", ""],
    ["test test", "interface name contains / or : or whitespace characters", ""],
  ];
  for (const [ifName, msg, details] of badIfNames) {
    test(`invalid interface name ${JSON.stringify(ifName)}`, async () => {
      d.env["CNI_IFNAME"] = ifName;
      assertCniError(await d.run(), 4, msg, details);
      d.noCallbacks();
    });
  }

  for (const [name, required] of ENV_TABLE["ADD"]!) {
    test(`${name} is ${required ? "required" : "optional"}`, () => envVarChecker(d, name, required));
  }

  test("reports every missing variable, in order", async () => {
    delete d.env["CNI_NETNS"];
    delete d.env["CNI_IFNAME"];
    delete d.env["CNI_PATH"];
    assertCniError(await d.run(), 4, "required env variables [CNI_NETNS,CNI_IFNAME,CNI_PATH] missing");
  });

  test("an empty variable counts as missing", async () => {
    d.env["CNI_PATH"] = "";
    assertCniError(await d.run(), 4, "required env variables [CNI_PATH] missing");
  });

  test("a validation error beats a later missing variable", async () => {
    d.env["CNI_CONTAINERID"] = "bad id";
    delete d.env["CNI_PATH"];
    assertCniError(await d.run(), 4, "invalid characters in containerID", "bad id");
  });

  test("a config without cniVersion is 0.1.0: accepted by a 0.1.0 plugin", async () => {
    d.stdin = `{ "name": "skel-test", "some": "config" }`;
    d.versionInfo = pluginSupports("0.1.0");
    assert.equal(await d.run(), undefined);
    assert.equal(d.add.calls.length, 1);
    assert.deepEqual(d.add.calls[0], d.expectedCmdArgs());
  });

  test("a config without cniVersion is 0.1.0: refused by a plugin without 0.1.0", async () => {
    d.stdin = `{ "name": "skel-test", "some": "config" }`;
    d.versionInfo = pluginSupports("4.3.2");
    assertCniError(await d.run(), 1, "incompatible CNI versions", `config is "0.1.0", plugin supports ["4.3.2"]`);
    d.noCallbacks();
  });

  test("a handler's Result is printed in the config's version", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "0.4.0" }`;
    d.versionInfo = pluginSupports("0.4.0", "1.1.0");
    const result: Result100 = { cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24", gateway: "10.1.2.1" }] };
    d.add.returns = result;
    assert.equal(await d.run(), undefined);
    assert.equal(
      d.stdout,
      [
        "{",
        `    "cniVersion": "0.4.0",`,
        `    "ips": [`,
        "        {",
        `            "version": "4",`,
        `            "address": "10.1.2.3/24",`,
        `            "gateway": "10.1.2.1"`,
        "        }",
        "    ],",
        `    "dns": {}`,
        "}",
      ].join("\n"),
    );
  });

  test("a result whose shape is not its version's is the plugin's error, never printed (JavaScript plugins)", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "0.2.0" }`;
    d.versionInfo = pluginSupports("0.2.0", "0.3.1", "1.1.0");
    d.add.returns = { cniVersion: "0.2.0", ips: [{ address: "10.1.2.3/24" }] }; // 1.x keys labelled with the config's version
    assertCniError(
      await d.run(),
      999,
      `plugin error: the result is labelled cniVersion "0.2.0" but has "ips", which results of that version do not have (a result takes: cniVersion, ip4, ip6, dns)`,
    );
    assert.equal(d.stdout, "");
    d.stdin = `{ "name": "skel-test", "cniVersion": "0.3.1" }`;
    d.add.returns = { cniVersion: "0.3.1", ips: [{ address: "10.1.2.3/24" }] };
    assertCniError(await d.run(), 999, `plugin error: the result is labelled cniVersion "0.3.1" but has an IP without "version"`);
  });

  test("a handler's string is printed verbatim", async () => {
    d.add.returns = `{"some":"thing"}`;
    assert.equal(await d.run(), undefined);
    assert.equal(d.stdout, `{"some":"thing"}`);
  });

  test("a plugin without an add handler answers a CNI error naming it", async () => {
    assertCniError(await runPlugin({}, d.versionInfo, "", d.io), 999, "plugin error: the plugin has no add handler: ADD is in every CNI version");
    assert.equal(d.stdout, "");
  });

  test("CNI_NETNS naming this process's own netns is refused before the handler runs (Go's skel checks after)", async () => {
    d.env["CNI_NETNS"] = "/proc/self/ns/net";
    assertCniError(await d.run(), 8, "plugin's netns and netns from CNI_NETNS should not be the same");
    assert.equal(d.add.calls.length, 0, "nothing was configured in the plugin's own namespace");
  });

  for (const override of ["1", "TRUE", "true", "True"]) {
    test(`CNI_NETNS_OVERRIDE=${override} disables the own-netns check`, async () => {
      d.env["CNI_NETNS"] = "/proc/self/ns/net";
      d.env["CNI_NETNS_OVERRIDE"] = override;
      assert.equal(await d.run(), undefined);
      assert.equal(d.add.calls[0]?.netnsOverride, override);
    });
  }

  test("CNI_NETNS_OVERRIDE=0 keeps the check", async () => {
    d.env["CNI_NETNS"] = "/proc/self/ns/net";
    d.env["CNI_NETNS_OVERRIDE"] = "0";
    assertCniError(await d.run(), 8, "plugin's netns and netns from CNI_NETNS should not be the same");
  });
});

describe("CHECK", () => {
  beforeEach(() => {
    d.env["CNI_COMMAND"] = "CHECK";
  });

  test("extracts env vars and stdin and calls check", async () => {
    assert.equal(await d.run(), undefined);
    assert.equal(d.add.calls.length, 0);
    assert.equal(d.del.calls.length, 0);
    assert.equal(d.check.calls.length, 1);
    assert.deepEqual(d.check.calls[0], d.expectedCmdArgs());
  });

  for (const [name, required] of ENV_TABLE["CHECK"]!) {
    test(`${name} is ${required ? "required" : "optional"}`, () => envVarChecker(d, name, required));
  }

  test("reports every missing variable", async () => {
    delete d.env["CNI_NETNS"];
    delete d.env["CNI_IFNAME"];
    delete d.env["CNI_PATH"];
    assertCniError(await d.run(), 4, "required env variables [CNI_NETNS,CNI_IFNAME,CNI_PATH] missing");
  });

  test("config version below 0.4.0", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "0.3.0", "some": "config" }`;
    assertCniError(await d.run(), 1, "config version does not allow CHECK");
    d.noCallbacks();
  });

  test("plugin without a version >= 0.4.0", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "0.4.0", "some": "config" }`;
    d.versionInfo = pluginSupports("0.1.0", "0.2.0", "0.3.0");
    assertCniError(await d.run(), 1, "plugin version does not allow CHECK");
    d.noCallbacks();
  });

  test("bad config version", async () => {
    d.stdin = `{ "cniVersion": "adsfsadf", "some": "config", "name": "test" }`;
    d.versionInfo = pluginSupports("0.1.0", "0.2.0", "0.3.0");
    assert.equal((await d.run())?.code, 6);
    d.noCallbacks();
  });

  test("bad network name", async () => {
    d.stdin = `{ "cniVersion": "0.4.0", "some": "config", "name": "te%%st" }`;
    d.versionInfo = pluginSupports("0.1.0", "0.2.0", "0.3.0", "0.4.0");
    assertCniError(await d.run(), 7, "invalid characters found in network name", "te%%st");
    d.noCallbacks();
  });

  test("bad plugin version", async () => {
    d.stdin = `{ "cniVersion": "0.4.0", "some": "config", "name": "test" }`;
    d.versionInfo = pluginSupports("0.1.0", "0.2.0", "adsfasdf");
    assert.equal((await d.run())?.code, 6);
    d.noCallbacks();
  });

  test("a newer plugin version still needs exact support of the config version", async () => {
    d.stdin = `{ "cniVersion": "0.4.0", "name": "test" }`;
    d.versionInfo = pluginSupports("1.0.0");
    assertCniError(await d.run(), 1, "incompatible CNI versions", `config is "0.4.0", plugin supports ["1.0.0"]`);
    d.noCallbacks();
  });
});

describe("GC", () => {
  beforeEach(() => {
    d.env["CNI_COMMAND"] = "GC";
    delete d.env["CNI_NETNS"];
    delete d.env["CNI_IFNAME"];
    delete d.env["CNI_CONTAINERID"];
    delete d.env["CNI_ARGS"];
  });

  test("extracts env vars and stdin and calls gc", async () => {
    assert.equal(await d.run(), undefined);
    assert.equal(d.add.calls.length, 0);
    assert.equal(d.check.calls.length, 0);
    assert.equal(d.del.calls.length, 0);
    assert.equal(d.gc.calls.length, 1);
    assert.deepEqual(d.gc.calls[0], {
      containerID: "",
      netns: "",
      ifName: "",
      args: "",
      path: "/some/cni/path",
      netnsOverride: "",
      stdinData: Buffer.from(BASE_STDIN),
      env: d.env,
    });
  });

  for (const [name, required] of ENV_TABLE["GC"]!) {
    test(`${name} is ${required ? "required" : "optional"}`, () => envVarChecker(d, name, required));
  }

  test("missing CNI_PATH", async () => {
    delete d.env["CNI_PATH"];
    assertCniError(await d.run(), 4, "required env variables [CNI_PATH] missing");
  });

  test("config version below 1.1.0", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "0.3.0", "some": "config" }`;
    assertCniError(await d.run(), 1, "config version does not allow GC");
    assert.equal(d.gc.calls.length, 0);
  });

  test("plugin without a version >= 1.1.0", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "1.1.0", "some": "config" }`;
    d.versionInfo = pluginSupports("0.1.0", "0.2.0", "0.3.0");
    assertCniError(await d.run(), 1, "plugin version does not allow GC");
    assert.equal(d.gc.calls.length, 0);
  });

  test("bad config version", async () => {
    d.stdin = `{ "cniVersion": "adsfsadf", "some": "config", "name": "test" }`;
    d.versionInfo = pluginSupports("1.1.0");
    assert.equal((await d.run())?.code, 6);
    assert.equal(d.gc.calls.length, 0);
  });

  test("bad network name is reported before the version", async () => {
    d.stdin = `{ "cniVersion": "0.4.0", "some": "config", "name": "te%%st" }`;
    d.versionInfo = pluginSupports("1.1.0");
    assert.equal((await d.run())?.code, 7);
    assert.equal(d.gc.calls.length, 0);
  });

  test("bad plugin version", async () => {
    d.stdin = `{ "cniVersion": "1.1.0", "some": "config", "name": "test" }`;
    d.versionInfo = pluginSupports("0.1.0", "0.2.0", "adsfasdf");
    assert.equal((await d.run())?.code, 6);
    assert.equal(d.gc.calls.length, 0);
  });
});

describe("STATUS", () => {
  beforeEach(() => {
    d.env = { CNI_COMMAND: "STATUS", CNI_PATH: "/some/cni/path" };
    d.stdin = `{ "name": "skel-test", "cniVersion": "1.1.0" }`;
    d.versionInfo = pluginSupports("1.1.0");
  });

  test("calls status with only CNI_PATH", async () => {
    assert.equal(await d.run(), undefined);
    assert.equal(d.status.calls.length, 1);
    assert.equal(d.status.calls[0]?.path, "/some/cni/path");
  });

  test("needs CNI_PATH", async () => {
    delete d.env["CNI_PATH"];
    assertCniError(await d.run(), 4, "required env variables [CNI_PATH] missing");
  });

  test("config version below 1.1.0", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "1.0.0" }`;
    d.versionInfo = pluginSupports("1.0.0", "1.1.0");
    assertCniError(await d.run(), 1, "config version does not allow STATUS");
  });

  test("plugin without a version >= 1.1.0", async () => {
    d.versionInfo = pluginSupports("1.0.0");
    assertCniError(await d.run(), 1, "plugin version does not allow STATUS");
  });

  test("an error code from the handler is kept (50: plugin not available)", async () => {
    d.status.throws = new CniError(50, "not ready");
    assertCniError(await d.run(), 50, "not ready");
  });
});

describe("DEL", () => {
  beforeEach(() => {
    d.env["CNI_COMMAND"] = "DEL";
  });

  test("calls del with the env vars and stdin", async () => {
    assert.equal(await d.run(), undefined);
    assert.equal(d.del.calls.length, 1);
    assert.equal(d.add.calls.length, 0);
    assert.deepEqual(d.del.calls[0], d.expectedCmdArgs());
  });

  for (const [name, required] of ENV_TABLE["DEL"]!) {
    test(`${name} is ${required ? "required" : "optional"}`, () => envVarChecker(d, name, required));
  }
});

describe("VERSION", () => {
  beforeEach(() => {
    d.env["CNI_COMMAND"] = "VERSION";
  });

  test("prints the supported versions", async () => {
    assert.equal(await d.run(), undefined);
    assert.deepEqual(parseJson(d.stdout), { cniVersion: "1.1.0", supportedVersions: ["9.8.7", "10.0.0"] });
    assert.equal(d.stdout, `{"cniVersion":"1.1.0","supportedVersions":["9.8.7","10.0.0"]}\n`);
    d.noCallbacks();
  });

  for (const [name, required] of ENV_TABLE["VERSION"]!) {
    test(`${name} is ${required ? "required" : "optional"}`, () => envVarChecker(d, name, required));
  }

  test("does not read stdin", async () => {
    d.stdin = new Error("banana");
    assert.equal(await d.run(), undefined);
    assert.equal(d.stdinReads, 0);
    assert.deepEqual(parseJson(d.stdout), { cniVersion: "1.1.0", supportedVersions: ["9.8.7", "10.0.0"] });
  });
});

describe("unknown or missing CNI_COMMAND", () => {
  test("an unknown command calls nothing and is an error", async () => {
    d.env["CNI_COMMAND"] = "NOPE";
    assertCniError(await d.run(), 4, "unknown CNI_COMMAND: NOPE");
    d.noCallbacks();
  });

  test("an unknown command still has its config validated first", async () => {
    d.env["CNI_COMMAND"] = "NOPE";
    d.stdin = `{ "name": "te%%st" }`;
    assert.equal((await d.run())?.code, 7);
  });

  test("a blank command with an about string prints it", async () => {
    d.env["CNI_COMMAND"] = "";
    assert.equal(await d.run("test framework v42"), undefined);
    assert.ok(d.stderr.includes("test framework v42"));
    assert.equal(d.stdout, "");
  });

  test("no environment and an about string: about and versions on stderr, success", async () => {
    d.env = {};
    assert.equal(await d.run("AWESOME PLUGIN"), undefined);
    d.noCallbacks();
    assert.equal(d.stderr, "AWESOME PLUGIN\nCNI protocol versions supported: 9.8.7, 10.0.0\n");
  });

  test("no environment and no about string: missing CNI_COMMAND", async () => {
    d.env = {};
    assertCniError(await d.run(), 4, "required env variables [CNI_COMMAND] missing");
    d.noCallbacks();
  });
});

describe("stdin and config errors", () => {
  test("stdin cannot be read", async () => {
    d.stdin = new Error("banana");
    assertCniError(await d.run(), 5, "error reading from stdin: banana");
    d.noCallbacks();
  });

  test("stdin is not JSON", async () => {
    d.stdin = "{";
    assertCniError(await d.run(), 6, "error unmarshall network config: unexpected end of JSON input");
    d.noCallbacks();
  });

  test("stdin has no network name", async () => {
    d.stdin = `{ "cniVersion": "9.8.7" }`;
    assertCniError(await d.run(), 7, "missing network name");
    d.noCallbacks();
  });

  test("network name of the wrong type", async () => {
    d.stdin = `{ "name": 5, "cniVersion": "9.8.7" }`;
    assert.equal((await d.run())?.code, 6);
  });
});

describe("handler errors", () => {
  test("a CniError is returned as is", async () => {
    d.add.throws = new CniError(1234, "insufficient something");
    assertCniError(await d.run(), 1234, "insufficient something");
  });

  test("any other error becomes code 999", async () => {
    d.add.throws = new Error("potato");
    assertCniError(await d.run(), 999, "potato");
  });

  test("an async handler's rejection is handled the same way", async () => {
    const err = await runPlugin(
      {
        add: async () => {
          throw new Error("async potato");
        },
      },
      d.versionInfo,
      "",
      d.io,
    );
    assertCniError(err, 999, "async potato");
  });
});

describe("pluginMain", () => {
  test("prints the error as indented JSON on stdout and sets exit code 1", async () => {
    d.add.throws = new Error("banana");
    const saved = process.exitCode;
    try {
      await pluginMain(d.funcs, d.versionInfo, "", d.io);
      assert.equal(process.exitCode, 1);
    } finally {
      process.exitCode = saved;
    }
    assert.equal(d.stdout, `{\n    "code": 999,\n    "msg": "banana"\n}`);
  });

  test("details are printed when present", async () => {
    d.add.throws = new CniError(7, "bad", "because");
    const saved = process.exitCode;
    try {
      await pluginMain(d.funcs, d.versionInfo, "", d.io);
    } finally {
      process.exitCode = saved;
    }
    assert.equal(d.stdout, `{\n    "code": 7,\n    "msg": "bad",\n    "details": "because"\n}`);
  });

  test("success leaves the exit code alone", async () => {
    const saved = process.exitCode;
    await pluginMain(d.funcs, d.versionInfo, "", d.io);
    assert.equal(process.exitCode, saved);
    assert.equal(d.stdout, "{}");
  });
});

describe("an error of a call with a trace context", () => {
  const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  test("one line on stderr names the call, the error and the trace; stdout holds only the error document", async () => {
    Object.assign(d.env, { TRACEPARENT: PARENT, TRACESTATE: "congo=t61rcWkgMzE", BAGGAGE: "user=alice" });
    d.stdin = `{ "name":"skel-test", "type": "bridge", "cniVersion": "9.8.7" }`;
    d.add.throws = new CniError(7, 'invalid "mtu"', "want an integer");
    const saved = process.exitCode;
    try {
      await pluginMain(d.funcs, d.versionInfo, "", d.io);
    } finally {
      process.exitCode = saved;
    }
    assert.equal(d.stdout, `{\n    "code": 7,\n    "msg": "invalid \\"mtu\\"",\n    "details": "want an integer"\n}`);
    assert.equal(
      d.stderr,
      'CNI plugin error: type="bridge" command="ADD" containerID="some-container-id" ifname="eth0" code=7 ' +
        `msg="invalid \\"mtu\\"; want an integer" TRACEPARENT="${PARENT}" TRACESTATE="congo=t61rcWkgMzE" BAGGAGE="user=alice"\n`,
    );
  });

  test("an error before the config is read is logged too, its values quoted so that they stay on one line", async () => {
    Object.assign(d.env, { TRACEPARENT: PARENT, CNI_COMMAND: "ADD\nforged line" });
    const err = await d.run();
    assert.equal(err?.code, 4);
    assert.equal(d.stderr.split("\n").length, 2, d.stderr);
    assert.match(
      d.stderr,
      /^CNI plugin error: type="" command="ADD\\nforged line" .* code=4 msg="unknown CNI_COMMAND: ADD\\nforged line" TRACEPARENT=/,
    );
  });

  test("without a trace context, and on success, nothing is written to stderr", async () => {
    d.add.throws = new CniError(7, "bad");
    assert.equal((await d.run())?.code, 7);
    d.env["TRACEPARENT"] = PARENT;
    d.add.throws = undefined;
    assert.equal(await d.run(), undefined);
    assert.equal(d.stderr, "");
  });
});

describe("loadPluginConf / parsePrevResult", () => {
  test("decodes the common keys and keeps the rest", () => {
    const { conf, raw } = loadPluginConf(Buffer.from(`{"cniVersion":"1.0.0","name":"n","type":"t","mtu":1400}`));
    assert.equal(conf.cniVersion, "1.0.0");
    assert.equal(conf.name, "n");
    assert.equal(conf.type, "t");
    assert.equal(raw["mtu"], 1400);
  });

  test("a config that does not decode is code 6", () => {
    assert.throws(
      () => loadPluginConf(Buffer.from("{")),
      (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.code, 6);
        return true;
      },
    );
  });

  test("no prevResult", () => {
    const { conf } = loadPluginConf(Buffer.from(`{"cniVersion":"1.0.0","name":"n","type":"t"}`));
    assert.equal(parsePrevResult(conf), undefined);
  });

  test("a prevResult is decoded in the config's version family", () => {
    const { conf } = loadPluginConf(
      Buffer.from(`{"cniVersion":"0.4.0","name":"n","type":"t","prevResult":{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}]}}`),
    );
    const prev = parsePrevResult(conf);
    assert.equal(prev?.cniVersion, "0.4.0");
  });

  test("a version-less prevResult takes the config's version", () => {
    const { conf } = loadPluginConf(
      Buffer.from(`{"cniVersion":"0.3.1","name":"n","type":"t","prevResult":{"ips":[{"version":"4","address":"10.1.2.3/24"}]}}`),
    );
    assert.equal(parsePrevResult(conf)?.cniVersion, "0.3.1");
  });

  test("a prevResult of another family is code 6", () => {
    const { conf } = loadPluginConf(
      Buffer.from(`{"cniVersion":"0.3.1","name":"n","type":"t","prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}}`),
    );
    assert.throws(() => parsePrevResult(conf), { code: 6 });
  });

  test("a prevResult with null entries (cni#1191, cni#1192) is a result or code 6 with a message, in every version", () => {
    for (const version of ALL_VERSIONS) {
      for (const { label, result } of nullResults(version)) {
        const { conf } = loadPluginConf(Buffer.from(JSON.stringify({ cniVersion: version, name: "n", type: "t", prevResult: result })));
        try {
          parsePrevResult(conf);
        } catch (e) {
          assert.ok(e instanceof CniError, `${label} at ${version}: ${String(e)}`);
          assert.equal(e.code, 6, `${label} at ${version}`);
          assert.match(e.msg, /^could not parse prevResult/, `${label} at ${version}`);
        }
      }
    }
  });

  test("an empty prevResult ({}) or a null one is no error (spec PR #1156: DEL is best effort)", () => {
    for (const prev of ["{}", "null"]) {
      const { conf } = loadPluginConf(Buffer.from(`{"cniVersion":"1.1.0","name":"n","type":"t","prevResult":${prev}}`));
      const parsed = parsePrevResult(conf);
      assert.ok(parsed === undefined || (parsed.cniVersion === "1.1.0" && !("ips" in parsed && parsed.ips?.length)), prev);
    }
  });
});

// The mistakes docs/plugin-author.md says skel catches at run time, as a JavaScript plugin (no compiler) makes them.
describe("a plugin's mistakes, caught at run time", () => {
  test("a result key its version does not have: code 999 naming the key and the keys of its place", async () => {
    d.env["CNI_COMMAND"] = "ADD";
    d.stdin = `{ "name": "skel-test", "cniVersion": "1.0.0" }`;
    d.versionInfo = pluginSupports("1.0.0");
    d.add.returns = { cniVersion: "1.0.0", ips: [{ address: "10.1.2.3/24", gatway: "10.1.2.1" }] };
    assertCniError(
      await d.run(),
      999,
      `plugin error: the result is labelled cniVersion "1.0.0" but ips[0] has "gatway", which results of that version do not have (ips[0] takes: interface, address, gateway)`,
    );
    assert.equal(d.stdout, "", "nothing printed but the error");
  });

  for (const [returns, what] of [
    [undefined, "returned undefined"],
    [null, "returned null"],
    ["", `returned a string that is not a JSON object ("")`],
    ["configured eth0", `returned a string that is not a JSON object ("configured eth0")`],
    ["[]", `returned a string that is not a JSON object ("[]")`],
    [42, "returned a number"],
    [[], "returned an array"],
  ] as const) {
    test(`ADD whose handler ${what}: "ADD gave no result"`, async () => {
      d.add.returns = returns;
      assertCniError(await d.run(), 999, `plugin error: ADD gave no result: its handler ${what}; it must return the result`);
      assert.equal(d.stdout, "");
    });
  }

  test("DEL without a del handler, CHECK without a check handler: code 999 naming the verb", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "1.0.0" }`;
    d.versionInfo = pluginSupports("0.4.0", "1.0.0");
    const addOnly = { add: d.add.fn };
    d.env["CNI_COMMAND"] = "DEL";
    assertCniError(
      await runPlugin(addOnly, d.versionInfo, "", d.io),
      999,
      "plugin error: the plugin has no del handler: DEL is in every CNI version",
    );
    d.env["CNI_COMMAND"] = "CHECK";
    assertCniError(
      await runPlugin(addOnly, d.versionInfo, "", d.io),
      999,
      "plugin error: the plugin has no check handler: CHECK is in every version from 0.4.0 on, and this call's config is one of them",
    );
    assertCniError(
      await runPlugin({ add: d.add.fn, check: "yes" } as unknown as PluginFuncs, d.versionInfo, "", d.io),
      999,
      "plugin error: the plugin has a check handler that is not a function (string): CHECK is in every version from 0.4.0 on, and this call's config is one of them",
    );
  });

  test("STATUS and GC without a handler answer success: ready, and nothing to collect", async () => {
    d.stdin = `{ "name": "skel-test", "cniVersion": "1.1.0" }`;
    d.versionInfo = pluginSupports("1.1.0");
    for (const command of ["STATUS", "GC"]) {
      d.env["CNI_COMMAND"] = command;
      assert.equal(await runPlugin({ add: d.add.fn, del: d.del.fn }, d.versionInfo, "", d.io), undefined, command);
    }
    assert.equal(d.stdout, "");
  });

  test("a bug (a TypeError): code 999 with its message; its stack on stderr under TSCNI_DEBUG=1", async () => {
    const bug = (): never => (undefined as unknown as { subnet: { ip: string } }).subnet.ip as never;
    const buggy = { add: () => bug() };
    const err = await runPlugin(buggy, d.versionInfo, "", d.io);
    assert.equal(err?.code, 999);
    assert.match(err?.msg ?? "", /Cannot read properties of undefined \(reading 'subnet'\)/);
    assert.equal(d.stderr, "", "no stack without TSCNI_DEBUG");
    d.env["TSCNI_DEBUG"] = "1";
    await runPlugin(buggy, d.versionInfo, "", d.io);
    assert.match(d.stderr, /^TypeError: Cannot read properties of undefined \(reading 'subnet'\)\n\s+at bug /);
    d.stderr = "";
    d.add.throws = new CniError(7, "bad config");
    await runPlugin(d.funcs, d.versionInfo, "", d.io);
    assert.equal(d.stderr, "", "a CniError is the plugin's answer, not a bug: no stack");
  });
});
