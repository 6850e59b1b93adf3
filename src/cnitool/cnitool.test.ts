import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { containerIdForNetns } from "#runtime/container-ids.js";
import { plantCacheEntry } from "#testing/cache-entries.js";
import { admitStandIn, startFakeCri } from "#testing/fake-cri.js";
import { CNITOOL, TEST_BIN } from "#testing/harness.js";
import { readCommandLog, readDebug, stdinOf, writeDebug } from "#testing/plugins/noop-debug.js";
import { useTempDirs } from "#testing/temp.js";
import { parseCapArgs, parseCnitoolArgs, runCnitool } from "./cnitool.js";

/** dist/test-bin (the noop plugin) and dist/bin (cnitool itself). */

const tempDir = useTempDirs();

const RESULT = `{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24","gateway":"10.1.2.1"}]}`;

/** A NETCONFPATH with one noop network, a cache dir, and the environment cnitool runs with. */
function setup(cniVersion = "1.1.0", extraPluginKeys = "") {
  const confDir = tempDir();
  const cacheDir = tempDir();
  const work = tempDir();
  const debugFile = path.join(work, "debug.json");
  const commandLog = path.join(work, "log.json");
  writeDebug(debugFile, { ReportResult: RESULT });
  fs.writeFileSync(
    path.join(confDir, "10-testnet.conflist"),
    `{
    "cniVersion": "${cniVersion}", "name": "testnet",
    "plugins": [{"type": "noop", "debugFile": ${JSON.stringify(debugFile)}, "commandLog": ${JSON.stringify(commandLog)}${extraPluginKeys}}]
  }`,
  );
  const env: Record<string, string | undefined> = { PATH: process.env["PATH"], NETCONFPATH: confDir, CNI_PATH: TEST_BIN };
  return { confDir, cacheDir, work, debugFile, commandLog, env };
}

/**
 * Runs cnitool in-process and captures its output. Node GC asks the tests' stand-in runtimes: under Node the CRI
 * listener rule can identify no listener (src/integration/node-gc-trust.test.ts tries the rule).
 */
async function cnitool(argv: string[], env: Record<string, string | undefined>, cwd = "/") {
  let stdout = "";
  let stderr = "";
  const code = await runCnitool(
    argv,
    {
      env,
      cwd,
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
    },
    { checkCriListener: admitStandIn },
  );
  return { code, stdout, stderr };
}

describe("parseCnitoolArgs (CNI_ARGS)", () => {
  test("pairs", () => {
    assert.deepEqual(parseCnitoolArgs(""), []);
    assert.deepEqual(parseCnitoolArgs("FOO=BAR"), [["FOO", "BAR"]]);
    assert.deepEqual(parseCnitoolArgs("FOO=BAR;A=1"), [
      ["FOO", "BAR"],
      ["A", "1"],
    ]);
  });

  const bad: Array<[string, string]> = [
    ["FOO", "FOO"],
    ["FOO=", "FOO="],
    ["=BAR", "=BAR"],
    ["A=B=C", "A=B=C"],
    ["FOO=BAR;", ""],
    ["FOO=BAR;;A=1", ""],
  ];
  for (const [value, pair] of bad) {
    test(`invalid: ${JSON.stringify(value)}`, () => {
      assert.throws(() => parseCnitoolArgs(value), { message: `invalid CNI_ARGS pair ${JSON.stringify(pair)}` });
    });
  }
});

describe("parseCapArgs (CAP_ARGS)", () => {
  test("an object", () => {
    assert.deepEqual(parseCapArgs(`{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}`), {
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
    });
  });

  test("null is no capability arguments", () => {
    assert.deepEqual(parseCapArgs("null"), {});
  });

  test("invalid JSON keeps Go's text", () => {
    assert.throws(
      () => parseCapArgs("{nope"),
      (e: unknown) => {
        assert.ok((e as Error).message.includes("invalid character 'n' looking for beginning of object key string"), (e as Error).message);
        return true;
      },
    );
  });

  test("not an object", () => {
    assert.throws(
      () => parseCapArgs("[1,2]"),
      (e: unknown) => {
        assert.ok((e as Error).message.includes("json: cannot unmarshal array into Go value of type map[string]interface {}"));
        return true;
      },
    );
  });
});

describe("cnitool commands", { concurrency: true }, () => {
  test("add prints the result, runs ADD with cnitool's attachment, and caches it", async () => {
    const { cacheDir, debugFile, env } = setup();
    const netns = "/var/run/netns/cnitest";
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", netns], env);
    assert.equal(stderr, "");
    assert.equal(code, 0);
    assert.equal(
      stdout,
      [
        "{",
        `    "cniVersion": "1.1.0",`,
        `    "ips": [`,
        "        {",
        `            "address": "10.1.2.3/24",`,
        `            "gateway": "10.1.2.1"`,
        "        }",
        "    ]",
        "}",
      ].join("\n"),
    );
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "ADD");
    assert.equal(debug.CmdArgs?.ContainerID, "cnitool-20c433bb2b1d6ede56d6");
    assert.equal(debug.CmdArgs?.Netns, netns);
    assert.equal(debug.CmdArgs?.IfName, "eth0");
    assert.equal(debug.CmdArgs?.Path, TEST_BIN);
    assert.equal(debug.CmdArgs?.Args, "");
    const stdin = JSON.parse(stdinOf(debug.CmdArgs)) as Record<string, unknown>;
    assert.equal(stdin["name"], "testnet");
    assert.equal(stdin["cniVersion"], "1.1.0");
    assert.ok(fs.existsSync(path.join(cacheDir, "results", "testnet-cnitool-20c433bb2b1d6ede56d6-eth0")));
  });

  test("del runs DEL with the cached result and removes the cache", async () => {
    const { cacheDir, debugFile, env } = setup();
    const netns = "/run/netns/test";
    assert.equal((await cnitool(["--cache-dir", cacheDir, "add", "testnet", netns], env)).code, 0);
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "del", "testnet", netns], env);
    assert.equal(stderr, "");
    assert.equal(code, 0);
    assert.equal(stdout, "");
    const debug = readDebug(debugFile);
    assert.equal(debug.Command, "DEL");
    assert.equal(debug.CmdArgs?.ContainerID, "cnitool-8ae22670664f2caaa6b3");
    const stdin = JSON.parse(stdinOf(debug.CmdArgs)) as Record<string, unknown>;
    assert.deepEqual(stdin["prevResult"], JSON.parse(RESULT));
    assert.deepEqual(fs.readdirSync(path.join(cacheDir, "results")), []);
  });

  test("check runs CHECK", async () => {
    const { cacheDir, debugFile, env } = setup();
    assert.equal((await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env)).code, 0);
    const { code, stdout } = await cnitool(["--cache-dir", cacheDir, "check", "testnet", "/run/netns/x"], env);
    assert.equal(code, 0);
    assert.equal(stdout, "");
    assert.equal(readDebug(debugFile).Command, "CHECK");
  });

  test("status runs STATUS (1.1.0)", async () => {
    const { cacheDir, debugFile, env } = setup();
    const { code } = await cnitool(["--cache-dir", cacheDir, "status", "testnet", "/run/netns/x"], env);
    assert.equal(code, 0);
    assert.equal(readDebug(debugFile).Command, "STATUS");
  });

  test("gc DELs every cached attachment of the network, then GCs without valid attachments", async () => {
    const { cacheDir, commandLog, env } = setup();
    assert.equal((await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env)).code, 0);
    const { code } = await cnitool(["--cache-dir", cacheDir, "gc", "testnet", "/run/netns/x"], env);
    assert.equal(code, 0);
    const log = readCommandLog(commandLog);
    assert.deepEqual(
      log.map((e) => e.Command),
      ["ADD", "DEL", "GC"],
    );
    const gc = JSON.parse(stdinOf(log[2]!.CmdArgs)) as Record<string, unknown>;
    assert.equal("cni.dev/valid-attachments" in gc, false);
    assert.deepEqual(fs.readdirSync(path.join(cacheDir, "results")), []);
  });

  test("ifname: --ifname, else CNI_IFNAME, else eth0; CNI_ARGS and CAP_ARGS are passed", async () => {
    const { cacheDir, debugFile, env } = setup("1.1.0", `, "capabilities": {"portMappings": true}`);
    env["CNI_IFNAME"] = "net1";
    env["CNI_ARGS"] = "FOO=BAR;A=1";
    env["CAP_ARGS"] = `{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}],"other":1}`;
    assert.equal((await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env)).code, 0);
    let debug = readDebug(debugFile);
    assert.equal(debug.CmdArgs?.IfName, "net1");
    assert.equal(debug.CmdArgs?.Args, "FOO=BAR;A=1");
    assert.deepEqual((JSON.parse(stdinOf(debug.CmdArgs)) as Record<string, unknown>)["runtimeConfig"], {
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
    });
    assert.equal((await cnitool(["--cache-dir", cacheDir, "--ifname", "net2", "add", "testnet", "/run/netns/x"], env)).code, 0);
    debug = readDebug(debugFile);
    assert.equal(debug.CmdArgs?.IfName, "net2");
    assert.equal((await cnitool(["--cache-dir", cacheDir, "add", "-i", "net3", "testnet", "/run/netns/x"], env)).code, 0);
    assert.equal(readDebug(debugFile).CmdArgs?.IfName, "net3");
  });

  test("a relative netns is made absolute against the working directory", async () => {
    const { cacheDir, debugFile, env } = setup();
    assert.equal((await cnitool(["--cache-dir", cacheDir, "add", "testnet", "netns/../blue"], env, "/var/run")).code, 0);
    const debug = readDebug(debugFile);
    assert.equal(debug.CmdArgs?.Netns, "/var/run/blue");
    assert.equal(debug.CmdArgs?.ContainerID, containerIdForNetns("/var/run/blue"));
  });

  test("a single-plugin .conf network works too", async () => {
    const { confDir, cacheDir, debugFile, env } = setup();
    fs.writeFileSync(
      path.join(confDir, "20-single.conf"),
      `{"cniVersion":"1.0.0","name":"single","type":"noop","debugFile":${JSON.stringify(debugFile)}}`,
    );
    const { code, stdout } = await cnitool(["--cache-dir", cacheDir, "add", "single", "/run/netns/x"], env);
    assert.equal(code, 0);
    assert.equal(JSON.parse(stdout).cniVersion, "1.1.0");
    assert.equal(readDebug(debugFile).Command, "ADD");
  });
});

describe("cnitool errors and exit codes", { concurrency: true }, () => {
  test("an unknown network", async () => {
    const { cacheDir, confDir, env } = setup();
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "nope", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.equal(stderr, `Error: no net configuration with name "nope" in ${confDir}\n`);
  });

  test("a missing NETCONFPATH directory", async () => {
    const { cacheDir, env } = setup();
    env["NETCONFPATH"] = "/nonexistent/net.d";
    const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stderr, "Error: no net configurations found in /nonexistent/net.d\n");
  });

  test("an invalid CNI_ARGS", async () => {
    const { cacheDir, debugFile, env } = setup();
    env["CNI_ARGS"] = "FOO=BAR;";
    const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stderr, `Error: invalid CNI_ARGS pair ""\n`);
    assert.equal(readDebug(debugFile).Command, undefined, "no plugin ran");
  });

  test("an invalid CAP_ARGS", async () => {
    const { cacheDir, env } = setup();
    env["CAP_ARGS"] = "[1]";
    const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.ok(stderr.startsWith("Error: "));
    assert.ok(stderr.includes("json: cannot unmarshal array into Go value of type map[string]interface {}"));
  });

  test("a failing plugin", async () => {
    const { cacheDir, debugFile, env } = setup();
    writeDebug(debugFile, { ReportError: "plugin error: banana" });
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.equal(stderr, `Error: plugin type="noop" failed (add): plugin error: banana\n`);
  });

  test('no CNI_PATH: named, before any plugin runs (upstream blames the plugin: "no paths provided")', async () => {
    const { cacheDir, env, commandLog } = setup();
    for (const value of [undefined, ""]) {
      if (value === undefined) delete env["CNI_PATH"];
      else env["CNI_PATH"] = value;
      for (const argv of [
        ["add", "testnet", "/run/netns/x"],
        ["validate", "testnet"],
        ["version", "noop"],
      ]) {
        const { code, stderr } = await cnitool(["--cache-dir", cacheDir, ...argv], env);
        assert.equal(code, 1);
        assert.equal(stderr, "Error: CNI_PATH is not set: name the directories of the plugins, e.g. CNI_PATH=/opt/cni/bin\n", argv.join(" "));
      }
    }
    assert.deepEqual(readCommandLog(commandLog), []);
  });

  test("--timeout takes seconds greater than 0, refused when read", async () => {
    const { cacheDir, env, commandLog } = setup();
    for (const bad of ["abc", "0", "-1", "1s", ""]) {
      const { code, stderr } = await cnitool(["--timeout", bad, "--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
      assert.equal(code, 1, bad);
      assert.equal(stderr, `error: option '--timeout <seconds>' argument '${bad}' is invalid. want a number of seconds greater than 0.\n`);
    }
    assert.deepEqual(readCommandLog(commandLog), []);
    assert.equal((await cnitool(["--timeout", "2.5", "--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env)).code, 0);
  });

  test("a config file that does not load is skipped with a warning, not a block on the networks after it", async () => {
    const { cacheDir, env, confDir } = setup();
    fs.writeFileSync(path.join(confDir, "05-broken.conflist"), "{");
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
    assert.equal(code, 0, stderr);
    assert.ok(stdout.includes("10.1.2.3/24"));
    assert.match(
      stderr,
      new RegExp(`^warning: skipped ${confDir}/05-broken\\.conflist: error parsing configuration list: unexpected end of JSON input`),
    );
    const missing = await cnitool(["--cache-dir", cacheDir, "del", "nope", "/run/netns/x"], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`Error: no net configuration with name "nope" in ${confDir}\n$`));
  });

  test("--version says which program this is; every subcommand's help lists the global options", async () => {
    let stdout = "";
    const io = {
      env: {},
      cwd: "/",
      stdout: (s: string) => {
        stdout += s;
      },
      stderr: () => undefined,
    };
    assert.equal(await runCnitool(["--version"], io, { describeProgram: () => "tscni 9.9.9: a test\n" }), 0);
    assert.equal(stdout, "tscni 9.9.9: a test\n");
    stdout = "";
    assert.equal(await runCnitool(["add", "--help"], io), 0);
    assert.match(stdout, /Global Options:\n(.*\n)*\s+--cache-dir <dir>/);
    assert.match(stdout, /--timeout <seconds>/);
  });

  test("CHECK of a config older than 0.4.0", async () => {
    const { cacheDir, env } = setup("0.3.1");
    const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "check", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stderr, `Error: configuration version "0.3.1" does not support the CHECK command\n`);
  });

  test("too few arguments (cobra's wording)", async () => {
    const { env } = setup();
    for (const [argv, n] of [
      [["add"], 0],
      [["del", "testnet"], 1],
      [["gc", "testnet"], 1],
    ] as const) {
      const { code, stderr } = await cnitool([...argv], env);
      assert.equal(code, 1);
      assert.equal(stderr, `Error: requires at least 2 arg(s), only received ${n}\n`);
    }
  });

  test("no command prints the help and succeeds", async () => {
    const { code, stdout } = await cnitool([], {});
    assert.equal(code, 0);
    assert.ok(stdout.includes("Usage: cnitool"));
    for (const verb of ["add", "check", "del", "gc", "status"]) assert.ok(stdout.includes(`  ${verb} `), verb);
  });

  test("--help succeeds", async () => {
    const { code, stdout } = await cnitool(["--help"], {});
    assert.equal(code, 0);
    assert.ok(stdout.includes("Usage: cnitool"));
  });

  test("an unknown command fails", async () => {
    const { code, stderr } = await cnitool(["bogus"], {});
    assert.equal(code, 1);
    assert.ok(stderr.includes("bogus"));
  });
});

describe("names that would reach outside the cache directory", { concurrency: true }, () => {
  test("del and check with such an --ifname fail naming it; the file it points at stays, no plugin runs", async () => {
    const { work, debugFile, env } = setup();
    const cacheDir = path.join(work, "cache");
    const ifName = "a/../../../v";
    const victim = path.join(cacheDir, "results", `testnet-${containerIdForNetns("/run/netns/x")}-${ifName}`);
    assert.equal(victim, path.join(work, "v"));
    fs.writeFileSync(victim, "precious");
    for (const verb of ["del", "check"]) {
      const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "--ifname", ifName, verb, "testnet", "/run/netns/x"], env);
      assert.equal(code, 1);
      assert.equal(stderr, `Error: interface name contains / or : or whitespace characters; ${JSON.stringify(ifName)}\n`);
    }
    assert.equal(fs.readFileSync(victim, "utf8"), "precious");
    assert.equal(readDebug(debugFile).Command, undefined, "no plugin ran");
  });

  test("network inspect lists only the cache entries whose names validate", async () => {
    const { cacheDir, env } = setup();
    const config = { cniVersion: "1.1.0", name: "testnet", plugins: [{ type: "noop" }] };
    plantCacheEntry(cacheDir, "testnet-c1-eth0", { networkName: "testnet", containerID: "c1", ifName: "eth0" }, config);
    plantCacheEntry(cacheDir, "testnet-c2-eth0", { networkName: "testnet", containerID: "../../../v", ifName: "eth0" }, config);
    plantCacheEntry(cacheDir, "testnet-c3-eth0", { networkName: "testnet", containerID: "c3", ifName: "a/../../v" }, config);
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "network", "inspect", "testnet"], env);
    assert.equal(stderr, "");
    assert.equal(code, 0);
    const containers = (JSON.parse(stdout) as { containers: Array<{ containerID: string }> }).containers;
    assert.deepEqual(
      containers.map((c) => c.containerID),
      ["c1"],
    );
  });

  test("pod commands refuse a pod name that is not a file name or makes an invalid container ID", async () => {
    const { cacheDir, env } = setup();
    for (const name of ["..", ".", "a/../../b", "a b"]) {
      for (const verb of ["up", "down", "status"]) {
        const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "pod", verb, name], env);
        assert.equal(code, 1, `${verb} ${name}`);
        assert.ok(stderr.startsWith(`Error: invalid pod name ${JSON.stringify(name)}: `), stderr);
      }
    }
  });
});

describe("the cnitool executable", { concurrency: true }, () => {
  const run = (args: string[], env: Record<string, string | undefined>) =>
    spawnSync(CNITOOL, args, { env: env as NodeJS.ProcessEnv, encoding: "utf8" });

  test("add then del: exit 0, result on stdout", () => {
    const { cacheDir, debugFile, env } = setup();
    const add = run(["--cache-dir", cacheDir, "add", "testnet", "/var/run/netns/testing"], env);
    assert.equal(add.status, 0, add.stderr);
    assert.deepEqual(JSON.parse(add.stdout), JSON.parse(RESULT));
    assert.equal(readDebug(debugFile).CmdArgs?.ContainerID, "cnitool-77383ca0a0715733ca6f");
    const del = run(["--cache-dir", cacheDir, "del", "testnet", "/var/run/netns/testing"], env);
    assert.equal(del.status, 0, del.stderr);
    assert.equal(del.stdout, "");
  });

  test("an error: exit 1, message on stderr", () => {
    const { cacheDir, env } = setup();
    const r = run(["--cache-dir", cacheDir, "add", "nope", "/run/netns/x"], env);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.ok(r.stderr.includes(`no net configuration with name "nope"`));
  });

  test("too few arguments: exit 1", () => {
    const r = run(["add", "testnet"], { PATH: process.env["PATH"] });
    assert.equal(r.status, 1);
    assert.ok(r.stderr.includes("requires at least 2 arg(s), only received 1"));
  });

  test("no arguments: help, exit 0", () => {
    const r = run([], { PATH: process.env["PATH"] });
    assert.equal(r.status, 0);
    assert.ok(r.stdout.includes("Usage: cnitool"));
  });
});

describe("gc --cri-endpoint (node GC)", () => {
  const id = (c: string) => c.repeat(64);
  const criArgs = (containerID: string) => `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=${containerID}`;
  const hourAgo = () => new Date(Date.now() - 3_600_000);

  /** The noop network with attachments ADDed as a CRI runtime would (CNI_ARGS naming the sandbox), an hour old. */
  async function attached(ids: string[]) {
    const s = setup();
    for (const containerID of ids) {
      assert.equal(
        (
          await cnitool(["--cache-dir", s.cacheDir, "add", "testnet", `/run/netns/${containerID.slice(0, 8)}`], {
            ...s.env,
            CNI_ARGS: criArgs(containerID),
          })
        ).code,
        0,
      );
    }
    // cnitool names the container by its netns; give each entry the sandbox's ID, as a runtime's ADD would.
    const results = path.join(s.cacheDir, "results");
    for (const file of fs.readdirSync(results)) {
      const entry = JSON.parse(fs.readFileSync(path.join(results, file), "utf8")) as { containerId: string; cniArgs: string[][] };
      const sandbox = entry.cniArgs.find(([k]) => k === "K8S_POD_INFRA_CONTAINER_ID")![1]!;
      entry.containerId = sandbox;
      fs.rmSync(path.join(results, file));
      const renamed = path.join(results, `testnet-${sandbox}-eth0`);
      fs.writeFileSync(renamed, JSON.stringify(entry), { mode: 0o600 });
      fs.utimesSync(renamed, hourAgo(), hourAgo());
    }
    return s;
  }

  test("--dry-run lists what would go and changes nothing; a real run removes it and GCs the network", async () => {
    const s = await attached([id("a"), id("b")]);
    const cri = await startFakeCri(tempDir(), [{ id: id("b") }]);
    try {
      const before = fs.readdirSync(path.join(s.cacheDir, "results")).sort();
      const calls = readCommandLog(s.commandLog).length;
      const dry = await cnitool(["gc", "--cri-endpoint", cri.endpoint, "--cache-dir", s.cacheDir, "--dry-run"], s.env);
      assert.equal(dry.code, 0, dry.stderr);
      assert.deepEqual(dry.stdout.split("\n").filter(Boolean), [
        `runtime fake-cri 1.0 (CRI v1) at ${cri.endpoint}: 1 pod sandbox(es); 2 cached attachment(s) made by a CRI runtime`,
        `would remove: ${id("a")} on network "testnet" (eth0)`,
        `would send GC to network "testnet" with 1 valid attachment(s)`,
      ]);
      assert.deepEqual(fs.readdirSync(path.join(s.cacheDir, "results")).sort(), before);
      assert.equal(readCommandLog(s.commandLog).length, calls, "no plugin ran");

      const run = await cnitool(["gc", "--cri-endpoint", cri.endpoint, "--cache-dir", s.cacheDir], s.env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`^removed: ${id("a")} on network "testnet" \\(eth0\\)$`, "m"));
      // (ADDs running anywhere on the machine, other tests' too, count as valid attachments.)
      assert.match(run.stdout, /^sent GC to network "testnet" with \d+ valid attachment\(s\)$/m);
      assert.deepEqual(fs.readdirSync(path.join(s.cacheDir, "results")), [`testnet-${id("b")}-eth0`]);
      assert.deepEqual(
        readCommandLog(s.commandLog)
          .slice(calls)
          .map((e) => [e.Command, e.CmdArgs.ContainerID]),
        [
          ["DEL", id("a")],
          ["GC", ""],
        ],
      );
    } finally {
      cri.stop();
    }
  });

  test("--min-age keeps recent attachments; a runtime that knows no sandbox removes nothing without --force", async () => {
    const s = await attached([id("a")]);
    const cri = await startFakeCri(tempDir(), []);
    try {
      const young = await cnitool(["gc", "--cri-endpoint", cri.endpoint, "--cache-dir", s.cacheDir, "--min-age", "7200", "--dry-run"], s.env);
      assert.match(young.stdout, /^kept \(cached 36\d\d s ago, under the minimum age\): /m);
      const refused = await cnitool(["gc", "--cri-endpoint", cri.endpoint, "--cache-dir", s.cacheDir], s.env);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^Error: node GC removed nothing: the runtime knows no pod sandbox at all, .*\(--force removes them anyway\)\n$/);
      assert.equal(fs.readdirSync(path.join(s.cacheDir, "results")).length, 1);
      const forced = await cnitool(["gc", "--cri-endpoint", cri.endpoint, "--cache-dir", s.cacheDir, "--force"], s.env);
      assert.equal(forced.code, 0, forced.stderr);
      assert.deepEqual(fs.readdirSync(path.join(s.cacheDir, "results")), []);
    } finally {
      cri.stop();
    }
  });

  test("a runtime that cannot be reached: a clear error, nothing removed", async () => {
    const s = await attached([id("a")]);
    const socket = path.join(tempDir(), "nobody.sock");
    const r = await cnitool(["gc", "--cri-endpoint", `unix://${socket}`, "--cache-dir", s.cacheDir], s.env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^Error: CRI runtime at unix://${socket}: cannot reach unix://${socket}: .*ENOENT`));
    assert.equal(r.stdout, "");
    assert.equal(fs.readdirSync(path.join(s.cacheDir, "results")).length, 1);
  });

  test("usage: node GC flags need --cri-endpoint, which takes no network; upstream's gc keeps its arguments", async () => {
    const { env } = setup();
    const cases: Array<[string[], string]> = [
      [["gc", "--dry-run", "testnet", "/run/netns/x"], "Error: --dry-run is for node GC: it needs --cri-endpoint\n"],
      [["gc", "--min-age", "5", "testnet", "/run/netns/x"], "Error: --min-age is for node GC: it needs --cri-endpoint\n"],
      [["gc", "--delete-occupied", "testnet", "/run/netns/x"], "Error: --delete-occupied is for node GC: it needs --cri-endpoint\n"],
      [
        ["gc", "--cri-endpoint", "unix:///x.sock", "testnet"],
        "Error: gc --cri-endpoint takes no network or netns: it collects every network in NETCONFPATH\n",
      ],
      [
        ["gc", "--cri-endpoint", "tcp://1.2.3.4:5"],
        `Error: CRI endpoint "tcp://1.2.3.4:5" is not a unix socket: want unix:///absolute/path (e.g. unix:///run/containerd/containerd.sock)\n`,
      ],
      [["gc", "--cri-endpoint", "unix:///x.sock", "--min-age", "soon"], `Error: --min-age wants a whole number of seconds, not "soon"\n`],
      [["gc"], "Error: requires at least 2 arg(s), only received 0\n"],
    ];
    for (const [argv, stderr] of cases) assert.deepEqual(await cnitool(argv, env), { code: 1, stdout: "", stderr }, argv.join(" "));
    const noPath = await cnitool(["gc", "--cri-endpoint", "unix:///x.sock"], { ...env, CNI_PATH: "" });
    assert.match(noPath.stderr, /^Error: CNI_PATH is empty: node GC runs the plugins' DEL and GC/);
  });
});
