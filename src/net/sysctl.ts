/**
 * sysctls, per network namespace. In the host namespace they are plain file writes under /proc/sys; in
 * another namespace one `sh` entered with nsenter applies a whole batch.
 * @module
 */
import { readFile, writeFile } from "node:fs/promises";
import { NetOpError } from "./exec.js";
import type { NetNS } from "./netns.js";

/** The /proc/sys path of a sysctl given as segments (interface names may contain dots). */
export const sysctlPath = (...segments: string[]): string => `/proc/sys/${segments.join("/")}`;

const WRITE_SCRIPT = 'while [ $# -gt 0 ]; do printf %s "$2" > "$1" || { echo "cannot write $1" >&2; exit 1; }; shift 2; done';
const READ_SCRIPT = 'for f; do v=$(cat "$f" 2>/dev/null) || v="<missing>"; printf "%s\\n" "$v"; done';

/** Writes sysctls (path -> value) in a namespace, in order. */
export async function writeSysctls(ns: NetNS, values: ReadonlyArray<readonly [string, string]>): Promise<void> {
  if (values.length === 0) return;
  if (ns.isHost) {
    for (const [path, value] of values) {
      try {
        await writeFile(path, value);
      } catch (e) {
        throw new NetOpError(`set sysctl ${path}=${value}`, (e as Error).message);
      }
    }
    return;
  }
  await ns.run("sh", ["-c", WRITE_SCRIPT, "sh", ...values.flat()],
    `set sysctls ${values.map(([p, v]) => `${p}=${v}`).join(", ")} in ${ns}`);
}

export const writeSysctl = (ns: NetNS, path: string, value: string): Promise<void> => writeSysctls(ns, [[path, value]]);

/** Reads sysctls in a namespace; a missing one reads as undefined. */
export async function readSysctls(ns: NetNS, paths: readonly string[]): Promise<Array<string | undefined>> {
  if (ns.isHost) {
    return Promise.all(paths.map((p) => readFile(p, "utf8").then((v) => v.trim(), () => undefined)));
  }
  const { stdout } = await ns.run("sh", ["-c", READ_SCRIPT, "sh", ...paths], `read sysctls in ${ns}`);
  const lines = stdout.split("\n");
  return paths.map((_, i) => (lines[i] === "<missing>" ? undefined : lines[i]?.trim()));
}

export async function readSysctl(ns: NetNS, path: string): Promise<string | undefined> {
  return (await readSysctls(ns, [path]))[0];
}
