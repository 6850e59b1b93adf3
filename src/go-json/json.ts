/**
 * Go-compatible JSON: the syntax-error texts of Go's encoding/json (runtimes and tests match on them), and a
 * serialiser that writes what Go's json.Marshal writes (sorted map keys, HTML-safe escaping, MarshalIndent layout).
 * @module
 */

/** A JSON syntax error carrying the exact text Go's encoding/json would report. */
export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = "JsonSyntaxError";
  }
}

/** A JSON value as decoded into a generic Go `interface{}`. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object as decoded into a Go `map[string]interface{}`. */
export type JsonObject = { [key: string]: JsonValue };

const CONTROL_ESCAPES: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
};

/**
 * Go's quoteChar: how a scanner error names the offending character. Go's scanner works on bytes, so a
 * non-ASCII character is named by its first UTF-8 byte read as a Latin-1 character (`é` shows as `Ã`).
 */
function quoteChar(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '"') return "'\"'";
  const code = c.codePointAt(0)!;
  const byte = code < 0x80 ? c : String.fromCharCode(Buffer.from(c, "utf8")[0]!);
  return `'${goQuote(byte).slice(1, -1)}'`;
}

/** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const GO_PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** Go's `%q` of a string (strconv.Quote): `"..."` with Go's escapes for control and non-printable runes. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (CONTROL_ESCAPES[ch]) out += CONTROL_ESCAPES[ch];
    else if (GO_PRINTABLE.test(ch)) out += ch;
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else if (code < 0x10000) out += "\\u" + code.toString(16).padStart(4, "0");
    else out += "\\U" + code.toString(16).padStart(8, "0");
  }
  return out + '"';
}

/** Go's `%q` of a string list: `["a" "b"]`. */
export const goQuoteList = (list: readonly string[]): string => "[" + list.map(goQuote).join(" ") + "]";

/** Go's encoding/json nesting limit. */
const MAX_NESTING_DEPTH = 10000;

const isSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r";
const isDigit = (c: string) => c >= "0" && c <= "9";
const isHex = (c: string) => isDigit(c) || (c >= "a" && c <= "f") || (c >= "A" && c <= "F");

/**
 * Scans `text` as Go's encoding/json scanner does and returns the first syntax error, or null when the text
 * is one valid JSON value (optionally surrounded by white space).
 */
export function findJsonSyntaxError(text: string): JsonSyntaxError | null {
  let i = 0;
  const n = text.length;
  const fail = (context: string): JsonSyntaxError =>
    i >= n
      ? new JsonSyntaxError("unexpected end of JSON input", i)
      : new JsonSyntaxError(`invalid character ${quoteChar(String.fromCodePoint(text.codePointAt(i)!))} ${context}`, i);
  const skipSpace = () => {
    while (i < n && isSpace(text[i]!)) i++;
  };

  // Each parse function returns an error or null, leaving i after the value.
  const parseString = (context: string): JsonSyntaxError | null => {
    if (text[i] !== '"') return fail(context);
    i++;
    for (;;) {
      if (i >= n) return fail("in string literal");
      const c = text[i]!;
      if (c === '"') {
        i++;
        return null;
      }
      if (c === "\\") {
        i++;
        if (i >= n) return fail("in string escape code");
        const e = text[i]!;
        if ('"\\/bfnrt'.includes(e)) {
          i++;
          continue;
        }
        if (e === "u") {
          i++;
          for (let k = 0; k < 4; k++, i++) if (i >= n || !isHex(text[i]!)) return fail("in \\u hexadecimal character escape");
          continue;
        }
        return fail("in string escape code");
      }
      if (c < " ") return fail("in string literal");
      i++;
    }
  };
  const parseNumber = (): JsonSyntaxError | null => {
    if (text[i] === "-") {
      i++;
      if (i >= n || !isDigit(text[i]!)) return fail("in numeric literal");
    }
    if (text[i] === "0") i++;
    else while (i < n && isDigit(text[i]!)) i++;
    if (text[i] === ".") {
      i++;
      if (i >= n || !isDigit(text[i]!)) return fail("after decimal point in numeric literal");
      while (i < n && isDigit(text[i]!)) i++;
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      if (i >= n || !isDigit(text[i]!)) return fail("in exponent of numeric literal");
      while (i < n && isDigit(text[i]!)) i++;
    }
    return null;
  };
  const parseLiteral = (word: string): JsonSyntaxError | null => {
    for (let k = 0; k < word.length; k++, i++) {
      if (text[i] !== word[k]) return fail(`in literal ${word} (expecting ${quoteChar(word[k]!)})`);
    }
    return null;
  };
  // An object key and its colon (after `{` or `,`).
  const parseKey = (): JsonSyntaxError | null => {
    skipSpace();
    const keyErr = parseString("looking for beginning of object key string");
    if (keyErr) return keyErr;
    skipSpace();
    if (text[i] !== ":") return fail("after object key");
    i++;
    return null;
  };
  // A scalar value starting at `c`.
  const parseScalar = (c: string | undefined): JsonSyntaxError | null => {
    if (c === '"') return parseString("looking for beginning of value");
    if (c === "-" || (c !== undefined && isDigit(c))) return parseNumber();
    if (c === "t") return parseLiteral("true");
    if (c === "f") return parseLiteral("false");
    if (c === "n") return parseLiteral("null");
    return fail("looking for beginning of value");
  };

  // Iterative, like Go's state machine, so deep nesting cannot overflow the JS stack. `open` holds the
  // containers (`{` or `[`) around the position; Go allows 10000 of them.
  const open: string[] = [];
  for (;;) {
    // Expecting a value.
    skipSpace();
    const c = text[i];
    if (c === "{" || c === "[") {
      if (open.length >= MAX_NESTING_DEPTH) return fail("exceeded max depth");
      i++;
      skipSpace();
      if (text[i] !== (c === "{" ? "}" : "]")) {
        open.push(c);
        const keyErr = c === "{" ? parseKey() : null;
        if (keyErr) return keyErr;
        continue;
      }
      i++; // an empty container is a complete value
    } else {
      const err = parseScalar(c);
      if (err) return err;
    }
    // After a complete value: close containers, or go on to the next element.
    for (;;) {
      skipSpace();
      const top = open[open.length - 1];
      if (top === undefined) return i < n ? fail("after top-level value") : null;
      if (text[i] === ",") {
        i++;
        const keyErr = top === "{" ? parseKey() : null;
        if (keyErr) return keyErr;
        break;
      }
      if (text[i] !== (top === "{" ? "}" : "]")) return fail(top === "{" ? "after object key:value pair" : "after array element");
      i++;
      open.pop();
    }
  }
}

/** Thrown inside parseGoJson at the first malformed byte; parseJson then asks the scanner for Go's words. */
const MALFORMED = new Error("malformed JSON");

/**
 * The source text of number literals that a JS number does not show as Go reads them: fractions and
 * exponents (`1.0`, `1e3`, which Go refuses for integer fields), `-0`, and integers too long to be exact.
 * Keyed by the containing object or array, then by member name or index (see numberLiteral).
 */
const numberLiterals = new WeakMap<object, Map<string | number, string>>();

/** A literal that Number() renders exactly and that Go's integer parsers read the same way. */
const PLAIN_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The source text of the number at `container[key]` when it was parsed by parseJson from a literal that is
 * not a plain integer (e.g. `1.0`, `1e3`, `-0`, `18446744073709551615`); undefined otherwise.
 */
export function numberLiteral(container: object, key: string | number): string | undefined {
  return numberLiterals.get(container)?.get(key);
}

/** Sets an object member as Go's map decoding does: a repeated key replaces the value and moves to the end. */
function setMember(obj: JsonObject, key: string, value: JsonValue): void {
  if (Object.hasOwn(obj, key)) delete obj[key];
  if (key === "__proto__") Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/**
 * One pass over JSON text, without recursion (Go allows 10000 levels). Duplicate keys: the last value wins and
 * the key takes the position of its last occurrence, so members iterate in the order Go assigns them. Strings
 * keep Go's decoding (a lone surrogate escape becomes U+FFFD). Throws MALFORMED at the first error.
 */
function parseGoJson(text: string): JsonValue {
  const n = text.length;
  let i = 0;
  const skipSpace = () => {
    for (let c = text.charCodeAt(i); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = text.charCodeAt(++i));
  };
  const readString = (): string => {
    const start = i++;
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c === 0x5c) {
        escaped = true;
        i += 2;
        continue;
      }
      if (c < 0x20 || i >= n) throw MALFORMED;
      i++;
    }
    i++;
    if (!escaped) return text.slice(start + 1, i - 1);
    let s: string;
    try {
      s = JSON.parse(text.slice(start, i)) as string;
    } catch {
      throw MALFORMED;
    }
    return s.replace(LONE_SURROGATE, "\ufffd");
  };
  const readKey = (): string => {
    skipSpace();
    if (text.charCodeAt(i) !== 0x22) throw MALFORMED;
    const key = readString();
    skipSpace();
    if (text.charCodeAt(i) !== 0x3a) throw MALFORMED;
    i++;
    return key;
  };
  const remember = (container: object, key: string | number, literal: string | undefined) => {
    const known = numberLiterals.get(container);
    if (literal !== undefined) {
      if (known) known.set(key, literal);
      else numberLiterals.set(container, new Map([[key, literal]]));
    } else {
      known?.delete(key);
    }
  };

  // Open containers, innermost last; for an object, the key whose value comes next.
  const stack: Array<{ container: JsonObject | JsonValue[]; key: string }> = [];
  for (;;) {
    skipSpace();
    let value: JsonValue;
    let literal: string | undefined;
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      // { [
      i++;
      skipSpace();
      const close = c === 0x7b ? 0x7d : 0x5d;
      if (text.charCodeAt(i) === close) {
        i++;
        value = c === 0x7b ? {} : [];
      } else {
        if (stack.length >= MAX_NESTING_DEPTH) throw MALFORMED;
        stack.push(c === 0x7b ? { container: {}, key: readKey() } : { container: [], key: "" });
        continue;
      }
    } else if (c === 0x22) {
      value = readString();
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) throw MALFORMED;
      i += m[0].length;
      value = Number(m[0]);
      if (!PLAIN_INTEGER.test(m[0]) || Object.is(value, -0)) literal = m[0];
    } else if (text.startsWith("true", i)) {
      i += 4;
      value = true;
    } else if (text.startsWith("false", i)) {
      i += 5;
      value = false;
    } else if (text.startsWith("null", i)) {
      i += 4;
      value = null;
    } else {
      throw MALFORMED;
    }
    // Store the complete value, closing every container it completes.
    for (;;) {
      const top = stack[stack.length - 1];
      if (!top) {
        skipSpace();
        if (i !== n) throw MALFORMED;
        return value;
      }
      const { container } = top;
      if (Array.isArray(container)) {
        if (literal !== undefined) remember(container, container.length, literal);
        container.push(value);
      } else {
        remember(container, top.key, literal);
        setMember(container, top.key, value);
      }
      literal = undefined;
      skipSpace();
      const d = text.charCodeAt(i++);
      if (d === 0x2c) {
        // ,
        if (!Array.isArray(container)) top.key = readKey();
        break;
      }
      if (d !== (Array.isArray(container) ? 0x5d : 0x7d)) throw MALFORMED;
      stack.pop();
      value = container;
    }
  }
}

/**
 * UTF-8 bytes as text, ill-formed sequences replaced and a leading byte-order mark kept (Go reads it as a
 * character), as Buffer's toString does; TextDecoder, as a config refused by skel makes no Buffer (docs/startup.md).
 */
function utf8Text(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
}

/**
 * Parses JSON text as Go's encoding/json reads it (see parseGoJson), throwing a JsonSyntaxError with Go's
 * wording when it is malformed. The slower scanner that finds Go's words runs only then.
 */
export function parseJson(input: string | Uint8Array): JsonValue {
  const text = typeof input === "string" ? input : utf8Text(input);
  try {
    return parseGoJson(text);
  } catch (e) {
    if (e !== MALFORMED) throw e;
    throw findJsonSyntaxError(text) ?? new JsonSyntaxError("invalid JSON", 0);
  }
}

/** Go's name for the type a JSON value decodes into as `interface{}` (used in `%T` messages). */
export function goTypeName(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (Array.isArray(v)) return "[]interface {}";
  switch (typeof v) {
    case "string":
      return "string";
    case "number":
      return "float64";
    case "boolean":
      return "bool";
    default:
      return "map[string]interface {}";
  }
}

/** The JSON kind word Go uses in "cannot unmarshal <kind> into ..." messages. */
export function jsonKindName(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "array";
  switch (typeof v) {
    case "string":
      return "string";
    case "number":
      return "number";
    case "boolean":
      return "bool";
    default:
      return "object";
  }
}

/** Whether `v` is a JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const HEX = "0123456789abcdef";

/** Whether Go's encoder writes `s` as it is between quotes (nothing to escape or replace). */
function isPlainJsonText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (
      c < 0x20 ||
      c === 0x22 ||
      c === 0x5c ||
      c === 0x3c ||
      c === 0x3e ||
      c === 0x26 ||
      c === 0x2028 ||
      c === 0x2029 ||
      (c >= 0xd800 && c <= 0xdfff)
    )
      return false;
  }
  return true;
}

/** Quotes a string as Go's encoding/json does (HTML-safe, \u2028/\u2029 escaped). */
export function quoteJsonString(s: string): string {
  if (isPlainJsonText(s)) return '"' + s + '"';
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case "\\":
        out += "\\\\";
        continue;
      case "\n":
        out += "\\n";
        continue;
      case "\r":
        out += "\\r";
        continue;
      case "\t":
        out += "\\t";
        continue;
      case "\b":
        out += "\\b";
        continue; // Go >= 1.22 writes \b and \f short escapes
      case "\f":
        out += "\\f";
        continue;
    }
    if (code < 0x20 || ch === "<" || ch === ">" || ch === "&" || code === 0x2028 || code === 0x2029) {
      out += "\\u" + [12, 8, 4, 0].map((s) => HEX[(code >> s) & 0xf]).join("");
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += "\\ufffd"; // lone surrogate: Go writes the replacement character
    } else {
      out += ch;
    }
  }
  return out + '"';
}

/** How marshalJson lays out its output. */
export interface MarshalOptions {
  /** Sort object keys (Go map semantics). Default true; false keeps insertion order (Go struct semantics). */
  sortKeys?: boolean;
  /** Indentation per level, as json.MarshalIndent(v, "", indent). Default: compact. */
  indent?: string;
}

/**
 * Serialises a value the way Go's json.Marshal / MarshalIndent would. `undefined` members are omitted
 * (omitempty); objects may define toJSON() to present a typed, ordered view.
 */
export function marshalJson(value: unknown, options: MarshalOptions = {}): string {
  const sortKeys = options.sortKeys ?? true;
  const indent = options.indent ?? "";
  const write = (v: unknown, level: number): string | undefined => {
    if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") {
      v = (v as { toJSON: () => unknown }).toJSON();
    }
    if (v === undefined || typeof v === "function") return undefined;
    if (v === null) return "null";
    if (typeof v === "string") return quoteJsonString(v);
    if (typeof v === "number") return Number.isFinite(v) ? (Object.is(v, -0) ? "-0" : JSON.stringify(v)) : "null";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "bigint") return v.toString();
    if (v instanceof Uint8Array) return quoteJsonString(Buffer.from(v).toString("base64"));
    const nl = indent ? "\n" + indent.repeat(level + 1) : "";
    const close = indent ? "\n" + indent.repeat(level) : "";
    if (Array.isArray(v)) {
      if (v.length === 0) return "[]";
      const items = v.map((item) => write(item, level + 1) ?? "null");
      return "[" + nl + items.join("," + nl) + close + "]";
    }
    const keys = Object.keys(v as object);
    if (sortKeys) keys.sort(compareBytes);
    const parts: string[] = [];
    for (const k of keys) {
      const s = write((v as Record<string, unknown>)[k], level + 1);
      if (s !== undefined) parts.push(quoteJsonString(k) + (indent ? ": " : ":") + s);
    }
    if (parts.length === 0) return "{}";
    return "{" + nl + parts.join("," + nl) + close + "}";
  };
  return write(value, 0) ?? "null";
}

/** Byte-order comparison of two strings (Go's sort.Strings on UTF-8). */
export function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Deep copy of a JSON value. */
export function cloneJson<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** Structural equality of two JSON values (object key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
