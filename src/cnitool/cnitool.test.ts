import { useTempDirs } from "../testing/temp.js";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { readCommandLog, readDebug, stdinOf, writeDebug } from "../testing/plugins/noop-debug.js";
import { containerIdForNetns, parseCapArgs, parseCnitoolArgs, runCnitool } from "./cnitool.js";
import { CNITOOL, TEST_BIN } from "../testing/harness.js";
import { plantCacheEntry } from "../testing/cache-entries.js";

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
  fs.writeFileSync(path.join(confDir, "10-testnet.conflist"), `{
    "cniVersion": "${cniVersion}", "name": "testnet",
    "plugins": [{"type": "noop", "debugFile": ${JSON.stringify(debugFile)}, "commandLog": ${JSON.stringify(commandLog)}${extraPluginKeys}}]
  }`);
  const env: Record<string, string | undefined> = { PATH: process.env["PATH"], NETCONFPATH: confDir, CNI_PATH: TEST_BIN };
  return { confDir, cacheDir, work, debugFile, commandLog, env };
}

/** Runs cnitool in-process and captures its output. */
async function cnitool(argv: string[], env: Record<string, string | undefined>, cwd = "/") {
  let stdout = "";
  let stderr = "";
  const code = await runCnitool(argv, { env, cwd, stdout: (s) => { stdout += s; }, stderr: (s) => { stderr += s; } });
  return { code, stdout, stderr };
}

describe("containerIdForNetns", () => {
  const vectors: Array<[string, string]> = [
    ["/var/run/netns/cnitest", "cnitool-20c433bb2b1d6ede56d6"],
    ["/var/run/netns/testing", "cnitool-77383ca0a0715733ca6f"],
    ["/run/netns/test", "cnitool-8ae22670664f2caaa6b3"],
  ];
  for (const [netns, id] of vectors) {
    test(netns, () => {
      assert.equal(containerIdForNetns(netns), id);
    });
  }
});

describe("parseCnitoolArgs (CNI_ARGS)", () => {
  test("pairs", () => {
    assert.deepEqual(parseCnitoolArgs(""), []);
    assert.deepEqual(parseCnitoolArgs("FOO=BAR"), [["FOO", "BAR"]]);
    assert.deepEqual(parseCnitoolArgs("FOO=BAR;A=1"), [["FOO", "BAR"], ["A", "1"]]);
  });

  const bad: Array<[string, string]> = [
    ["FOO", "FOO"], ["FOO=", "FOO="], ["=BAR", "=BAR"], ["A=B=C", "A=B=C"], ["FOO=BAR;", ""], ["FOO=BAR;;A=1", ""],
  ];
  for (const [value, pair] of bad) {
    test(`invalid: ${JSON.stringify(value)}`, () => {
      assert.throws(() => parseCnitoolArgs(value), { message: `invalid CNI_ARGS pair ${JSON.stringify(pair)}` });
    });
  }
});

describe("parseCapArgs (CAP_ARGS)", () => {
  test("an object", () => {
    assert.deepEqual(parseCapArgs(`{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}`),
      { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] });
  });

  test("null is no capability arguments", () => {
    assert.deepEqual(parseCapArgs("null"), {});
  });

  test("invalid JSON keeps Go's text", () => {
    assert.throws(() => parseCapArgs("{nope"), (e: unknown) => {
      assert.ok((e as Error).message.includes("invalid character 'n' looking for beginning of object key string"), (e as Error).message);
      return true;
    });
  });

  test("not an object", () => {
    assert.throws(() => parseCapArgs("[1,2]"), (e: unknown) => {
      assert.ok((e as Error).message.includes("json: cannot unmarshal array into Go value of type map[string]interface {}"));
      return true;
    });
  });
});

describe("cnitool commands", { concurrency: true }, () => {
  test("add prints the result, runs ADD with cnitool's attachment, and caches it", async () => {
    const { cacheDir, debugFile, env } = setup();
    const netns = "/var/run/netns/cnitest";
    const { code, stdout, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", netns], env);
    assert.equal(stderr, "");
    assert.equal(code, 0);
    assert.equal(stdout, [
      "{",
      `    "cniVersion": "1.1.0",`,
      `    "ips": [`,
      "        {",
      `            "address": "10.1.2.3/24",`,
      `            "gateway": "10.1.2.1"`,
      "        }",
      "    ]",
      "}",
    ].join("\n"));
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
    assert.deepEqual(log.map((e) => e.Command), ["ADD", "DEL", "GC"]);
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
    assert.deepEqual((JSON.parse(stdinOf(debug.CmdArgs)) as Record<string, unknown>)["runtimeConfig"],
      { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] });
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
    fs.writeFileSync(path.join(confDir, "20-single.conf"),
      `{"cniVersion":"1.0.0","name":"single","type":"noop","debugFile":${JSON.stringify(debugFile)}}`);
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

  test("no CNI_PATH", async () => {
    const { cacheDir, env } = setup();
    delete env["CNI_PATH"];
    const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "add", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stderr, `Error: plugin type="noop" failed (add): no paths provided\n`);
  });

  test("CHECK of a config older than 0.4.0", async () => {
    const { cacheDir, env } = setup("0.3.1");
    const { code, stderr } = await cnitool(["--cache-dir", cacheDir, "check", "testnet", "/run/netns/x"], env);
    assert.equal(code, 1);
    assert.equal(stderr, `Error: configuration version "0.3.1" does not support the CHECK command\n`);
  });

  test("too few arguments (cobra's wording)", async () => {
    const { env } = setup();
    for (const [argv, n] of [[["add"], 0], [["del", "testnet"], 1], [["gc", "testnet"], 1]] as const) {
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
    assert.deepEqual(containers.map((c) => c.containerID), ["c1"]);
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
