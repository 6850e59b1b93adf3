/**
 * The node's resident-mode settings as the launcher reads them (launcher/launcher.c's resident_mode and
 * resident_setting), for `cnitool daemon status`: the mode, and for a server a launcher starts, whether it repairs
 * firewall rules by itself and the cap on its memory. Each comes from the caller's environment, else the
 * operator's file (`/etc/tscni/resident`, or the file `TSCNI_RESIDENT_CONF` names), else its default:
 *
 *     # /etc/tscni/resident
 *     auto              the mode: the first word outside comments (auto, manual or exec)
 *     repair off        the server's self-repair of firewall rules (on, the default, or off)
 *     memory-max 256M   the cap on the server's memory, its own cgroup's limit (bytes, or with K, M or G)
 *     exec-slots 4      plugin programs running at once when no server serves (a number, or off; launcher/exec-slots.h)
 *
 * Environment: `TSCNI_RESIDENT`, `TSCNI_RESIDENT_REPAIR`, `TSCNI_RESIDENT_MEMORY_MAX`, `TSCNI_EXEC_SLOTS`. A mode that is not one of
 * the three words means exec (fails closed: a word meant to turn a root server off never starts one), with a
 * warning naming it.
 * @module
 */
import { readFileSync } from "node:fs";

export const RESIDENT_CONF = "/etc/tscni/resident";
/** The most slots the launcher makes (SLOTS_MAX in launcher/exec-slots.h). */
const EXEC_SLOTS_MAX = 128;
export const MODE_WORDS = ["auto", "manual", "exec"] as const;
export type ResidentMode = (typeof MODE_WORDS)[number];

/** The settings in force, and which setting made each. */
export interface ResidentSettings {
  mode: ResidentMode;
  /** "TSCNI_RESIDENT", the file's path, or "the default". */
  modeFrom: string;
  /** Why the mode is exec though nobody said exec (a word that is not a mode), as the launcher says it. */
  warning?: string;
  repair: boolean;
  repairFrom: string;
  /** Bytes; undefined: no cap. */
  memoryMax?: number;
  memoryMaxFrom: string;
  /** Plugin programs running at once without a server: a number, "off", or undefined for the default (two per CPU). */
  execSlots?: number | "off";
  execSlotsFrom: string;
  /** A setting that was not understood (and so not applied), as the server's log says it. */
  problems: string[];
}

/** A size in bytes from "268435456", "256M", "1G", "512K"; undefined when it is none. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+)([KMG]?)$/i.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]) * { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2]!.toUpperCase() as "" | "K" | "M" | "G"];
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

const badMode = (word: string, where: string) =>
  `resident mode "${word.slice(0, 48)}" in ${where} is not one of ${MODE_WORDS.join(", ")}: running in exec mode`;

/** The file's words: the mode (first word outside comments) and its `key value` lines. */
function readConf(file: string, read: (f: string) => string): { mode?: string; keys: Map<string, string> } | undefined {
  let text: string;
  try {
    text = read(file);
  } catch {
    return undefined;
  }
  const keys = new Map<string, string>();
  let mode: string | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*/, "").trim();
    if (!line) continue;
    const [first, ...rest] = line.split(/[ \t\r]+/);
    if (mode === undefined) {
      mode = first!;
      continue;
    }
    if (rest.length) keys.set(first!, rest.join(" "));
  }
  return { ...(mode !== undefined ? { mode } : {}), keys };
}

/** The settings `env` and the operator's file give (see the module comment). */
export function residentSettings(
  env: Readonly<Record<string, string | undefined>> = process.env,
  read: (file: string) => string = (f) => readFileSync(f, "utf8"),
): ResidentSettings {
  const file = env["TSCNI_RESIDENT_CONF"] || RESIDENT_CONF;
  const conf = readConf(file, read);
  const problems: string[] = [];
  let mode: ResidentMode = "auto";
  let modeFrom = "the default";
  let warning: string | undefined;
  const word = env["TSCNI_RESIDENT"];
  const [given, from] = word ? [word, "TSCNI_RESIDENT"] : conf?.mode !== undefined ? [conf.mode, file] : [undefined, ""];
  if (given !== undefined) {
    modeFrom = from;
    if ((MODE_WORDS as readonly string[]).includes(given)) mode = given as ResidentMode;
    else {
      mode = "exec";
      warning = badMode(given, from);
    }
  }
  let repair = true;
  let repairFrom = "the default";
  const repairWord = env["TSCNI_RESIDENT_REPAIR"] || conf?.keys.get("repair");
  if (repairWord !== undefined) {
    repairFrom = env["TSCNI_RESIDENT_REPAIR"] ? "TSCNI_RESIDENT_REPAIR" : file;
    if (repairWord === "off") repair = false;
    else if (repairWord !== "on") problems.push(`repair "${repairWord}" in ${repairFrom} is not on or off: repair stays on`);
  }
  let memoryMax: number | undefined;
  let memoryMaxFrom = "the default (no cap)";
  const memoryWord = env["TSCNI_RESIDENT_MEMORY_MAX"] || conf?.keys.get("memory-max");
  if (memoryWord !== undefined) {
    memoryMaxFrom = env["TSCNI_RESIDENT_MEMORY_MAX"] ? "TSCNI_RESIDENT_MEMORY_MAX" : file;
    memoryMax = parseSize(memoryWord);
    if (memoryMax === undefined) problems.push(`memory-max "${memoryWord}" in ${memoryMaxFrom} is not a size (bytes, or with K, M or G): no cap`);
  }
  let execSlots: number | "off" | undefined;
  let execSlotsFrom = "the default (two per CPU)";
  const slotsWord = env["TSCNI_EXEC_SLOTS"] || conf?.keys.get("exec-slots");
  if (slotsWord !== undefined) {
    const from = env["TSCNI_EXEC_SLOTS"] ? "TSCNI_EXEC_SLOTS" : file;
    if (slotsWord === "off" || slotsWord === "0") execSlots = "off";
    else if (/^\d+$/.test(slotsWord)) execSlots = Math.min(Number(slotsWord), EXEC_SLOTS_MAX);
    if (execSlots !== undefined) execSlotsFrom = from;
    else problems.push(`exec-slots "${slotsWord}" in ${from} is neither a number nor off: two per CPU`);
  }
  return {
    mode,
    modeFrom,
    ...(warning ? { warning } : {}),
    repair,
    repairFrom,
    ...(memoryMax !== undefined ? { memoryMax } : {}),
    memoryMaxFrom,
    ...(execSlots !== undefined ? { execSlots } : {}),
    execSlotsFrom,
    problems,
  };
}
