/**
 * Whether a network namespace has processes: against a /proc of the test's making (entries whose ns/net are links
 * to files standing for namespaces, one entry without its namespaces, one that is not a process), and against this
 * machine's /proc with this process's own namespace.
 */

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { netnsOccupancy, occupiedWhy } from "./netns-occupants.js";

const tempDir = useTempDirs();

/** A /proc whose processes (pid -> the file their ns/net names, and their comm) are given. */
function fakeProc(processes: Record<number, { netns: string; comm?: string }>): string {
  const proc = tempDir();
  for (const [pid, p] of Object.entries(processes)) {
    fs.mkdirSync(path.join(proc, pid, "ns"), { recursive: true });
    fs.symlinkSync(p.netns, path.join(proc, pid, "ns", "net"));
    if (p.comm !== undefined) fs.writeFileSync(path.join(proc, pid, "comm"), `${p.comm}\n`);
  }
  fs.mkdirSync(path.join(proc, "99")); // a process that left: no ns/net to read
  fs.mkdirSync(path.join(proc, "sys", "ns"), { recursive: true }); // not a process
  return proc;
}

test("a process whose ns/net is the namespace is found, with its command name", () => {
  const dir = tempDir();
  const [podNs, hostNs] = ["pod", "host"].map((n) => path.join(dir, n));
  for (const f of [podNs!, hostNs!]) fs.writeFileSync(f, "");
  const proc = fakeProc({ 10: { netns: hostNs!, comm: "init" }, 20: { netns: podNs!, comm: "pause" }, 30: { netns: podNs! } });
  assert.deepEqual(netnsOccupancy(podNs, proc), { occupant: { pid: 20, command: "pause" } });
  assert.equal(occupiedWhy(podNs, proc), `process 20 (pause) is in its network namespace ${podNs}`);
  fs.rmSync(path.join(proc, "20"), { recursive: true });
  assert.deepEqual(netnsOccupancy(podNs, proc), { occupant: { pid: 30, command: "?" } }, "a command name it cannot read");
});

test("no process in it, a path that names nothing, no path: no processes", () => {
  const dir = tempDir();
  const empty = path.join(dir, "empty");
  fs.writeFileSync(empty, "");
  const proc = fakeProc({ 10: { netns: path.join(dir, "other") } });
  fs.writeFileSync(path.join(dir, "other"), "");
  assert.equal(netnsOccupancy(empty, proc), undefined);
  assert.equal(netnsOccupancy(path.join(dir, "gone"), proc), undefined);
  assert.equal(netnsOccupancy(path.join(empty, "below-a-file"), proc), undefined);
  assert.equal(netnsOccupancy("", proc), undefined);
  assert.equal(netnsOccupancy(undefined, proc), undefined);
  assert.equal(occupiedWhy(empty, proc), undefined);
});

test("a path that cannot be examined is not taken as free", () => {
  const dir = tempDir();
  const loop = path.join(dir, "loop");
  fs.symlinkSync(loop, loop);
  const o = netnsOccupancy(loop, fakeProc({}));
  assert.ok(o && "unknown" in o && /ELOOP/.test(o.unknown), JSON.stringify(o));
  assert.match(occupiedWhy(loop, fakeProc({})) ?? "", /^whether its network namespace has processes is unknown: .*ELOOP/);
});

test("this machine's /proc: this process's network namespace has a process in it", () => {
  const o = netnsOccupancy(`/proc/${process.pid}/ns/net`);
  assert.ok(o && "occupant" in o, JSON.stringify(o));
});
