/**
 * Finding a plugin executable in CNI_PATH. A plugin name is a file name, never a path: anything that could
 * walk out of the plugin directories is refused before the file system is touched.
 * @module
 */
import { statSync } from "node:fs";
import * as path from "#sys/posix-path.js";

/** Splits a CNI_PATH value into directories (empty elements dropped, as Go's filepath.SplitList of ""). */
export function splitPathList(value: string | undefined): string[] {
  if (!value) return [];
  return value.split(path.delimiter);
}

function checkName(plugin: string, paths: readonly string[]): void {
  if (plugin === "") throw new Error("no plugin name provided");
  if (plugin.includes("/") || plugin.includes("\0") || plugin === "." || plugin === "..") {
    throw new Error(`invalid plugin name: ${plugin}`);
  }
  if (paths.length === 0) throw new Error("no paths provided");
}

const notFound = (plugin: string, paths: readonly string[]) => new Error(`failed to find plugin "${plugin}" in path [${paths.join(" ")}]`);

/**
 * The first `<dir>/<plugin>` that is a regular file (symlinks followed), in CNI_PATH order. (A synchronous stat
 * per directory: no node:fs/promises on a plugin's start path, docs/startup.md.)
 */
export async function findInPath(plugin: string, paths: readonly string[]): Promise<string> {
  return findInPathSync(plugin, paths);
}

/** Synchronous findInPath, for start-up paths that must not wait on the event loop. */
export function findInPathSync(plugin: string, paths: readonly string[]): string {
  checkName(plugin, paths);
  for (const dir of paths) {
    const candidate = path.join(dir, plugin);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      /* not here */
    }
  }
  throw notFound(plugin, paths);
}
