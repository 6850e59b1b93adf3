/**
 * Resident servers a test started, found and cleaned up: their pids by socket, the cgroups an auto-started one
 * made for itself (resident/own-cgroup.ts), and a server run in the test's own namespaces.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmdirSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { hierarchies, ownCgroupName } from "#resident/own-cgroup.js";
import { type Cleanup, CNITOOL } from "./harness.js";

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

/** A test's own resident socket directory (root-only) and a host-local config whose store is beside it. */
export interface SocketDirFixture {
  dir: string;
  socket: string;
  conf: { cniVersion: string; name: string; type: string; ipam: { type: string; subnet: string; dataDir: string } };
}

/**
 * A maker of fresh socket directories under `base` (`base` read when called, so it may be set in a `before`), each
 * with a host-local config on `subnet` named `<prefix><n>`; the servers a test starts on them are killed at clean-up.
 */
export function socketDirs(cleanup: Cleanup, base: () => string, prefix: string, subnet: string): () => SocketDirFixture {
  let n = 0;
  return () => {
    const dir = path.join(base(), `t${++n}`);
    mkdirSync(path.join(dir, "run"), { recursive: true, mode: 0o700 });
    const socket = path.join(dir, "run", "plugins.sock");
    cleanup.add(() => killServers(socket));
    const conf = {
      cniVersion: "1.0.0",
      name: `${prefix}${n}`,
      type: "host-local",
      ipam: { type: "host-local", subnet, dataDir: path.join(dir, "store") },
    };
    return { dir, socket, conf };
  };
}
