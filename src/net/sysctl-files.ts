/**
 * sysctl files read and written whole, in another network namespace, with one `sh` per batch. A shell's
 * `read` builtin will not do: dash reads a byte at a time, and /proc/sys answers any read past offset 0 with
 * end-of-file, so `read` sees only the first character ("4096" reads as "4"). `cat` reads whole files.
 * @module
 */
import { NetOpError } from "./exec.js";
import type { NetNS } from "./netns.js";

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
  const { stdout } = await ns.run("sh", ["-c", PROBE_SCRIPT, "sh", ...paths], `read sysctls in ${ns}`);
  const fields = stdout.split("\0");
  return paths.map((_, i): SysctlState => {
    const field = fields[i] ?? "m";
    if (field.startsWith("v")) return { exists: true, value: field.slice(1) };
    return field === "w" ? { exists: true } : { exists: false };
  });
}

/** Arguments in pairs (path, value); stops at the first failure, naming it and the shell's reason. */
const WRITE_SCRIPT = [
  "while [ $# -gt 0 ]; do",
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
    await ns.run("sh", ["-c", WRITE_SCRIPT, "sh", ...settings.flat()], `set sysctls in ${ns}`);
  } catch (e) {
    if (!(e instanceof NetOpError)) throw e;
    throw new NetOpError(`set sysctls in ${ns}`, e.reason.replace(/: I\/O error$/, ": the kernel refused the value"), e.exitCode);
  }
}
