/**
 * The pod manager's exec (runtime/resident-exec.ts) under Bun, as the manager runs there: a call to one of tscni's
 * own plugins goes to the server without a launcher (the server counts it served; no plugin process runs), and to
 * a listener that is not provably the server nothing is sent (it gets not one byte) and the call runs as an exec;
 * a server that does not answer the hello has the call exec'd, one that takes the call and never answers fails it
 * naming itself, each within the launcher's bounds.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, CNITOOL, OUR_BIN, ROOT, runCommand, skipReason } from "#testing/harness.js";
import { startServer } from "#testing/servers.js";
import { standInServer } from "#testing/stand-in-server.js";

const BUN = path.join(ROOT, "node_modules/.bin/bun");
const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping the pod manager's server calls: ${skip}`);

/** ADD then DEL of host-local through ResidentFirstExec in a Bun process; what each call gave and how many were served. */
async function addAndDel(socket: string, dataDir: string): Promise<{ served: number; add: { ips?: { address: string }[] } }> {
  const script = `
    const { ResidentFirstExec } = await import(${JSON.stringify(path.join(ROOT, "dist/runtime/index.js"))});
    const exec = new ResidentFirstExec();
    const conf = Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "rdirect", type: "host-local",
      ipam: { type: "host-local", subnet: "10.251.7.0/24", dataDir: ${JSON.stringify(dataDir)} } }));
    const env = (command) => ({ PATH: process.env.PATH, TSCNI_RESIDENT: "manual", TSCNI_RESIDENT_SOCKET: ${JSON.stringify(socket)},
      CNI_COMMAND: command, CNI_CONTAINERID: "rdirect1", CNI_NETNS: "/run/netns/none", CNI_IFNAME: "eth0", CNI_PATH: ${JSON.stringify(OUR_BIN)} });
    const plugin = ${JSON.stringify(path.join(OUR_BIN, "host-local"))};
    const add = JSON.parse((await exec.execPlugin(plugin, conf, env("ADD"))).toString());
    await exec.execPlugin(plugin, conf, env("DEL"));
    console.log(JSON.stringify({ served: exec.served, add }));`;
  const r = await runCommand(BUN, ["-e", script]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

/** One ADD through a ResidentFirstExec of build `build` with short bounds, in a Bun process: its stdout or its error. */
async function boundedAdd(socket: string, plugin: string, build: string): Promise<{ out?: string; error?: string; ms: number }> {
  const script = `
    const { ResidentFirstExec } = await import(${JSON.stringify(path.join(ROOT, "dist/runtime/index.js"))});
    const exec = new ResidentFirstExec({ build: ${JSON.stringify(build)}, helloMs: 500, replyMarginMs: 300 });
    const env = { PATH: process.env.PATH, TSCNI_RESIDENT: "manual", TSCNI_RESIDENT_SOCKET: ${JSON.stringify(socket)},
      CNI_COMMAND: "ADD", CNI_CONTAINERID: "rdirect2", CNI_NETNS: "/run/netns/none", CNI_IFNAME: "eth0", CNI_PATH: "/nonexistent" };
    const t0 = performance.now();
    try {
      const out = (await exec.execPlugin(${JSON.stringify(plugin)}, Buffer.from("{}"), env)).toString();
      console.log(JSON.stringify({ out, ms: performance.now() - t0 }));
    } catch (e) {
      console.log(JSON.stringify({ error: e.message, ms: performance.now() - t0 }));
    }`;
  const r = await runCommand(BUN, ["-e", script]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

describe("the pod manager calls the server itself", { skip }, () => {
  const cleanup = new Cleanup();
  let base: string;
  let n = 0;
  before(() => {
    base = cleanup.dir("tscni-rdirect-");
  });
  after(() => cleanup.run());
  const fresh = () => {
    const dir = path.join(base, `s${++n}`);
    mkdirSync(path.join(dir, "run"), { recursive: true, mode: 0o700 });
    return { socket: path.join(dir, "run", "plugins.sock"), store: path.join(dir, "store") };
  };

  test("a call to a plugin of this build is served without its launcher", async () => {
    const { socket, store } = fresh();
    await startServer(cleanup, socket, []);
    const served = async () => {
      const r = await runCommand(CNITOOL, ["daemon", "status", "--socket", socket]);
      return (JSON.parse(r.stdout) as { served: number }).served;
    };
    const before = await served();
    const got = await addAndDel(socket, store);
    assert.equal(got.served, 2, "ADD and DEL went to the server");
    assert.match(got.add.ips?.[0]?.address ?? "", /^10\.251\.7\.\d+\/24$/);
    assert.equal(await served(), before + 2, "the server counts both (its status calls are not counted)");
    assert.deepEqual(
      readdirSync(path.join(store, "rdirect")).filter((f) => /^\d/.test(f)),
      [],
      "the DEL released the address",
    );
  });

  test("a listener that is not provably the server gets nothing: the call is exec'd", async () => {
    const { socket, store } = fresh();
    // Listens on the server's path without its lock (any root process can take a path; the lock proves the server).
    const listener = spawn(
      BUN,
      [
        "-e",
        `require("net").createServer((s) => s.on("data", () => console.log("GOT"))).listen(${JSON.stringify(socket)}, () => console.log("listening"))`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    cleanup.add(() => listener.kill("SIGKILL"));
    let out = "";
    listener.stdout!.on("data", (b: Buffer) => (out += b));
    for (let i = 0; i < 200 && !out.includes("listening"); i++) await sleep(25);
    assert.ok(out.includes("listening"), "the impostor listens");
    const got = await addAndDel(socket, store);
    assert.equal(got.served, 0);
    assert.match(got.add.ips?.[0]?.address ?? "", /^10\.251\.7\.\d+\/24$/, "the call ran as an exec");
    await sleep(100);
    assert.ok(!out.includes("GOT"), "the impostor got not one byte");
  });

  /** A plugin of build "rdirect-build" (a script with the launcher's mark) that prints a result when exec'd. */
  const markedPlugin = () => {
    const file = path.join(base, "bridge");
    writeFileSync(file, `#!/bin/sh\ncat >/dev/null\necho '{"cniVersion":"1.0.0","ips":[]}'\nexit 0\n# \ntscni-build-id:rdirect-build\n`);
    chmodSync(file, 0o755);
    return file;
  };

  test("a server that does not answer the hello: the call is exec'd after the launcher's bound", async () => {
    const { socket } = fresh();
    const server = await standInServer(socket, "(s) => s.on('data', () => undefined)");
    cleanup.add(() => server.stop());
    const got = await boundedAdd(socket, markedPlugin(), "rdirect-build");
    assert.equal(got.error, undefined);
    assert.match(got.out ?? "", /"ips":\[\]/, "exec'd");
    assert.ok(got.ms >= 450, `it waited for the hello's bound (${got.ms} ms)`);
  });

  test("a server that takes the call and never answers: the call fails naming the server", async () => {
    const { socket } = fresh();
    // Y with a time limit of 200 ms, then silence.
    const server = await standInServer(socket, "(s) => s.once('data', () => s.write(Buffer.from([0x59, 200, 0, 0, 0])))");
    cleanup.add(() => server.stop());
    const got = await boundedAdd(socket, markedPlugin(), "rdirect-build");
    assert.match(got.error ?? "", /did not answer the call within 1 s; it may still be running there/);
    assert.ok(got.ms >= 450 && got.ms < 5000, `within its limit and the margin (${got.ms} ms)`);
  });
});
