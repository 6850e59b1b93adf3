/**
 * W3C trace context in a plugin's environment, as upstream libcni carries it (OpenTelemetry's environment
 * carriers, OTEP 0258): TRACEPARENT, TRACESTATE and BAGGAGE. Values inherited from an environment pass verbatim;
 * a context a runtime gives per call is set only when its traceparent is valid.
 * @module
 */

/** The variables of a trace context, in the order they are logged. */
export const TRACE_CONTEXT_VARIABLES = ["TRACEPARENT", "TRACESTATE", "BAGGAGE"] as const;

/** A call's trace context (W3C Trace Context and Baggage, as HTTP headers would carry them). */
export interface TraceContext {
  /** `version-traceid-parentid-flags`, e.g. `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`. */
  traceparent: string;
  /** Vendor-specific trace state (`tracestate`); left out when empty. */
  tracestate?: string;
  /** W3C baggage (`baggage`); left out when empty. */
  baggage?: string;
}

const HEX = /^[0-9a-f]+$/;
const allZero = (s: string) => /^0+$/.test(s);

/**
 * Whether `value` is a traceparent a tracer accepts (W3C Trace Context level 1): lower-case hex fields, a version
 * other than ff (exactly four fields for version 00; a later version may append fields), and trace and parent
 * IDs that are not all zero.
 */
export function isValidTraceparent(value: string): boolean {
  const [version = "", traceId = "", parentId = "", flags = "", ...rest] = value.split("-");
  if (version.length !== 2 || !HEX.test(version) || version === "ff") return false;
  if (version === "00" && rest.length > 0) return false;
  if (traceId.length !== 32 || !HEX.test(traceId) || allZero(traceId)) return false;
  if (parentId.length !== 16 || !HEX.test(parentId) || allZero(parentId)) return false;
  return flags.length === 2 && HEX.test(flags);
}

/**
 * `env` carrying `trace`: its three variables replace what `env` held (TRACESTATE and BAGGAGE belong to the
 * environment's trace, not this one, so they are removed when `trace` has none). Without a trace, or with an
 * invalid traceparent, `env` itself.
 */
export function withTraceContext<E extends Record<string, string | undefined>>(env: E, trace: TraceContext | undefined): E {
  if (!trace || !isValidTraceparent(trace.traceparent)) return env;
  const out: Record<string, string | undefined> = { ...env, TRACEPARENT: trace.traceparent };
  for (const [name, value] of [
    ["TRACESTATE", trace.tracestate],
    ["BAGGAGE", trace.baggage],
  ] as const) {
    if (value) out[name] = value;
    else delete out[name];
  }
  return out as E;
}

/**
 * The trace context variables an environment holds, as `NAME=value` pairs with the value quoted as a JSON
 * string (one line whatever the value holds), for a log line; empty when it holds none.
 */
export function describeTraceContext(env: Readonly<Record<string, string | undefined>>): string {
  return TRACE_CONTEXT_VARIABLES.filter((name) => env[name])
    .map((name) => `${name}=${JSON.stringify(env[name])}`)
    .join(" ");
}
