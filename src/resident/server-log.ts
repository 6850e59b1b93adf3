/**
 * The server's log lines: one line each, whatever a caller put in them, and a log of bounded size. A line may hold
 * what a caller supplied (a container ID, a plugin's name, an error's text): a control byte, DEL or backslash in it
 * is written as \xNN, so no value can end the line and forge another that reads as the server's, and a line is cut
 * at LOG_LINE_MAX. An auto-started server writes to `<socket>.log` itself (the launcher pointed its stderr there):
 * past LOG_MAX_BYTES the file is renamed `<socket>.log.1` (one old log kept, as the launcher's own lines do,
 * launcher/launcher.c's open_log), so the log takes at most twice that on the node's /run.
 * @module
 */
import { closeSync, constants, fstatSync, openSync, renameSync, writeSync } from "node:fs";

/** Past this size the log is renamed `<log>.1` and a new one begun. */
export const LOG_MAX_BYTES = 1024 * 1024;
/** The longest line written (its text cut, "..." added). */
export const LOG_LINE_MAX = 8192;

/** `text` as one line of the log: control bytes, DEL and backslashes as \xNN, at most `max` characters of it. */
export function escapeLogText(text: string, max = LOG_LINE_MAX): string {
  const cut = text.length > max ? `${text.slice(0, max)}...` : text;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is escaped
  return cut.replace(/[\x00-\x1f\x7f\\]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

const OPEN_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/** Appends `line` (one line, with its newline) to the log file at `file`, renaming it first when it is past LOG_MAX_BYTES. */
export function appendToLog(file: string, line: string): void {
  let fd = openSync(file, OPEN_FLAGS, 0o600);
  try {
    if (fstatSync(fd).size > LOG_MAX_BYTES) {
      renameSync(file, `${file}.1`);
      closeSync(fd);
      fd = openSync(file, OPEN_FLAGS, 0o600);
    }
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
}

/**
 * The server's log: `prefix()` then the escaped text on one line, into `file` when given (falling back to
 * `fallback` when it cannot be written), else to `fallback` (stderr).
 */
export function serverLog(prefix: () => string, fallback: (text: string) => void, file?: string): (line: string) => void {
  return (line) => {
    const text = `${prefix()}${escapeLogText(line)}\n`;
    if (file === undefined) return fallback(text);
    try {
      appendToLog(file, text);
    } catch {
      fallback(text);
    }
  };
}
