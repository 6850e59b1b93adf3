/**
 * CNI errors: the well-known codes of the spec (and of Go's library) and the error object plugins print.
 * Every CNI error in tscni is built here, so each one carries a code, a message and the offending detail.
 * @module
 */
import { quoteJsonString } from "./json.js";

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

  constructor(code: number, msg: string, details = "") {
    super(details ? `${msg}; ${details}` : msg);
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
    if (err instanceof Error) return new CniError(code, err.message);
    return new CniError(code, String(err));
  }
}

/**
 * An error that wraps a cause, like Go's `fmt.Errorf("...: %w", err)`: its message is `prefix: cause`,
 * and `unwrapCniError` finds the CniError inside.
 */
export class WrappedError extends Error {
  constructor(prefix: string, override readonly cause: unknown) {
    super(`${prefix}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "WrappedError";
  }
}

/** Finds the innermost CniError in a chain of wrapped errors (Go's errors.As). */
export function unwrapCniError(err: unknown): CniError | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 32; depth++) {
    if (e instanceof CniError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
