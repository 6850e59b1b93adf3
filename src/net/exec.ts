/**
 * Running the system tools the network layer is built on (iproute2, iptables, nft, nsenter). A failure
 * becomes a NetOpError naming the operation and carrying the kernel's/tool's reason.
 * @module
 */
import { spawn } from "node:child_process";

/** A failed network operation: what was attempted and why the kernel or the tool refused. */
export class NetOpError extends Error {
  constructor(readonly operation: string, readonly reason: string, readonly exitCode: number | null = null) {
    super(`${operation}: ${reason}`);
    this.name = "NetOpError";
  }
  /** Whether the reason says the object does not exist (for idempotent deletes). */
  get isNotFound(): boolean {
    return /cannot find device|does not exist|no such (file|device|process)|not found|cannot find|no chain\/target\/match|bad rule/i.test(this.reason);
  }
  get isExists(): boolean {
    return /file exists|already exists|chain already exists/i.test(this.reason);
  }
}

export interface ToolResult { stdout: string; stderr: string }

let spawnCount = 0;
/** How many tool processes this process has started (the process budget of a plugin call). */
export const toolSpawnCount = (): number => spawnCount;

/** Runs a tool; resolves with its output, or rejects with a NetOpError described by `operation`. */
export function runTool(cmd: string, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  spawnCount++;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.stdin.on("error", () => undefined);
    child.on("error", (e) => reject(new NetOpError(operation, `cannot run ${cmd}: ${e.message}`)));
    child.on("close", (code) => {
      const stdout = Buffer.concat(out).toString();
      const stderr = Buffer.concat(err).toString();
      if (code === 0) resolve({ stdout, stderr });
      else reject(new NetOpError(operation, (stderr || stdout).trim() || `${cmd} exited with status ${code}`, code));
    });
    child.stdin.end(input ?? "");
  });
}
