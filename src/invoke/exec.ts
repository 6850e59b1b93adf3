/**
 * Executing a plugin binary: stdin in, stdout back, stderr forwarded, and every way a plugin can fail
 * (CNI error JSON, garbage, silence, a signal, a timeout) turned into a CniError with the library's wording.
 * @module
 */

import { isJsonObject, parseJson } from "#go-json/json.js";
import { CniError, cniError, ErrorCode, messageOf } from "#spec/errors.js";
import type { TraceContext } from "#spec/trace-context.js";
import { pauseFor } from "#sys/pause.js";
import type { Env } from "./args.js";

/** Where a plugin's stderr goes: process.stderr, any Writable, or anything else that takes text or bytes. */
export interface StderrSink {
  /** Writes text or bytes. */
  write(chunk: string | Uint8Array): unknown;
}

/** How one plugin execution may be bounded and where its stderr goes. */
export interface ExecOptions {
  /** Aborting kills the plugin (SIGKILL). */
  signal?: AbortSignal;
  /** Kills the plugin after this many milliseconds. */
  timeoutMs?: number;
  /** Where the plugin's stderr goes (default: this process's stderr). */
  stderr?: StderrSink;
  /**
   * This call's trace context, set as TRACEPARENT, TRACESTATE and BAGGAGE in the plugin's environment in place of
   * the environment's own (ignored when its traceparent is invalid). Without it the environment's pass as they are.
   */
  traceContext?: TraceContext;
}

/** How a runtime runs plugins; replaceable (tests, in-process execution of tscni's own plugins). */
export interface PluginExec {
  /** Runs the plugin at `pluginPath` with `stdin` and `env`; resolves with its stdout, rejects with the CNI error it reported. */
  execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options?: ExecOptions): Promise<Buffer>;
}

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  ETXTBSY: "text file busy",
  ENOEXEC: "exec format error",
  ENOTDIR: "not a directory",
  EISDIR: "is a directory",
};

interface RunOutcome {
  stdout: Buffer;
  stderr: Buffer;
  failure?: string;
  /** The errno name when the program could not be started (ENOENT, ETXTBSY...). */
  spawnErrno?: string;
}

function runOnce(pluginPath: string, stdin: Uint8Array, env: Env, options: ExecOptions): Promise<RunOutcome> {
  // Loaded on first use (docs/startup.md): most plugin calls never exec anything.
  const { spawn } = process.getBuiltinModule("node:child_process");
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(pluginPath, [], {
      env: env as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"],
      signal: options.signal,
      killSignal: "SIGKILL",
      timeout: options.timeoutMs,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let spawnFailure: string | undefined;
    let spawnErrno: string | undefined;
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.stdin.on("error", () => {
      /* the plugin may exit without reading stdin */
    });
    child.on("error", (e: NodeJS.ErrnoException) => {
      if (e.name === "AbortError") return; // reported through the close event as a signal
      const code = e.code ?? "";
      spawnErrno = code;
      spawnFailure = `fork/exec ${pluginPath}: ${ERRNO_TEXT[code] ?? e.message}`;
    });
    child.on("close", (exitCode, signal) => {
      let failure = spawnFailure;
      if (!failure && signal) failure = `signal: ${signal === "SIGKILL" ? "killed" : signal === "SIGTERM" ? "terminated" : signal}`;
      // Go's words first (a runtime may match them), then which limit it was: killed at its time limit, by us.
      const limit = options.timeoutMs;
      if (failure && signal === "SIGKILL" && limit !== undefined && performance.now() - started >= limit - 5)
        failure += ` (it ran past its time limit of ${limit / 1000} s and was killed)`;
      else if (!failure && exitCode !== 0) failure = `exit status ${exitCode}`;
      resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), failure, spawnErrno });
    });
    child.stdin.end(stdin);
  });
}

/** Go-style %q of a string, for messages quoting plugin output. */
const quote = (s: string) => JSON.stringify(s);

/**
 * A plugin failed without a readable CNI error (no output, output that is not one JSON error, killed, timed
 * out): what it did before failing is unknown, so a caller that asked it to allocate should ask it to release.
 */
export class UnknownOutcomeError extends CniError {
  constructor(msg: string) {
    super(ErrorCode.Internal, msg);
    this.name = "UnknownOutcomeError";
  }
}

/** Maps a failed execution to the CniError a runtime reports. */
export function pluginFailure(failure: string, stdout: Buffer, stderr: Buffer): CniError {
  if (stdout.length === 0) {
    if (stderr.length === 0) return new UnknownOutcomeError(`netplugin failed with no error message: ${failure}`);
    return new UnknownOutcomeError(`netplugin failed: ${quote(stderr.toString())}: ${failure}`);
  }
  try {
    const v = parseJson(stdout);
    if (!isJsonObject(v)) throw new Error(`json: cannot unmarshal ${Array.isArray(v) ? "array" : typeof v} into Go value of type types.Error`);
    const code = typeof v["code"] === "number" ? v["code"] : 0;
    const msg = typeof v["msg"] === "string" ? v["msg"] : "";
    const details = typeof v["details"] === "string" ? v["details"] : "";
    return cniError(code, msg, details);
  } catch (e) {
    return new UnknownOutcomeError(`netplugin failed but error parsing its diagnostic message ${quote(stdout.toString())}: ${messageOf(e)}`);
  }
}

/**
 * What a finished plugin run gives its caller, however it ran (child process or in-process): stdout on
 * success, else the mapped CniError. Its stderr goes to `sink` — also on failure when the error JSON is on
 * stdout, where Go's library drops it (those logs are exactly what someone debugging the failure needs); when
 * stdout is empty the stderr is already part of the error message and is not repeated.
 */
export function settlePluginRun(failure: string | undefined, stdout: Buffer, stderr: Buffer, sink: StderrSink): Buffer {
  if (failure) {
    if (stdout.length > 0 && stderr.length > 0) sink.write(stderr);
    throw pluginFailure(failure, stdout, stderr);
  }
  if (stderr.length > 0) sink.write(stderr);
  return stdout;
}

/** Runs plugin executables as child processes (Go's RawExec). */
export class RawExec implements PluginExec {
  constructor(private readonly defaultStderr?: StderrSink) {}

  /** Runs the plugin as a child process (see PluginExec.execPlugin). */
  async execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options: ExecOptions = {}): Promise<Buffer> {
    const stderrSink = options.stderr ?? this.defaultStderr ?? process.stderr;
    let outcome: RunOutcome | undefined;
    // A binary being replaced while we start it answers ETXTBSY for a moment: retry as the Go library does.
    for (let attempt = 0; attempt < 6; attempt++) {
      outcome = await runOnce(pluginPath, stdin, env, options);
      if (outcome.spawnErrno !== "ETXTBSY") break;
      await pauseFor(1000, options.signal);
    }
    const { stdout, stderr, failure } = outcome!;
    return settlePluginRun(failure, stdout, stderr, stderrSink);
  }
}
