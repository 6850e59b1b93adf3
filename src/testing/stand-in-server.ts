/**
 * A stand-in for the resident server that the launcher trusts as it trusts the real one (the test's own process
 * rules: root, its namespaces, capabilities and confinement, and the socket's lock held by the listener), run by
 * Bun for its flock(2); what it does with a connection is the test's script. For tests of the launcher's side of
 * the protocol: a server that dies mid-call, one that never answers.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ROOT } from "./harness.js";

/** Bun, as the build uses it. */
const BUN = path.join(ROOT, "node_modules/.bin/bun");

/**
 * Starts a stand-in on `socket`: it takes `<socket>.lock`, listens, and runs `onConnection` (the source of a
 * function of a net.Socket) for each connection. Resolves once it listens; killed by `stop`.
 */
export async function standInServer(socket: string, onConnection: string): Promise<{ process: ChildProcess; stop(): void }> {
  const script = `
    const { dlopen } = require("bun:ffi");
    const fs = require("fs"), net = require("net");
    const { symbols } = dlopen("libc.so.6", { flock: { args: ["i32", "i32"], returns: "i32" } });
    const lock = fs.openSync(${JSON.stringify(`${socket}.lock`)}, "a", 0o600);
    if (symbols.flock(lock, 2) !== 0) process.exit(3);
    net.createServer(${onConnection}).listen(${JSON.stringify(socket)}, () => console.log("listening"));`;
  const child = spawn(BUN, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout!.on("data", (b: Buffer) => (out += b));
  for (let i = 0; i < 200 && !out.includes("listening") && child.exitCode === null; i++) await sleep(25);
  if (!out.includes("listening") || !existsSync(socket)) {
    child.kill("SIGKILL");
    throw new Error(`the stand-in server did not listen on ${socket}`);
  }
  return { process: child, stop: () => child.kill("SIGKILL") };
}
