/**
 * CNI_ARGS: the `K=V;K2=V2` string of per-attachment arguments, parsed strictly as the reference plugins do
 * (a pair must split into exactly one key and one value; unknown keys fail unless IgnoreUnknown is true).
 * @module
 */
import { goQuote, goQuoteList } from "#go-json/json.js";
import { messageOf } from "./errors.js";

/** Splits CNI_ARGS into pairs; throws `ARGS: invalid pair "<pair>"` on a pair without exactly one `=`. */
export function parseCniArgs(args: string): Array<[string, string]> {
  if (args === "") return [];
  return args.split(";").map((pair) => {
    const kv = pair.split("=");
    if (kv.length !== 2) throw new Error(`ARGS: invalid pair ${goQuote(pair)}`);
    return [kv[0]!, kv[1]!];
  });
}

/** Formats pairs as the CNI_ARGS environment value. */
export function formatCniArgs(pairs: ReadonlyArray<readonly [string, string]>): string {
  return pairs.map(([k, v]) => `${k}=${v}`).join(";");
}

/** Go's UnmarshallableBool: 1/true and 0/false, case-insensitive. */
export function parseArgBool(value: string): boolean {
  const v = value.toLowerCase();
  if (v === "1" || v === "true") return true;
  if (v === "0" || v === "false") return false;
  throw new Error(`boolean unmarshal error: invalid input ${v}`);
}

/** How to read one CNI_ARGS key: a parser from the raw text to the typed value. */
export type ArgParsers<T> = { [K in keyof T]: (value: string) => T[K] };

/**
 * Loads CNI_ARGS into a typed object. Keys are matched case-sensitively against `parsers` (the keys runtimes
 * send, e.g. `IP`, `MAC`, `K8S_POD_NAME`); `IgnoreUnknown` is always understood.
 */
export function loadCniArgs<T extends object>(args: string, parsers: ArgParsers<T>): Partial<T> & { IgnoreUnknown?: boolean } {
  const out: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [key, value] of parseCniArgs(args)) {
    if (key === "IgnoreUnknown") {
      try {
        out["IgnoreUnknown"] = parseArgBool(value);
      } catch (e) {
        throw new Error(`ARGS: error parsing value of pair ${goQuote(`${key}=${value}`)}: ${messageOf(e)}`);
      }
      continue;
    }
    const parse = (parsers as Record<string, ((v: string) => unknown) | undefined>)[key];
    if (!Object.hasOwn(parsers, key) || !parse) {
      unknown.push(`${key}=${value}`);
      continue;
    }
    try {
      out[key] = parse(value);
    } catch (e) {
      throw new Error(`ARGS: error parsing value of pair ${goQuote(`${key}=${value}`)}: ${messageOf(e)}`);
    }
  }
  if (unknown.length > 0 && out["IgnoreUnknown"] !== true) {
    throw new Error(`ARGS: unknown args ${goQuoteList(unknown)}`);
  }
  return out as Partial<T> & { IgnoreUnknown?: boolean };
}
