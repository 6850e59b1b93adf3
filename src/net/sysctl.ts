/**
 * sysctls, per network namespace. /proc/sys/net shows the namespace of the thread that opens it, so in the
 * host namespace they are plain file accesses, and in another one this thread enters it for the batch (under
 * Bun, through FFI); without FFI one `sh` entered with nsenter handles a whole batch. Values are read with `cat`,
 * never the shell's `read`: dash reads a byte at a time and /proc/sys answers any read past offset 0 with
 * end-of-file, so `read` would see "4096" as "4".
 * @module
 */
// (Synchronous node:fs for small /proc files: no node:fs/promises on a plugin's start path, docs/startup.md.)
import { readFileSync, writeFileSync } from "node:fs";
import { messageOf } from "#spec/errors.js";
import { phase } from "#sys/phase-trace.js";
import { NetOpError } from "./errors.js";
import { inNetnsThread } from "./netlink/rtnetlink.js";
import type { NetNS } from "./netns.js";
import { runIn } from "./tools.js";

/** The /proc/sys path of a sysctl given as segments (interface names may contain dots). */
export const sysctlPath = (...segments: string[]): string => `/proc/sys/${segments.join("/")}`;

/** One sysctl to set. */
export interface SysctlSetting {
  path: string;
  value: string;
  /** A failure is ignored (e.g. a sysctl this kernel lacks, which the Go plugins also ignore). */
  optional?: boolean;
}

/** A setting as an object or as a `[path, value]` pair (a required one). */
export type SysctlInput = SysctlSetting | readonly [string, string];

const toSetting = (s: SysctlInput): SysctlSetting => ("path" in s ? s : { path: s[0], value: s[1] });

/**
 * Arguments come in triples (path, value, optional 0/1). Every value is written, as Go's plugins do, with the
 * shell's builtins only, so the whole batch costs one process.
 */
const WRITE_SCRIPT = [
  "while [ $# -gt 0 ]; do",
  '  if ! printf %s "$2" 2>/dev/null > "$1" && [ "$3" = 0 ]; then',
  '    echo "cannot write $2 to $1" >&2; exit 1',
  "  fi",
  "  shift 3",
  "done",
].join("\n");

/** A host (this process's namespace) sysctl's value; undefined when it cannot be read. */
function readHostSysctl(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** Writes a host (this process's namespace) sysctl unless it already has the value. */
async function writeHostSysctl(s: SysctlSetting): Promise<void> {
  if (readHostSysctl(s.path) === s.value) return;
  try {
    writeFileSync(s.path, s.value);
  } catch (e) {
    if (!s.optional) throw new NetOpError(`set sysctl ${s.path}=${s.value}`, messageOf(e));
  }
}

/**
 * Sets sysctls in a namespace, in order (in the host namespace only when the value differs: it costs nothing
 * to look there). A required one that cannot be written fails the call (and stops the batch).
 */
export async function writeSysctls(ns: NetNS, settings: readonly SysctlInput[]): Promise<void> {
  const list = settings.map(toSetting);
  if (list.length === 0) return;
  return phase("sysctl", `${list.length} in ${ns.isHost ? "the host" : "a container"}`, () => writeSettings(ns, list));
}

async function writeSettings(ns: NetNS, list: readonly SysctlSetting[]): Promise<void> {
  if (ns.isHost) {
    for (const s of list) await writeHostSysctl(s);
    return;
  }
  const operation = `set sysctls ${list.map((s) => `${s.path}=${s.value}`).join(", ")} in ${ns}`;
  // Under Bun this thread enters the namespace and writes the files itself: no process on an ADD's path.
  const failed = await inNamespace(ns, operation, () => {
    for (const s of list) {
      try {
        writeFileSync(s.path, s.value);
      } catch {
        if (!s.optional) return `cannot write ${s.value} to ${s.path}`;
      }
    }
    return undefined;
  });
  if (failed === NO_THREAD_NETNS) {
    const args = list.flatMap((s) => [s.path, s.value, s.optional ? "1" : "0"]);
    await runIn(ns, "sh", ["-c", WRITE_SCRIPT, "sh", ...args], operation);
  } else if (failed) {
    throw new NetOpError(operation, failed, 1);
  }
}

const NO_THREAD_NETNS = Symbol("no thread netns");

/** `work` run with this thread in `ns` (see inNetnsThread), or NO_THREAD_NETNS without FFI; a namespace that cannot be entered fails `operation`. */
async function inNamespace<T>(ns: NetNS, operation: string, work: () => T): Promise<T | typeof NO_THREAD_NETNS> {
  try {
    const done = await inNetnsThread(ns.path!, work);
    return done ? done.value : NO_THREAD_NETNS;
  } catch (e) {
    throw new NetOpError(operation, messageOf(e), 1);
  }
}

/** Writes one sysctl file (a /proc/sys path) in `ns`. */
export const writeSysctl = (ns: NetNS, path: string, value: string): Promise<void> => writeSysctls(ns, [[path, value]]);

/** Reads sysctls in a namespace; a missing one reads as undefined. One `grep -H` reads them all (`path:value`). */
export async function readSysctls(ns: NetNS, paths: readonly string[]): Promise<Array<string | undefined>> {
  if (ns.isHost) {
    return paths.map(readHostSysctl);
  }
  if (paths.length === 0) return [];
  const read = await inNamespace(ns, `read sysctls in ${ns}`, () => paths.map(readHostSysctl));
  if (read !== NO_THREAD_NETNS) return read;
  let stdout: string;
  try {
    ({ stdout } = await runIn(ns, "grep", ["-H", "", ...paths], `read sysctls in ${ns}`));
  } catch (e) {
    if (!(e instanceof NetOpError) || e.exitCode !== 2) throw e;
    stdout = e.stdout ?? ""; // exit 2: some file is missing; the others were still printed
  }
  const values = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    for (const p of paths) if (line.startsWith(`${p}:`) && !values.has(p)) values.set(p, line.slice(p.length + 1).trim());
  }
  return paths.map((p) => values.get(p));
}

/** Reads one sysctl file (a /proc/sys path) in `ns`; undefined when it does not exist. */
export async function readSysctl(ns: NetNS, path: string): Promise<string | undefined> {
  return (await readSysctls(ns, [path]))[0];
}

export type SysctlState = { exists: false } | { exists: true; value?: string };

/** Per path: `m` missing, `w` present but unreadable (write-only), `v<content>` readable; each ends in NUL. */
const PROBE_SCRIPT =
  'for f; do if [ ! -f "$f" ]; then printf "m\\0"; elif v=$(cat "$f" 2>/dev/null); then printf "v%s\\0" "$v"; else printf "w\\0"; fi; done';

/**
 * The state of each sysctl path (`/proc/sys/...`) in `ns`, in order. A value is the file's content without
 * its trailing newline (what Go's tuning compares).
 */
export async function probeSysctls(ns: NetNS, paths: readonly string[]): Promise<SysctlState[]> {
  if (paths.length === 0) return [];
  const { stdout } = await runIn(ns, "sh", ["-c", PROBE_SCRIPT, "sh", ...paths], `read sysctls in ${ns}`);
  const fields = stdout.split("\0");
  return paths.map((_, i): SysctlState => {
    const field = fields[i] ?? "m";
    if (field.startsWith("v")) return { exists: true, value: field.slice(1) };
    return field === "w" ? { exists: true } : { exists: false };
  });
}

/** Arguments in pairs (path, value); stops at the first failure, naming it and the shell's reason. */
const WRITE_ALWAYS_SCRIPT = [
  "while [ $# -gt 0 ]; do",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell script's parameter expansion, not a template
  '  if ! err=$( { printf %s "$2" > "$1"; } 2>&1 ); then echo "cannot write \\"$2\\" to $1: ${err##*: }" >&2; exit 1; fi',
  "  shift 2",
  "done",
].join("\n");

/**
 * Writes each value to its sysctl file, in order, always (as Go's os.WriteFile does: no comparison first).
 * The first failure stops the batch; the error names the file and value.
 */
export async function writeSysctlFiles(ns: NetNS, settings: ReadonlyArray<readonly [string, string]>): Promise<void> {
  if (settings.length === 0) return;
  try {
    await runIn(ns, "sh", ["-c", WRITE_ALWAYS_SCRIPT, "sh", ...settings.flat()], `set sysctls in ${ns}`);
  } catch (e) {
    if (!(e instanceof NetOpError)) throw e;
    throw new NetOpError(`set sysctls in ${ns}`, e.reason.replace(/: I\/O error$/, ": the kernel refused the value"), e.exitCode, undefined, e.kind);
  }
}
