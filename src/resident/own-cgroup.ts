/**
 * An auto-started server's control group of its own. The launcher that starts a server runs in its caller's
 * cgroup (containerd's, kubelet's, a shell's): left there, the server's memory would be charged to that service,
 * and stopping the service with its cgroup (systemd's KillMode=control-group, `kill` of a pod's cgroup) would kill
 * the server in the middle of other callers' calls. So the server is moved out:
 * - on a systemd host, into a transient scope unit of its own (`tscni-resident-<id>-<pid>.scope` in system.slice,
 *   StartTransientUnit over the system bus with busctl, first thing the server does), as runc puts a container in
 *   a scope;
 * - elsewhere, into `tscni-resident[-<id>]` at the top of every cgroup hierarchy mounted (cgroup v2, and each v1
 *   hierarchy: memory, pids, cpu, name=systemd...), made where missing, by the launcher before it execs the server
 *   (launcher.c's move_to_own_cgroup: every page the server touches is charged there) and checked again here; one
 *   that cannot be written (a read-only cgroupfs in a container) is left as it is, and said in the log.
 * `<id>` names the socket (none for the node's default socket), so servers of different sockets are apart. A
 * server that leaves moves back to the top and removes its directories (systemd removes a scope by itself).
 * @module
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { DEFAULT_SOCKET } from "#invoke/resident-protocol.js";
import { runTool } from "#net/tools.js";
import { messageOf } from "#spec/errors.js";
import * as path from "#sys/posix-path.js";
import { findTool } from "#sys/tool-path.js";

/** The name of the server's own cgroup for `socketPath` (launcher.c's move_to_own_cgroup names it alike). */
export function ownCgroupName(socketPath: string): string {
  if (socketPath === DEFAULT_SOCKET) return "tscni-resident";
  // FNV-1a, 64 bits, its low 32 as hex: what a few lines of C compute the same.
  let h = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(socketPath)) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return `tscni-resident-${(h & 0xffffffffn).toString(16).padStart(8, "0")}`;
}

/** One cgroup hierarchy this process is in: where it is mounted and which cgroup of it holds us. */
export interface Hierarchy {
  /** The mount point, e.g. /sys/fs/cgroup/memory or /sys/fs/cgroup. */
  mount: string;
  /** "cgroup2", or the v1 controllers (and name=...) of the hierarchy, comma-separated. */
  kind: string;
  /** Our cgroup's path in it. */
  current: string;
}

/**
 * The hierarchies this process is in, from /proc/self/cgroup and /proc/self/mountinfo (texts given for tests);
 * only those mounted from their top (a mount whose root is "/").
 */
export function hierarchies(
  cgroupText = readFileSync("/proc/self/cgroup", "utf8"),
  mountinfoText = readFileSync("/proc/self/mountinfo", "utf8"),
): Hierarchy[] {
  const mounts: Array<{ mount: string; fstype: string; options: string[] }> = [];
  for (const line of mountinfoText.split("\n")) {
    const dash = line.indexOf(" - ");
    if (dash < 0) continue;
    const fields = line.slice(0, dash).split(" ");
    const [fstype, , superOptions] = line.slice(dash + 3).split(" ");
    if ((fstype !== "cgroup" && fstype !== "cgroup2") || fields[3] !== "/") continue;
    mounts.push({ mount: fields[4]!.replace(/\\040/g, " "), fstype, options: (superOptions ?? "").split(",") });
  }
  const out: Hierarchy[] = [];
  for (const line of cgroupText.split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const [, id, controllers, current] = m;
    const found =
      id === "0" && controllers === ""
        ? mounts.find((x) => x.fstype === "cgroup2")
        : mounts.find((x) => x.fstype === "cgroup" && controllers!.split(",").every((c) => x.options.includes(c)));
    if (found) out.push({ mount: found.mount, kind: found.fstype === "cgroup2" ? "cgroup2" : controllers!, current: current! });
  }
  return out;
}

/** Whether systemd is the init here (its units are then where services live). */
function systemdIsInit(): boolean {
  try {
    return existsSync("/run/systemd/system") && readFileSync("/proc/1/comm", "utf8").trim() === "systemd";
  } catch {
    return false;
  }
}

/** busctl's arguments for a transient scope holding `pid`: StartTransientUnit(name, "fail", properties, no aux units). */
export function transientScopeCall(name: string, pid: number, description: string, memoryMax?: number): string[] {
  const limit = memoryMax !== undefined ? ["MemoryMax", "t", String(memoryMax)] : [];
  return [
    "call",
    "org.freedesktop.systemd1",
    "/org/freedesktop/systemd1",
    "org.freedesktop.systemd1.Manager",
    "StartTransientUnit",
    "ssa(sv)a(sa(sv))",
    name,
    "fail",
    String(4 + (limit.length ? 1 : 0)),
    ...limit,
    "PIDs",
    "au",
    "1",
    String(pid),
    "Description",
    "s",
    description,
    "Slice",
    "s",
    "system.slice",
    "CollectMode",
    "s",
    "inactive-or-failed",
    "0",
  ];
}

/** Where the server went; `leave` moves it back and removes what was made (at exit). */
export interface OwnCgroup {
  /** What the log says of it. */
  description: string;
  leave(): void;
}

/**
 * Moves this process into its own cgroup for `socketPath` (see the module comment), capping its memory at
 * `memoryMax` bytes when given (the scope's MemoryMax, or memory.max / memory.limit_in_bytes of its cgroup).
 */
export async function moveToOwnCgroup(socketPath: string, memoryMax?: number): Promise<OwnCgroup> {
  const name = ownCgroupName(socketPath);
  const pid = process.pid;
  if (systemdIsInit() && findTool("busctl")) {
    const unit = `${name}-${pid}.scope`;
    try {
      await runTool("busctl", transientScopeCall(unit, pid, `tscni resident server (${socketPath})`, memoryMax), `start the transient unit ${unit}`);
      return { description: `the systemd scope ${unit}${memoryMax !== undefined ? ` (MemoryMax ${memoryMax})` : ""}`, leave: () => undefined };
    } catch (e) {
      // No bus, or systemd said no: the cgroup file system, as without systemd.
      const why = messageOf(e);
      const fallback = moveInCgroupfs(name, pid, memoryMax);
      return { ...fallback, description: `${fallback.description} (systemd's scope could not be had: ${why})` };
    }
  }
  return moveInCgroupfs(name, pid, memoryMax);
}

function moveInCgroupfs(name: string, pid: number, memoryMax?: number): OwnCgroup {
  const moved: Hierarchy[] = [];
  const problems: string[] = [];
  const capped: string[] = [];
  for (const h of hierarchies()) {
    const dir = path.join(h.mount, name);
    if (h.current === `/${name}`) {
      moved.push(h);
      continue;
    }
    try {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      if (h.kind.split(",").includes("cpuset")) {
        // A new v1 cpuset cgroup has no CPUs or memory nodes until given its parent's: nothing could join it.
        for (const file of ["cpuset.cpus", "cpuset.mems"]) {
          if (readFileSync(path.join(dir, file), "utf8").trim() === "")
            writeFileSync(path.join(dir, file), readFileSync(path.join(h.mount, file), "utf8"));
        }
      }
      if (h.kind.split(",").includes("memory")) {
        // v1 charges pages to the cgroup they were first touched in: the server's own go with it.
        try {
          writeFileSync(path.join(dir, "memory.move_charge_at_immigrate"), "3");
        } catch {
          /* a kernel without it: only what the server touches from now on is charged here */
        }
      }
      writeFileSync(path.join(dir, "cgroup.procs"), String(pid));
      moved.push(h);
    } catch (e) {
      problems.push(`${h.kind}: ${messageOf(e)}`);
    }
  }
  // The cap, in each hierarchy that accounts memory (the launcher may have moved us already: applied here either way).
  for (const h of moved) {
    if (memoryMax === undefined || !(h.kind === "cgroup2" || h.kind.split(",").includes("memory"))) continue;
    const file = h.kind === "cgroup2" ? "memory.max" : "memory.limit_in_bytes";
    // (A cgroup v2 hierarchy beside v1's memory one, "hybrid", has no memory controller: nothing to cap there.)
    if (!existsSync(path.join(h.mount, name, file))) continue;
    try {
      writeFileSync(path.join(h.mount, name, file), String(memoryMax));
      capped.push(`${file} ${memoryMax}`);
    } catch (e) {
      problems.push(`${file}: ${messageOf(e)}`);
    }
  }
  const description = moved.length
    ? `the cgroup ${name} of ${moved.map((h) => h.kind).join(" ")}${capped.length ? ` (${capped.join(", ")})` : ""}${problems.length ? `; not done: ${problems.join("; ")}` : ""}`
    : `no cgroup of its own (${problems.join("; ") || "no cgroup hierarchy mounted"})`;
  return {
    description,
    leave: () => {
      for (const h of moved) {
        try {
          writeFileSync(path.join(h.mount, "cgroup.procs"), String(pid));
          rmdirSync(path.join(h.mount, name));
        } catch {
          /* another server of the socket is there, or it is gone: nothing to undo */
        }
      }
    },
  };
}
