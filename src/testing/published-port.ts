/**
 * A published port end to end: a TCP server answering "hello" inside a container namespace, and a client that
 * connects from any namespace and returns what it was told (or why not).
 * @module
 */
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import type { Cleanup, Netns } from "./harness.js";

/** Starts a TCP server answering "hello" on `port` (IPv4 and IPv6) inside `ns`; stopped at cleanup. */
export async function startHelloServer(cleanup: Cleanup, ns: Netns, port = 80): Promise<void> {
  const script = `require('net').createServer((s) => s.end('hello')).listen(${port}, '::', () => console.log('ready'))`;
  const child = spawn("ip", ["netns", "exec", ns.name, process.execPath, "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  cleanup.add(() => child.kill());
  await new Promise<void>((resolve, reject) => {
    let err = "";
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    child.stdout.on("data", (b: Buffer) => b.toString().includes("ready") && resolve());
    child.on("exit", (code) => reject(new Error(`hello server in ${ns.name} exited (${code}): ${err}`)));
  });
}

const CLIENT = [
  "const [host, port] = process.argv.slice(1);",
  "const s = require('net').connect({ host, port: Number(port) });",
  "let d = ''; s.on('data', (x) => (d += x)); s.on('end', () => process.stdout.write(d));",
  "s.on('error', (e) => { console.error(e.message); process.exit(1); });",
  "s.setTimeout(2000, () => { console.error('timeout'); process.exit(1); });",
].join("\n");

/** Connects from `ns` to host:port and returns what the server said, trying `tries` times; `failed: <why>` if never. */
export async function fetchFrom(ns: Netns, host: string, port: number, tries = 10): Promise<string> {
  let last = "";
  for (let i = 0; i < tries; i++) {
    const r = await ns.run(process.execPath, ["-e", CLIENT, host, String(port)]);
    if (r.code === 0) return r.stdout;
    last = r.stderr.trim();
    if (i + 1 < tries) await sleep(300);
  }
  return `failed: ${last}`;
}
