/**
 * Running the system tools the network layer is built on (iproute2, iptables, nft, nsenter). A failure
 * becomes a NetOpError naming the operation and carrying the kernel's/tool's reason.
 * @module
 */
import * as path from "./posix-path.js";
import { findTool, toolSearchPath } from "./tool-path.js";
import { phase } from "./phase-trace.js";

/** A failed network operation: what was attempted and why the kernel or the tool refused. */
export class NetOpError extends Error {
  constructor(
    readonly operation: string,
    readonly reason: string,
    readonly exitCode: number | null = null,
    /** What the tool printed before failing (some tools, like grep, report partial success this way). */
    readonly stdout?: string,
  ) {
    super(`${operation}: ${reason}`);
    this.name = "NetOpError";
  }
  /** Whether the reason says the object does not exist (for idempotent deletes). */
  get isNotFound(): boolean {
    return /cannot find device|does not exist|no such (file|device|process)|not found|cannot find|no chain\/target\/match|bad rule/i.test(
      this.reason,
    );
  }
  /** Whether the reason says the object exists already (for idempotent creates). */
  get isExists(): boolean {
    return /file exists|already exists|chain already exists/i.test(this.reason);
  }
}

export interface ToolResult {
  stdout: string;
  stderr: string;
}

let spawnCount = 0;
const spawnsByTool = new Map<string, number>();
/** How many tool processes this process has started (the process budget of a plugin call). */
export const toolSpawnCount = (): number => spawnCount;
/** How many processes of one tool (`ip`, `nsenter`...) this process has started. */
export const toolSpawnsOf = (cmd: string): number => spawnsByTool.get(cmd) ?? 0;

/**
 * The environment of a tool: PATH as tools are looked up (toolSearchPath: no relative entries, so a tool that runs
 * another by name, as nsenter runs ip, cannot take it from the working directory either), and the C locale (error
 * texts are matched, e.g. "File exists").
 */
const toolEnv = (): NodeJS.ProcessEnv => ({ ...process.env, PATH: toolSearchPath().join(path.delimiter), LC_ALL: "C" });

const resolved = new Map<string, string>();
/**
 * A tool's absolute path (findTool; not every runtime's spawn looks in the child's PATH), remembered once found;
 * undefined when no directory has it (nothing is spawned then, so no other lookup can find one elsewhere).
 */
function resolveTool(cmd: string): string | undefined {
  let found = resolved.get(cmd);
  if (!found) {
    found = findTool(cmd);
    if (found) resolved.set(cmd, found);
  }
  return found;
}

/** Runs a tool; resolves with its output, or rejects with a NetOpError described by `operation`. */
export function runTool(cmd: string, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  return phase(
    "spawn",
    `${cmd} ${args
      .filter((a) => a !== "--wait" && a !== "-w")
      .slice(0, 3)
      .join(" ")}`.trim(),
    () => spawnTool(cmd, args, operation, input),
  );
}

function spawnTool(cmd: string, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const file = resolveTool(cmd);
    if (!file) {
      reject(new NetOpError(operation, `cannot run ${cmd}: no executable ${cmd} in ${toolSearchPath().join(path.delimiter)}`));
      return;
    }
    spawnCount++;
    spawnsByTool.set(cmd, (spawnsByTool.get(cmd) ?? 0) + 1);
    // Loaded on first use: a call whose steps all go over netlink never runs a tool (docs/startup.md).
    const { spawn } = process.getBuiltinModule("node:child_process");
    const child = spawn(file, args, { stdio: ["pipe", "pipe", "pipe"], env: toolEnv(), argv0: cmd });
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
      else reject(new NetOpError(operation, (stderr || stdout).trim() || `${cmd} exited with status ${code}`, code, stdout));
    });
    child.stdin.end(input ?? "");
  });
}
