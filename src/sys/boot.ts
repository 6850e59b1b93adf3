/**
 * When this boot began, for telling state of an earlier boot from this one's: a file last written before it was
 * written by a process of an earlier boot, so no network namespace, link or rule it described still exists.
 * @module
 */
import { readFileSync } from "node:fs";

/** The boot's start in milliseconds since the epoch (`btime` of /proc/stat), or undefined when unreadable. */
export function bootTimeMs(): number | undefined {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync("/proc/stat", "latin1"));
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}
