/**
 * Where the system tools (ip, iptables, nft, nsenter, flock) are found: the absolute directories of PATH, then the
 * system directories PATH lacks. Empty and relative PATH entries are skipped, so a tool is never taken from the
 * working directory: Go's exec.LookPath refuses such a match (exec.ErrDot), we look past it. Plugins themselves are
 * found in CNI_PATH by invoke/find.ts, whose entries are used as given (as Go's invoke.FindInPath does).
 * @module
 */
import { accessSync, constants, statSync } from "node:fs";
import * as path from "./posix-path.js";

/** Where ip, iptables and nft live (sbin), which a runtime's PATH may lack. */
export const SYSTEM_DIRS: readonly string[] = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/** The directories tools are looked up in: `pathValue`'s absolute entries in order, then SYSTEM_DIRS not among them. */
export function toolSearchPath(pathValue: string | undefined = process.env["PATH"]): string[] {
  const dirs = (pathValue ?? "").split(path.delimiter).filter((d) => path.isAbsolute(d));
  for (const d of SYSTEM_DIRS) if (!dirs.includes(d)) dirs.push(d);
  return dirs;
}

/** Whether `file` is a regular file (symlinks followed) we may execute. */
function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The absolute path of tool `name` (a bare file name) in `dirs`, the first match in order; undefined when none.
 * A name holding a `/` is returned as given: it names a file, it is not looked up.
 */
export function findTool(name: string, dirs: readonly string[] = toolSearchPath()): string | undefined {
  if (name.includes("/")) return name;
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}
