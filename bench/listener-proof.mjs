#!/usr/bin/env node
// What the launcher's proof that the listener is the server costs a call (issue 47): the proof that reads the
// listener's own descriptors (fdinfo, launcher/listener.h since issue 47) beside the one before it, which read
// the system-wide /proc/locks, each with no other locks on the node and with `--locks` byte-range locks held by
// nobody. The build before the change (`--old`, default 4b27a1b) is built in a worktree of its
// own; calls are host-local ADD+DEL pairs, each build's served by its own auto-started server, interleaved. Not part of the test suite.
//
//   node bench/listener-proof.mjs [--rounds 30] [--locks 30000] [--old <commit>] [--out docs/benchmarks-listener-proof.md]
//   (as root; `npm run build` first)
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const ROUNDS = Number(opt("--rounds", "30"));
const LOCKS = Number(opt("--locks", "30000"));
const OLD = opt("--old", "4b27a1b");
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const work = mkdtempSync(path.join(os.tmpdir(), "tscni-proof-"));
const cleanups = [() => rmSync(work, { recursive: true, force: true })];
process.on("exit", () => cleanups.reverse().forEach((f) => f()));

// The build before the change, whole (its server re-took its lock so that /proc/locks named it, which its
// launcher's proof needs), in a worktree of its own; each build then serves its own launcher on its own socket.
const oldTree = path.join(work, "old");
execFileSync("git", ["-C", ROOT, "worktree", "add", "--detach", oldTree, OLD], { stdio: "ignore" });
cleanups.push(() => spawnSync("git", ["-C", ROOT, "worktree", "remove", "--force", oldTree]));
symlinkSync(path.join(ROOT, "node_modules"), path.join(oldTree, "node_modules"));
execFileSync("npm", ["run", "--silent", "build"], { cwd: oldTree, stdio: "ignore" });
const oldBin = path.join(oldTree, "dist/bin");
const newBin = path.join(ROOT, "dist/bin");

const sockets = {};
for (const which of ["old", "new"]) {
  mkdirSync(path.join(work, `run-${which}`), { mode: 0o700 });
  sockets[which] = path.join(work, `run-${which}`, "plugins.sock");
}
const conf = JSON.stringify({
  cniVersion: "1.0.0",
  name: "proof",
  type: "host-local",
  ipam: { type: "host-local", subnet: "10.199.0.0/16", dataDir: path.join(work, "store") },
});
const env = (bin, id, cmd) => ({
  PATH: process.env.PATH,
  CNI_COMMAND: cmd,
  CNI_CONTAINERID: id,
  CNI_NETNS: "/run/netns/none",
  CNI_IFNAME: "eth0",
  CNI_PATH: bin,
  TSCNI_RESIDENT: "auto",
  TSCNI_RESIDENT_SOCKET: sockets[bin === oldBin ? "old" : "new"],
});
const call = (bin, id, cmd) => {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(path.join(bin, "host-local"), [], { env: env(bin, id, cmd), input: conf, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stdout}${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
};
for (const [which, bin] of [
  ["old", oldBin],
  ["new", newBin],
]) {
  cleanups.push(() => spawnSync(path.join(bin, "cnitool"), ["daemon", "stop", "--socket", sockets[which]]));
  call(bin, `warm-${which}`, "ADD");
  for (let i = 0; i < 200 && !existsSync(sockets[which]); i++) await sleep(25);
}
await sleep(1500); // the server's warm-up
let n = 0;
const measure = () => {
  const times = { old: [], new: [] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const [which, bin] of [
      ["old", oldBin],
      ["new", newBin],
    ]) {
      const id = `c${n++}`;
      times[which].push(call(bin, id, "ADD") + call(bin, id, "DEL"));
    }
  }
  return { old: median(times.old) / 2, new: median(times.new) / 2 };
};
measure(); // warm both
const quiet = measure();

// nobody's locks
const lockDir = mkdtempSync(path.join(os.tmpdir(), "tscni-proof-nobody-"));
chownSync(lockDir, 65534, 65534);
cleanups.push(() => rmSync(lockDir, { recursive: true, force: true }));
const locker = spawn(
  "setpriv",
  [
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--",
    "/usr/bin/python3",
    "-c",
    `import fcntl, os, resource, sys, time
base, files, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, files + 64), hard))
fds = []
for f in range(files):
    fd = os.open(os.path.join(base, "l%d" % f), os.O_RDWR | os.O_CREAT, 0o600)
    for i in range(100): fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 2 * i)
    fds.append(fd)
open(ready, "w").write("ok")
time.sleep(3600)`,
    lockDir,
    String(Math.ceil(LOCKS / 100)),
    path.join(lockDir, "ready"),
  ],
  { stdio: "inherit" },
);
cleanups.push(() => locker.kill("SIGKILL"));
for (let i = 0; i < 2400 && !existsSync(path.join(lockDir, "ready")); i++) await sleep(25);
const busy = measure();
const row = (what, m) => `| ${what} | ${m.old.toFixed(2)} ms | ${m.new.toFixed(2)} ms |`;
const report = [
  `A served host-local call (median of ${ROUNDS} ADD+DEL pairs, halved), the two builds interleaved, each served by its own auto-started server:`,
  "",
  "| foreign locks on the node | proof from /proc/locks (before) | proof from the listener's fdinfo (now) |",
  "|---|---|---|",
  row("none", quiet),
  row(`${Math.ceil(LOCKS / 100) * 100} held by nobody`, busy),
].join("\n");
console.log(report);
const out = opt("--out", "");
if (out) {
  writeFileSync(
    path.resolve(ROOT, out),
    `# What the listener proof costs a call\n\nWritten by \`node bench/listener-proof.mjs --out ${out}\` (issue 47) from its own run on ${new Date().toISOString().slice(0, 10)}; ` +
      `do not edit the numbers by hand. The launcher proves that the listener on the server's socket holds the server's lock ` +
      `before it sends a byte (docs/trust.md): before issue 47 by reading the system-wide /proc/locks, which the kernel builds in ` +
      `quadratic time and any user can make long; now from the listener's own fdinfo (its descriptor 3 first). The build before ` +
      `(${OLD}) is built in a worktree of its own.\n\n${report}\n`,
  );
}
process.exit(0);
