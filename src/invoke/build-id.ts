/**
 * The build a program belongs to: a launcher (and the pod manager, runtime/resident-exec.ts) speaks only to a
 * server of its own build (the build ID is compiled into both by scripts/link-bins.mjs).
 * @module
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { selfExecutable } from "#sys/self.js";

// The standalone build compiles the build ID in (bun build --define), so a copied program keeps it.
declare const TSCNI_BUILD_ID: string | undefined;

/** This program's build ID: compiled in, or (the Node build) the file scripts/link-bins.mjs writes beside it. */
export function readBuildId(): string {
  if (typeof TSCNI_BUILD_ID === "string") return TSCNI_BUILD_ID;
  const self = selfExecutable();
  if (!self) return "";
  try {
    // Under Node `self` is dist/cli/main.js; scripts/link-bins.mjs writes dist/build-id.
    return readFileSync(path.join(path.dirname(self), "..", "build-id"), "utf8").trim();
  } catch {
    return "";
  }
}
