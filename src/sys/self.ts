/**
 * Where the running multicall program is: its real path, and every path that is this same program (the
 * standalone binary and the C launcher beside it), for in-process delegation and `cnitool install`.
 * @module
 */
import { realpathSync } from "node:fs";
import * as path from "./posix-path.js";

/** The real path of the running multicall executable. */
export function selfExecutable(): string | undefined {
  const standalone = (process.argv[1] ?? "").startsWith("/$bunfs/");
  // Under Node the executable is the entry point next to this module.
  // (A file: URL's pathname, decoded: node:url is not worth its start-up cost for this.)
  const file = standalone ? process.execPath : decodeURIComponent(new URL("../cli/main.js", import.meta.url).pathname);
  try {
    return realpathSync(file);
  } catch {
    // Bun reads /proc/self/exe when asked: once an install has renamed a new program over the running one, that
    // says "<path> (deleted)". The path then names the program that replaced this one, which is where it ran from.
    const replaced = file.endsWith(" (deleted)") ? file.slice(0, -" (deleted)".length) : undefined;
    try {
      return replaced ? realpathSync(replaced) : undefined;
    } catch {
      return undefined;
    }
  }
}

/** The executables that are this program: itself, and the C launcher next to a standalone build. */
export function selfPaths(self: string | undefined): Set<string> {
  const paths = new Set<string>();
  if (!self) return paths;
  paths.add(self);
  if (path.basename(self) === "tscni-js") {
    try {
      paths.add(realpathSync(path.join(path.dirname(self), "tscni")));
    } catch {
      /* no launcher */
    }
  }
  return paths;
}
