// ResidentFirstExec's choice of which calls it takes to the server: the calls it must exec are never sent (the
// listener on the socket sees no connection), whatever the plugin answers. The served path needs Bun (the
// listener proof's FFI) and a real server: src/integration/resident-direct.test.ts.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { ResidentFirstExec } from "./resident-exec.js";

const tempDir = useTempDirs("tscni-resident-exec-");
const RESULT = JSON.stringify({ cniVersion: "1.0.0", interfaces: [], ips: [] });

/** A plugin script that prints a result; `mark`: the build mark a launcher carries, if any. */
function plugin(dir: string, mark?: string): string {
  const file = path.join(dir, "bridge");
  writeFileSync(file, `#!/bin/sh\ncat >/dev/null\necho '${RESULT}'\nexit 0\n${mark !== undefined ? `# \ntscni-build-id:${mark}\n` : ""}`);
  chmodSync(file, 0o755);
  return file;
}

/** A listener on a socket in `dir` that counts the connections it gets. */
async function listener(dir: string): Promise<{ socket: string; connections: () => number; close(): void }> {
  const socket = path.join(dir, "plugins.sock");
  let count = 0;
  const server = net.createServer((s) => {
    count++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return { socket, connections: () => count, close: () => server.close() };
}

const env = (socket: string, extra: Record<string, string> = {}) => ({
  PATH: process.env["PATH"] ?? "",
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "c1",
  CNI_NETNS: "/var/run/netns/none",
  CNI_IFNAME: "eth0",
  CNI_PATH: "/nonexistent",
  TSCNI_RESIDENT_SOCKET: socket,
  TSCNI_RESIDENT_CONF: "/nonexistent/resident",
  ...extra,
});

test("a plugin of this build is tried on the server (here the listener is no server: the call is exec'd)", async () => {
  const dir = tempDir();
  const l = await listener(dir);
  try {
    const exec = new ResidentFirstExec({ build: "b1" });
    const out = await exec.execPlugin(plugin(dir, "b1"), Buffer.from("{}"), env(l.socket));
    assert.equal(out.toString().trim(), RESULT);
    assert.equal(l.connections(), 1, "it connected");
    assert.equal(exec.served, 0, "a listener that is not provably the server gets no call");
  } finally {
    l.close();
  }
});

test("another build, a file without the mark, exec mode, VERSION, STATUS and calls with a time limit are exec'd unsent", async () => {
  const dir = tempDir();
  const l = await listener(dir);
  try {
    const cases: [string, string | undefined, Record<string, string>, { timeoutMs?: number }][] = [
      ["another build", "b2", {}, {}],
      ["no mark", undefined, {}, {}],
      ["exec mode", "b1", { TSCNI_RESIDENT: "exec" }, {}],
      ["no socket", "b1", { TSCNI_RESIDENT_SOCKET: "" }, {}],
      ["VERSION", "b1", { CNI_COMMAND: "VERSION" }, {}],
      ["STATUS", "b1", { CNI_COMMAND: "STATUS" }, {}],
      ["a time limit", "b1", {}, { timeoutMs: 60_000 }],
    ];
    for (const [what, mark, extra, options] of cases) {
      const exec = new ResidentFirstExec({ build: "b1" });
      const out = await exec.execPlugin(plugin(dir, mark), Buffer.from("{}"), env(l.socket, extra), options);
      assert.equal(out.toString().trim(), RESULT, what);
      assert.equal(l.connections(), 0, `${what}: nothing was sent`);
    }
  } finally {
    l.close();
  }
});
