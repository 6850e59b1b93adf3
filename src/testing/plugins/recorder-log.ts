/**
 * The recorder test plugin's log: how a test puts a recorder into a plugin directory of its own under another
 * plugin's name (a stand-in for a plugin it does not run), and reads back every call it got.
 * @module
 */
import { appendFileSync, existsSync, readFileSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** One call as the recorder saw it: the verb, its CNI_* values and the config it was given. */
export interface RecordedCall {
  command: string;
  containerID: string;
  ifName: string;
  /** CNI_ARGS, raw. */
  args: string;
  config: Record<string, unknown>;
}

/** The test plugins' entry, which dispatches on the name it is run as. */
const ENTRY = path.join(path.dirname(fileURLToPath(import.meta.url)), "main.js");

/** The log of the recorder at `pluginPath`: the calls of that link, one JSON document a line. */
export const recorderLog = (pluginPath: string): string => `${pluginPath}.calls`;

/** Makes `<dir>/<name>` a recorder; `name` must be one the test plugins' entry knows as the recorder. */
export function installRecorder(dir: string, name: string): string {
  const link = path.join(dir, name);
  symlinkSync(ENTRY, link);
  return link;
}

/** Appends one call to the log of the recorder at `pluginPath`. */
export function appendRecordedCall(pluginPath: string, call: RecordedCall): void {
  appendFileSync(recorderLog(pluginPath), JSON.stringify(call) + "\n");
}

/** Every call the recorder at `pluginPath` got, oldest first; none when it never ran. */
export function readRecordedCalls(pluginPath: string): RecordedCall[] {
  const file = recorderLog(pluginPath);
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RecordedCall);
}
