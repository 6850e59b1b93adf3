/**
 * CNI errors: the well-known codes of the spec (and of Go's library), the error object plugins print, and the
 * constructors every CNI error in tscni is built with, so each one carries a code, a message and the offending
 * detail.
 *
 * @example
 * ```ts
 * throw invalidKey("mtu", 10, "want 0 for the default, or 68 to 65535");   // code 7
 * throw ioFailure(`cannot read the host device's record ${file}`, e);       // code 5, details: e's message
 * throw wrap(`failed to allocate for range ${i}`, e);                       // e's code, `prefix: e's msg`
 * ```
 * @module
 */
import { quoteJsonString } from "#go-json/json.js";

/** Well-known error codes (spec §"Error"; 0, 8 and 999 come from the reference library). */
export const ErrorCode = {
  Unknown: 0,
  IncompatibleCNIVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironmentVariables: 4,
  IOFailure: 5,
  DecodingFailure: 6,
  InvalidNetworkConfig: 7,
  InvalidNetNS: 8,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  LimitedConnectivity: 51,
  Internal: 999,
} as const;
/** A CNI error code: a well-known one, or any number a plugin uses. */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode] | number;

/** A CNI error as plugins print it: `{code, msg, details}` (the Go library prints no cniVersion). */
export class CniError extends Error {
  readonly code: number;
  readonly msg: string;
  readonly details: string;

  /** `options.cause`: the error underneath (ES2022), kept for unwrapping and logs; never printed. */
  constructor(code: number, msg: string, details = "", options?: ErrorOptions) {
    super(details ? `${msg}; ${details}` : msg, options);
    this.name = "CniError";
    this.code = code;
    this.msg = msg;
    this.details = details;
  }

  /** Field order and omission exactly as the Go types.Error. */
  toJSON(): { code: number; msg: string; details?: string } {
    return this.details ? { code: this.code, msg: this.msg, details: this.details } : { code: this.code, msg: this.msg };
  }

  /**
   * The pretty-printed JSON a plugin writes to stdout on failure: Go's json.MarshalIndent(err, "", "    ") of
   * toJSON(), written out (every failing call prints this; the general marshaller is not worth loading for it).
   */
  print(): string {
    const details = this.details ? `,\n    "details": ${quoteJsonString(this.details)}` : "";
    return `{\n    "code": ${this.code},\n    "msg": ${quoteJsonString(this.msg)}${details}\n}`;
  }

  /** Turns anything thrown into a CniError; non-CNI errors become code 999 (internal), like Go's skel. */
  static from(err: unknown, code: number = ErrorCode.Internal): CniError {
    if (err instanceof CniError) return err;
    return new CniError(code, messageOf(err), "", err instanceof Error ? { cause: err } : undefined);
  }
}

/** The message of anything thrown: an error's `message`, else its text. */
export function messageOf(e: unknown): string {
  const message = typeof e === "object" && e !== null ? (e as { message?: unknown }).message : undefined;
  return typeof message === "string" ? message : String(e);
}

/**
 * What a constructor below takes as `details`: text, or the error underneath, whose message becomes the details
 * and which is kept as the CniError's `cause`.
 */
export type Details = unknown;

/** Any code: one known only at run time (decoded from a plugin's or a daemon's answer, or kept from an error). */
export function cniError(code: number, msg: string, details?: Details): CniError {
  if (details === undefined || typeof details === "string") return new CniError(code, msg, details);
  return new CniError(code, msg, messageOf(details), { cause: details });
}

/** Code 999: the operation failed (what Go's skel makes of any plain error). */
export const failure = (msg: string, details?: Details): CniError => cniError(ErrorCode.Internal, msg, details);

/** Code 1: the config's version and the plugin's versions do not meet. */
export const incompatibleVersion = (msg: string, details?: Details): CniError => cniError(ErrorCode.IncompatibleCNIVersion, msg, details);

/** Code 3: the container is unknown or missing. */
export const unknownContainer = (msg: string, details?: Details): CniError => cniError(ErrorCode.UnknownContainer, msg, details);

/** Code 4: a CNI_* environment variable (CNI_ARGS, CNI_NETNS, CNI_IFNAME...) is missing or invalid. */
export const invalidEnv = (msg: string, details?: Details): CniError => cniError(ErrorCode.InvalidEnvironmentVariables, msg, details);

/** Code 4: CNI_ARGS does not parse, or carries a key the plugin does not take; `cause` says why. */
export const invalidCniArgs = (cause: unknown): CniError =>
  new CniError(ErrorCode.InvalidEnvironmentVariables, `invalid CNI_ARGS: ${messageOf(cause)}`, "", { cause });

/** Code 5: reading or writing a file, a socket or the plugin's own state failed. */
export const ioFailure = (msg: string, details?: Details): CniError => cniError(ErrorCode.IOFailure, msg, details);

/** Code 6: bytes (the config, a prevResult, an answer) do not decode. */
export const decodingFailure = (msg: string, details?: Details): CniError => cniError(ErrorCode.DecodingFailure, msg, details);

/** Code 7: the network configuration is invalid; prefer invalidKey when one key is at fault. */
export const invalidConfig = (msg: string, details?: Details): CniError => cniError(ErrorCode.InvalidNetworkConfig, msg, details);

/** Code 7 naming the key and its value: `invalid "mtu": 10 (want 0 for the default, or 68 to 65535)`. */
export const invalidKey = (key: string, value: unknown, why: string): CniError =>
  new CniError(ErrorCode.InvalidNetworkConfig, `invalid ${JSON.stringify(key)}: ${JSON.stringify(value)} (${why})`);

/** Code 8: the network namespace is not one the call may use. */
export const invalidNetNS = (msg: string, details?: Details): CniError => cniError(ErrorCode.InvalidNetNS, msg, details);

/** Code 11: a transient failure; the runtime should retry the call later. */
export const tryAgainLater = (msg: string, details?: Details): CniError => cniError(ErrorCode.TryAgainLater, msg, details);

/** Code 50: the plugin cannot serve calls here (STATUS): a missing backend, an unusable store. */
export const pluginNotAvailable = (msg: string, details?: Details): CniError => cniError(ErrorCode.PluginNotAvailable, msg, details);

/**
 * `prefix: cause`, like Go's `fmt.Errorf("prefix: %v", err)` in a plugin: a CniError cause keeps its code and
 * details (any other takes `code`, 999 unless given); `cause` is kept.
 */
export function wrap(prefix: string, cause: unknown, code: number = ErrorCode.Internal): CniError {
  if (cause instanceof CniError) return new CniError(cause.code, `${prefix}: ${cause.msg}`, cause.details, { cause });
  return new CniError(code, `${prefix}: ${messageOf(cause)}`, "", { cause });
}

/** The plugin's own fault (code 999, "plugin error: ..."): what it did that no input made it do. */
export const pluginError = (why: string): CniError => cniError(ErrorCode.Internal, `plugin error: ${why}`);

/** `error` in other words: the same code, its message and details each passed through `words`, the original as its cause. */
export function reworded(error: CniError, words: (text: string) => string): CniError {
  return new CniError(error.code, words(error.msg), words(error.details), { cause: error });
}

/** `error` with `why` said after its message: the same code and details, the original as its cause. */
export function withReason(error: CniError, why: string): CniError {
  return new CniError(error.code, `${error.msg} (${why})`, error.details, { cause: error });
}

/**
 * An error that wraps a cause, like Go's `fmt.Errorf("...: %w", err)` in libcni: not a CNI error itself (a
 * runtime reports it as its own), its message is `prefix: cause` and `unwrapCniError` finds the CniError inside.
 */
export class WrappedError extends Error {
  constructor(
    prefix: string,
    override readonly cause: unknown,
  ) {
    super(`${prefix}: ${messageOf(cause)}`);
    this.name = "WrappedError";
  }
}

/** The first CniError in a chain of causes, the error itself included (Go's errors.As). */
export function unwrapCniError(err: unknown): CniError | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 32; depth++) {
    if (e instanceof CniError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
