/**
 * Running a system program (the tools the network layer is built on: iproute2, iptables, nft, nsenter; a daemon's
 * first process): found on the tool search path, in the C locale, counted. A failure is a ProgramFailure carrying
 * what the program printed and whether it could not be run at all; net/tools.ts makes it a NetOpError of a kind.
 * Plugins never run a program themselves (layers.test.ts).
 * @module
 */

import { phase } from "./phase-trace.js";
import * as path from "./posix-path.js";
import { findTool, toolSearchPath } from "./tool-path.js";

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

/** A program that could not be run, or exited with a status other than 0. */
export class ProgramFailure extends Error {
  constructor(
    readonly program: string,
    /** What it printed on stderr (else on stdout), trimmed; or why it could not be run. */
    readonly reason: string,
    /** Its exit status; null when it did not run (or was killed by a signal). */
    readonly exitCode: number | null,
    readonly stdout: string,
    /** No executable of that name on the tool search path, or the kernel refused to run it (ENOENT, EACCES). */
    readonly missing: boolean,
  ) {
    super(reason);
    this.name = "ProgramFailure";
  }
}

/** Runs a program; resolves with its output, or rejects with a ProgramFailure. */
export function runProgram(cmd: string, args: readonly string[], input?: string): Promise<ToolResult> {
  return phase(
    "spawn",
    `${cmd} ${args
      .filter((a) => a !== "--wait" && a !== "-w")
      .slice(0, 3)
      .join(" ")}`.trim(),
    () => spawnProgram(cmd, args, input),
  );
}

function spawnProgram(cmd: string, args: readonly string[], input?: string): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const file = resolveTool(cmd);
    if (!file) {
      reject(new ProgramFailure(cmd, `cannot run ${cmd}: no executable ${cmd} in ${toolSearchPath().join(path.delimiter)}`, null, "", true));
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
    child.on("error", (e: NodeJS.ErrnoException) =>
      reject(new ProgramFailure(cmd, `cannot run ${cmd}: ${e.message}`, null, "", e.code === "ENOENT" || e.code === "EACCES")),
    );
    child.on("close", (code) => {
      const stdout = Buffer.concat(out).toString();
      const stderr = Buffer.concat(err).toString();
      if (code === 0) resolve({ stdout, stderr });
      else reject(new ProgramFailure(cmd, (stderr || stdout).trim() || `${cmd} exited with status ${code}`, code, stdout, false));
    });
    child.stdin.end(input ?? "");
  });
}
