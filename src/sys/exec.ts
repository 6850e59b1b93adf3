/**
 * Running the system tools the network layer is built on (iproute2, iptables, nft, nsenter). A failure
 * becomes a NetOpError naming the operation and carrying the kernel's/tool's reason.
 * @module
 */
import * as path from "./posix-path.js";
import { findTool, toolSearchPath } from "./tool-path.js";
import { phase } from "./phase-trace.js";

/**
 * What kind of failure a NetOpError is, so callers switch on it instead of reading text: set from the kernel's
 * errno where a request went over netlink, and from a tool's words for it (one table per tool, below) where a tool
 * ran.
 */
export type NetErrorKind = "not-found" | "exists" | "busy" | "denied" | "other";

/** The kind of a kernel errno. */
export function kindOfErrno(errno: number): NetErrorKind {
  switch (errno) {
    case 2: // ENOENT
    case 3: // ESRCH (a route or neighbour that is not there)
    case 19: // ENODEV
      return "not-found";
    case 17: // EEXIST
      return "exists";
    case 16: // EBUSY
      return "busy";
    case 1: // EPERM
    case 13: // EACCES
      return "denied";
    default:
      return "other";
  }
}

type Words = ReadonlyArray<readonly [RegExp, NetErrorKind]>;
/** iproute2 (ip, bridge, tc): the kernel's strerror after "RTNETLINK answers:" or "Error:", and its own words for a missing device. */
const IPROUTE2_WORDS: Words = [
  [/cannot find device|does not exist|no such (file|device|process)|not found|cannot find/i, "not-found"],
  [/file exists|already exists/i, "exists"],
  [/device or resource busy/i, "busy"],
  [/operation not permitted|permission denied/i, "denied"],
];
/** iptables, ip6tables and their -restore: "No chain/target/match by that name", "Bad rule (does a matching rule exist...)". */
const IPTABLES_WORDS: Words = [
  [/no chain\/target\/match|bad rule|does not exist|doesn't exist|no such file|not found/i, "not-found"],
  [/chain already exists|file exists|already exists/i, "exists"],
  [/device or resource busy/i, "busy"],
  [/permission denied|operation not permitted/i, "denied"],
];
/** nft: the kernel's strerror for the object a command names. */
const NFT_WORDS: Words = [
  [/no such file or directory|does not exist|not found/i, "not-found"],
  [/file exists|already exists/i, "exists"],
  [/device or resource busy/i, "busy"],
  [/operation not permitted|permission denied/i, "denied"],
];
/** Each tool's words for the kinds (tools run with LC_ALL=C); GENERIC_WORDS are read after them, and alone for a tool not here or a failure no tool printed. */
const TOOL_WORDS: Record<string, Words> = {
  ip: IPROUTE2_WORDS,
  bridge: IPROUTE2_WORDS,
  tc: IPROUTE2_WORDS,
  iptables: IPTABLES_WORDS,
  ip6tables: IPTABLES_WORDS,
  "iptables-restore": IPTABLES_WORDS,
  "ip6tables-restore": IPTABLES_WORDS,
  nft: NFT_WORDS,
};
const GENERIC_WORDS: Words = [
  [/cannot find device|does not exist|no such (file|device|process)|not found|cannot find|no chain\/target\/match|bad rule/i, "not-found"],
  [/file exists|already exists|chain already exists/i, "exists"],
];

/** The kind a tool's failure text says: its own table first, then the words any tool may use. */
export function kindOfText(text: string, tool?: string): NetErrorKind {
  for (const [words, kind] of [...((tool && TOOL_WORDS[tool]) || []), ...GENERIC_WORDS]) if (words.test(text)) return kind;
  return "other";
}

/** A failed network operation: what was attempted, why the kernel or the tool refused, and what kind of failure it is. */
export class NetOpError extends Error {
  /** What kind of failure this is: given by whoever knew (the kernel's errno, the tool), else read from `reason`. */
  readonly kind: NetErrorKind;
  constructor(
    readonly operation: string,
    readonly reason: string,
    readonly exitCode: number | null = null,
    /** What the tool printed before failing (some tools, like grep, report partial success this way). */
    readonly stdout?: string,
    kind?: NetErrorKind,
  ) {
    super(`${operation}: ${reason}`);
    this.name = "NetOpError";
    this.kind = kind ?? kindOfText(reason);
  }
  /** Whether the object does not exist (for idempotent deletes). */
  get isNotFound(): boolean {
    return this.kind === "not-found";
  }
  /** Whether the object exists already (for idempotent creates). */
  get isExists(): boolean {
    return this.kind === "exists";
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
      else {
        const reason = (stderr || stdout).trim() || `${cmd} exited with status ${code}`;
        reject(new NetOpError(operation, reason, code, stdout, kindOfText(reason, cmd === "nsenter" ? args[args.indexOf("--") + 1] : cmd)));
      }
    });
    child.stdin.end(input ?? "");
  });
}
