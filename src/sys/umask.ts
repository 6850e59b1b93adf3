/**
 * This process's umask, which a call handed to the resident server carries (the launcher's, the pod manager's) and
 * the server compares with its own.
 * @module
 */
import { readFileSync } from "node:fs";
import { statusField } from "./peer.js";

/** This process's umask, from its /proc status (process.umask() without an argument is deprecated). */
export function currentUmask(): number {
  try {
    const text = statusField(readFileSync("/proc/self/status", "latin1"), "Umask");
    if (text !== undefined) return parseInt(text, 8);
  } catch {
    /* no /proc */
  }
  const mask = process.umask(0o022);
  process.umask(mask);
  return mask;
}
