/**
 * flock(2) on an open file, the lock Go's host-local takes on its store, so ours and Go's exclude each other.
 * Under the standalone (Bun) build it is one system call through FFI; under Node, which has no flock, util-linux
 * flock(1) is run on our descriptor (its fd 0), which locks our open file description just the same.
 * @module
 */
import { spawn } from "node:child_process";
import { bindLibc } from "./libc.js";

const LOCK_EX = 2;

type FlockFn = (fd: number, op: number) => number;
let ffiFlock: Promise<{ flock: FlockFn } | null> | undefined;

function flockWithTool(fd: number, lockPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (msg: string) => reject(new Error(`failed to lock ${lockPath}: ${msg}`));
    const child = spawn("flock", ["--exclusive", "0"], { stdio: [fd, "ignore", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
    child.on("error", (e) => fail(`cannot run flock(1) from util-linux: ${e.message}`));
    child.on("close", (code, signal) => {
      if (code === 0) resolve();
      else fail(`flock(1) exited with ${code ?? signal}${stderr ? `: ${stderr.trim()}` : ""}`);
    });
  });
}

/** Takes an exclusive flock on `fd` (released when the file is closed or the process exits). */
export async function flockExclusive(fd: number, lockPath: string): Promise<void> {
  const libc = await (ffiFlock ??= bindLibc<{ flock: FlockFn }>({ flock: { args: ["i32", "i32"], returns: "i32" } }));
  if (libc) {
    // Blocking the thread while waiting is fine: a plugin process does nothing else meanwhile.
    if (libc.flock(fd, LOCK_EX) !== 0) throw new Error(`failed to lock ${lockPath}: flock(2) failed`);
    return;
  }
  return flockWithTool(fd, lockPath);
}
