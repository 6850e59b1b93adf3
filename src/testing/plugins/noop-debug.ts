/**
 * The noop test plugin's debug file and command log: how a test tells noop what to report, and reads back how
 * noop was called. Same JSON as Go's `plugins/test/noop/debug` (Go field names, StdinData in base64).
 * @module
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";

/** How noop was called, as recorded in the debug file (StdinData is base64, like Go's []byte). */
export interface NoopCmdArgs {
  ContainerID: string;
  Netns: string;
  IfName: string;
  Args: string;
  Path: string;
  NetnsOverride: string;
  StdinData: string;
}

/** What the debug file holds: the behaviour to show, and the last call. */
export interface NoopDebug {
  ReportResult?: string;
  ReportError?: string;
  ReportErrorCode?: number;
  ReportStderr?: string;
  ReportVersionSupport?: string[];
  ExitWithCode?: number;
  Command?: string;
  CmdArgs?: NoopCmdArgs;
}

/** One entry of a `commandLog` file. */
export interface NoopLogEntry {
  Command: string;
  CmdArgs: NoopCmdArgs;
}

/** Reads a debug file; a missing file is an empty behaviour. */
export function readDebug(file: string): NoopDebug {
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as NoopDebug) : {};
}

export function writeDebug(file: string, debug: NoopDebug): void {
  writeFileSync(file, JSON.stringify(debug));
}

/** Reads a command log; a missing file is an empty log. */
export function readCommandLog(file: string): NoopLogEntry[] {
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as NoopLogEntry[]) : [];
}

/** Appends one call to a command log. */
export function appendCommandLog(file: string, entry: NoopLogEntry): void {
  const entries = readCommandLog(file);
  entries.push(entry);
  writeFileSync(file, JSON.stringify(entries));
}

/** The stdin noop recorded, decoded from base64. */
export const stdinOf = (cmdArgs: NoopCmdArgs | undefined): string => Buffer.from(cmdArgs?.StdinData ?? "", "base64").toString("utf8");
