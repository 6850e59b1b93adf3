/**
 * `cnitool daemon status`: what resident mode is on this node for the calling process, with or without a server:
 * the mode in force and which setting made it (invoke/resident-mode.ts), the socket (TSCNI_RESIDENT_SOCKET as the
 * launcher reads it), the server's own report when one serves this caller (pid, build, cgroup, memory, its
 * self-repair and memory cap), and whether a plugin call from this process would be served, and if not, why.
 * @module
 */
import { readFileSync, statSync } from "node:fs";
import { callResident } from "#invoke/resident-client.js";
import { type ResidentSettings, residentSettings } from "#invoke/resident-mode.js";
import { DEFAULT_SOCKET } from "#invoke/resident-protocol.js";
import { HEALTH_PROGRAM } from "./routing.js";
import type { ServerStatus } from "./server.js";

/** The report: the server's own fields (when one serves this caller) and the node's settings around them. */
export type NodeStatus = Partial<ServerStatus> & {
  mode: ResidentSettings["mode"];
  modeFrom: string;
  modeWarning?: string;
  socket: string;
  /**
   * The self-repair and memory cap settings a server the launcher starts is given, and the bound on plugin programs
   * running at once without a server, and where each came from.
   */
  settings: { repair: string; memoryMax: string; execSlots: string; problems: string[] };
  serverRunning: boolean;
  /** Whether a plugin call from this process would be served by a server, and if not, why. */
  thisCaller: { served: boolean; why?: string };
};

/** Why no server answered, in words (never a bare `connect ENOENT`). */
function unreachable(socket: string, e: NodeJS.ErrnoException): string {
  if (e.code === "ENOENT") return `no server runs: there is no socket at ${socket}`;
  if (e.code === "ECONNREFUSED") return `no server runs: ${socket} is a socket nobody listens on (a server that left)`;
  if (e.code === "EACCES" || e.code === "EPERM") return `${socket} cannot be reached by this process (${e.code}: not root?)`;
  return `no server answered on ${socket}: ${e.message}`;
}

const HEX = (status: string, field: string) => BigInt(`0x${new RegExp(`(?:^|\n)${field}:\\s*([0-9a-f]+)`).exec(status)?.[1] ?? "0"}`);

/** Why a plugin call from this process would not start a server (launcher.c's start_server), or undefined. */
function whyNoStart(socket: string): string | undefined {
  let status: string;
  try {
    status = readFileSync("/proc/self/status", "latin1");
  } catch {
    return "this process's /proc/self/status cannot be read";
  }
  const euid = /\nUid:\s+\d+\s+(\d+)/.exec(status)?.[1];
  if (euid !== "0") return "this process is not root";
  const eff = HEX(status, "CapEff");
  const needed = (1n << 12n) | (1n << 21n);
  if (eff !== (HEX(status, "CapBnd") | HEX(status, "CapInh")) || (eff & needed) !== needed)
    return "this process does not have every capability (CAP_NET_ADMIN and CAP_SYS_ADMIN included)";
  if (HEX(status, "Seccomp") !== 0n || HEX(status, "NoNewPrivs") !== 0n) return "this process is under a seccomp filter or no_new_privs";
  const kinds = socket === DEFAULT_SOCKET ? ["pid", "user", "net", "mnt"] : ["pid"];
  // As launcher.c's in_node_namespaces: PID 1's namespaces, or where they cannot be read, the kernel's fixed
  // inode numbers of the initial namespaces.
  const initIno: Record<string, number> = { pid: 0xeffffffc, user: 0xeffffffd, net: 0xeffffff9, mnt: 0xeffffff8 };
  for (const kind of kinds) {
    let mine: { ino: number; dev: number };
    try {
      mine = statSync(`/proc/self/ns/${kind}`);
    } catch {
      return `this process's ${kind} namespace cannot be read`;
    }
    let same: boolean;
    try {
      const init = statSync(`/proc/1/ns/${kind}`);
      same = init.ino === mine.ino && init.dev === mine.dev;
    } catch {
      same = mine.ino === initIno[kind];
    }
    if (!same) return `this process is not in the node's ${kind === "mnt" ? "mount" : kind === "net" ? "network" : kind} namespace`;
  }
  if (process.pid === 1) return "this process is PID 1 of its pid namespace";
  return undefined;
}

/** The status of resident mode for this process on `socket` (see the module comment). */
export async function nodeStatus(socket: string, env: Readonly<Record<string, string | undefined>>, buildId: string): Promise<NodeStatus> {
  const s = residentSettings(env);
  const base = {
    mode: s.mode,
    modeFrom: s.modeFrom,
    ...(s.warning ? { modeWarning: s.warning } : {}),
    socket,
    settings: {
      repair: `${s.repair ? "on" : "off"} (${s.repairFrom})`,
      memoryMax: s.memoryMax !== undefined ? `${s.memoryMax} bytes (${s.memoryMaxFrom})` : s.memoryMaxFrom,
      execSlots: s.execSlots !== undefined ? `${s.execSlots} (${s.execSlotsFrom})` : s.execSlotsFrom,
      problems: s.problems,
    },
  };
  const exec = s.mode === "exec" ? `resident mode is exec (${s.modeFrom}${s.warning ? `: ${s.warning}` : ""})` : undefined;
  const outcome = await callResident(socket, buildId, { program: HEALTH_PROGRAM, args: [], env: {}, stdin: Buffer.alloc(0) }).catch(
    (e: NodeJS.ErrnoException) => ({ kind: "down" as const, reason: unreachable(socket, e) }),
  );
  if (outcome.kind === "served") {
    const health = JSON.parse(outcome.stdout) as ServerStatus;
    return { ...health, ...base, serverRunning: true, thisCaller: exec ? { served: false, why: exec } : { served: true } };
  }
  const reason =
    outcome.kind === "down"
      ? outcome.reason
      : outcome.kind === "refused"
        ? `a server runs, but not for this process: ${outcome.reason}`
        : "the server died";
  let why = exec ?? reason;
  if (!exec && outcome.kind === "down") {
    const noStart = whyNoStart(socket);
    why =
      s.mode === "manual"
        ? `${reason} (mode manual starts none)`
        : noStart
          ? `${reason}, and a call from this process would not start one: ${noStart}`
          : `${reason}; the next plugin call starts one (mode auto)`;
  }
  return { ...base, serverRunning: outcome.kind === "refused", thisCaller: { served: false, why } };
}
