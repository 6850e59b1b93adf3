/**
 * Resident servers a test started, found and cleaned up: their pids by socket, the cgroups an auto-started one
 * made for itself (resident/own-cgroup.ts), and a server run in the test's own namespaces.
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, rmdirSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { hierarchies, ownCgroupName } from "#resident/own-cgroup.js";
import { CNITOOL, type Cleanup } from "./harness.js";

/** The pids of servers whose command line names `socket`. */
export function serverPids(socket: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .flatMap((p) => {
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
        return argv.includes("daemon") && argv.includes(socket) ? [Number(p)] : [];
      } catch {
        return [];
      }
    });
}

/** Kills every server of `socket` and removes the cgroups an auto-started one made (empty once it is gone). */
export function killServers(socket: string): void {
  for (const pid of serverPids(socket)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
  const name = ownCgroupName(socket);
  for (let i = 0; i < 50; i++) {
    let left = 0;
    for (const h of hierarchies()) {
      try {
        rmdirSync(path.join(h.mount, name));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") left++;
      }
    }
    if (left === 0) return;
    // (a killed process leaves its cgroup a moment after the signal)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

/** A server the test runs (`prefix`: nsenter into the test's namespaces), with its stderr collected. */
export interface TestServer {
  process: ChildProcess;
  log(): string;
}

/** Starts `cnitool daemon --socket socket ...extra` through `prefix`, waiting until it serves. */
export async function startServer(cleanup: Cleanup, socket: string, prefix: string[], extra: string[] = []): Promise<TestServer> {
  const argv = [...prefix, CNITOOL, "daemon", "--socket", socket, "--warm-up", "0", ...extra];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr!.on("data", (b: Buffer) => (log += b));
  cleanup.add(() => killServers(socket));
  cleanup.add(() => child.kill("SIGKILL"));
  for (let i = 0; i < 200 && !log.includes("serving plugin calls"); i++) await sleep(25);
  if (!log.includes("serving plugin calls")) throw new Error(`the server on ${socket} did not start: ${log}`);
  return { process: child, log: () => log };
}
