/**
 * tscni's plugin-daemon protocol: requests round-trip, anything else is refused with code 6 naming what is
 * wrong, and the plugin side reports a daemon it cannot reach (missing socket, stale socket, an HTTP server
 * such as Go's daemon) with a CNI error naming the socket, code 11 (50 for STATUS).
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CniError } from "#spec/errors.js";
import { useTempDirs } from "#testing/temp.js";
import { callDaemon, decodeRequest, encodeError, encodeRequest, encodeResult, readLine, STATUS_TIMEOUT_MS, type WireArgs } from "./protocol.js";

const tempDir = useTempDirs("tscni-dhcp-proto-");
const ARGS: WireArgs = {
  containerID: "c1",
  netns: "/run/netns/c1",
  ifName: "eth0",
  args: "K8S_POD_NAME=x",
  path: "/opt/cni/bin",
  stdinData: Buffer.from('{"name":"n\u00e9t"}'),
};

/** A unix-socket server that answers each request line with `answer(line)`. */
async function fakeDaemon(answer: (line: string) => string): Promise<{ socket: string; seen: string[] }> {
  const socket = path.join(tempDir(), "d.sock");
  const seen: string[] = [];
  const server = net.createServer((c) => {
    void readLine(c, "request").then((line) => {
      seen.push(line);
      c.end(answer(line));
    });
  });
  await new Promise<void>((r) => server.listen(socket, r));
  after(() => server.close());
  return { socket, seen };
}

describe("requests", () => {
  test("round-trip, the config bytes exactly", () => {
    const line = encodeRequest({ method: "ADD", args: ARGS });
    assert.ok(line.endsWith("\n"));
    assert.deepEqual(decodeRequest(line), { method: "ADD", args: ARGS });
  });

  test("anything else is code 6 naming what is wrong", () => {
    const bad = (line: string, what: RegExp) =>
      assert.throws(
        () => decodeRequest(line),
        (e: CniError) => e.code === 6 && what.test(e.msg),
      );
    bad("GET / HTTP/1.1", /not JSON/);
    bad("[]", /not a JSON object/);
    bad('{"protocol":"other"}', /protocol "other" is not tscni-dhcp\/1/);
    bad('{"protocol":"tscni-dhcp/1","method":"EXPLODE","args":{}}', /unknown method "EXPLODE"/);
    bad('{"protocol":"tscni-dhcp/1","method":"ADD","args":5}', /args is not an object/);
    bad('{"protocol":"tscni-dhcp/1","method":"ADD","args":{"ifName":7}}', /args\.ifName is not a string/);
    bad('{"protocol":"tscni-dhcp/1","method":"ADD","args":{"stdinData":"%%%"}}', /not base64/);
  });
});

describe("calling the daemon", () => {
  test("a result comes back; the netns is sent absolute", async () => {
    const d = await fakeDaemon(() => encodeResult({ cniVersion: "1.1.0", ips: [] }));
    assert.deepEqual(await callDaemon(d.socket, "ADD", { ...ARGS, netns: "relative/ns" }), { cniVersion: "1.1.0", ips: [] });
    assert.equal(decodeRequest(d.seen[0]!).args.netns, path.resolve("relative/ns"));
  });

  test("the daemon's errors keep their code, message and details", async () => {
    const d = await fakeDaemon(() => encodeError(new CniError(11, "no DHCP lease", "details here")));
    await assert.rejects(callDaemon(d.socket, "ADD", ARGS), { code: 11, msg: "no DHCP lease", details: "details here" });
  });

  test("no socket: code 11 naming it (51 for STATUS: no ADD, and the network's leases are not renewed)", async () => {
    const socket = path.join(tempDir(), "missing.sock");
    await assert.rejects(callDaemon(socket, "ADD", ARGS), {
      code: 11,
      msg: `cannot reach the dhcp daemon at ${socket}: the socket does not exist (is \`dhcp daemon\` running?)`,
    });
    await assert.rejects(callDaemon(socket, "STATUS", ARGS), {
      code: 51,
      msg: /^cannot reach the dhcp daemon at .*missing\.sock: the socket does not exist/,
    });
  });

  test("a daemon that takes the connection and never answers: STATUS fails (51) within its bound, never hangs", async () => {
    const socket = path.join(tempDir(), "wedged.sock");
    const held: net.Socket[] = [];
    const server = net.createServer((c) => void held.push(c)); // reads nothing, answers nothing
    await new Promise<void>((r) => server.listen(socket, r));
    after(() => {
      for (const c of held) c.destroy();
      server.close();
    });
    const started = Date.now();
    await assert.rejects(callDaemon(socket, "STATUS", ARGS), { code: 51, msg: /did not answer/ });
    const took = Date.now() - started;
    assert.ok(took >= STATUS_TIMEOUT_MS - 50 && took < STATUS_TIMEOUT_MS + 1500, `answered after ${took} ms`);
  });

  test("a stale socket (its daemon was killed): code 11 naming it", async () => {
    const socket = path.join(tempDir(), "stale.sock");
    const child = spawn(process.execPath, ["-e", `require("net").createServer().listen(${JSON.stringify(socket)})`], { stdio: "ignore" });
    while (!existsSync(socket)) await sleep(20);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    await assert.rejects(callDaemon(socket, "DEL", ARGS), {
      code: 11,
      msg: `cannot reach the dhcp daemon at ${socket}: nothing listens on the socket (a stale socket of a daemon that stopped?)`,
    });
  });

  test("an HTTP server there (Go's daemon speaks net/rpc over HTTP) is named as such", async () => {
    const d = await fakeDaemon(() => "HTTP/1.1 400 Bad Request\r\n\r\n");
    await assert.rejects(callDaemon(d.socket, "ADD", ARGS), { code: 999, msg: /does not speak tscni-dhcp\/1 \(an HTTP server: Go's dhcp daemon\?/ });
  });

  test("a daemon that closes without answering: code 11", async () => {
    const d = await fakeDaemon(() => "");
    await assert.rejects(callDaemon(d.socket, "CHECK", ARGS), { code: 11, msg: /did not answer/ });
  });
});
