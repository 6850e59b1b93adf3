/**
 * A PodNetworkManager in a test's host namespace (manager-driver.ts), driven over JSON lines from a test.
 * @module
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { type Netns, ROOT } from "./harness.js";

/** A manager in a host namespace, driven over JSON lines. */
export class ManagerClient {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on("line", (line) => {
      const msg = JSON.parse(line) as { id: number; ok?: unknown; error?: string };
      const w = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (msg.error !== undefined) w?.reject(new Error(msg.error));
      else w?.resolve(msg.ok);
    });
  }

  static async start(ns: Netns, options: Record<string, unknown>): Promise<ManagerClient> {
    const child = spawn(...ns.commandLine(process.execPath, [path.join(ROOT, "dist-test/testing/manager-driver.js")]), { env: ns.callEnv() });
    child.stderr.on("data", (b: Buffer) => process.stderr.write(`manager: ${b}`));
    const client = new ManagerClient(child);
    const started = new Promise((resolve, reject) => client.waiting.set(0, { resolve, reject }));
    child.stdin.write(JSON.stringify(options) + "\n");
    await started;
    return client;
  }

  call<T = unknown>(op: string, ...args: unknown[]): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.stdin.write(JSON.stringify({ id, op, args }) + "\n");
    });
  }

  stop(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}
