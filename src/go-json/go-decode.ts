/**
 * Go's encoding/json decoding rules, in one place, for every document tscni reads the way a Go program would:
 * plugin configs (with their runtimeConfig and args), IPAM configs, prevResults and other results, the result
 * cache. Runtimes written in Go send keys spelled as Go field names (containerd's go-cni sends `"HostPort"`,
 * `"IngressRate"`), and the Go plugins accept them, so tscni must read them the same way:
 *
 * - a key matches a field by exact name first, then case-insensitively (Go's folding, where `K` (Kelvin) is
 *   `k` and `ſ` is `s`); unknown keys are ignored (the raw object keeps them for re-serialising);
 * - duplicate keys: the last one wins (parseJson keeps members in the order Go assigns them); two spellings of
 *   a struct or map field decode into the same value, merging as Go does;
 * - `null` leaves a field as it is (absent), except that it resets a pointer, slice, map or interface field;
 *   a `null` list element or map value is the element type's zero value;
 * - a number goes into an integer field only when its literal is an integer within the field's range
 *   (`1.0`, `1e3`, `-1` into an unsigned field, `70000` into a uint16 are refused, as strconv refuses them);
 * - a value of the wrong JSON kind is an error naming where it was: `DecodeError` carries Go's own message
 *   and, for tscni's messages, the path as written (`runtimeConfig.portMappings[0].HostPort`) and what was wanted.
 *
 * Schemas are built from the constructors below and mirror the Go structs (field names are the JSON tags). A
 * schema is a key's one declaration: `withDefault` gives a field the value it reads as when the input leaves it
 * out (the decoded struct then always has it), `refine` checks and converts a field's value where the Go plugin
 * validates it, so the decoded type is what code works with.
 * @module
 */
import { isJsonObject, type JsonObject, type JsonValue, jsonKindName, numberLiteral } from "./json.js";

/** A decoding error with Go's message; `path`, `value` and `want` say the same for tscni's own messages. */
export class DecodeError extends Error {
  constructor(
    message: string,
    readonly path = "",
    readonly value: unknown = undefined,
    readonly want = "",
  ) {
    super(message);
    this.name = "DecodeError";
  }
}

/** Where a value sits while decoding: its container and key, the path as written, and Go's error context. */
export interface Slot {
  /** The object or array holding the value (for number literals), when there is one. */
  readonly parent?: object;
  readonly key?: string | number;
  /** The path as written in the input, e.g. `runtimeConfig.portMappings[0].HostPort`. */
  readonly path: string;
  /** Go's error context: the innermost struct's type name and the field names from the root. */
  readonly struct: string;
  readonly fields: readonly string[];
}

/** A Go type's decoder. */
export interface GoType<T> {
  /** What the type is, for code that walks a schema (tests, tools). */
  readonly kind: "scalar" | "any" | "list" | "map" | "struct";
  /** The element type of a list or map. */
  readonly elem?: GoType<unknown>;
  /** The fields of a struct, by JSON name. */
  readonly fields?: Fields;
  /** Go's name of the type, as in its error messages (`int`, `[]main.PortMapEntry`). */
  readonly goType: string;
  /** What a value must be, for tscni's messages (`an integer`, `true or false`). */
  readonly want: string;
  /** Pointer, slice, map and interface types: `null` resets them. */
  readonly nilable: boolean;
  /** Decodes a non-null value; `into` is the value decoded so far for this field (struct and map merge into it). */
  decode(value: JsonValue, at: Slot, into?: T): T;
  /** Go's zero value, for a `null` list element or map value (at `at`). */
  zero(at?: Slot): T;
  /** A struct field's default (see withDefault): what the field reads as when absent or `null`. */
  readonly fallback?: () => T;
  /** A refined type's type before its check (see refine). */
  readonly base?: GoType<unknown>;
}

/** A type with a default: as a struct field it is always set (see withDefault). */
export interface DefaultedType<T> extends GoType<T> {
  readonly fallback: () => T;
}

/** The decoded type of a schema. */
export type Decoded<S> = S extends GoType<infer T> ? T : never;

/** The root slot of a document decoded into Go type `struct`. */
export const rootSlot = (struct = ""): Slot => ({ path: "", struct, fields: [] });

/** The slot of a member: a struct field (`a.b`), a list element (`a[0]`) or a map value (`a["k"]`). */
function childSlot(at: Slot, parent: object, key: string | number, field?: { name: string; struct: string }): Slot {
  const path = typeof key === "number" ? `${at.path}[${key}]` : !field ? `${at.path}[${JSON.stringify(key)}]` : at.path ? `${at.path}.${key}` : key;
  if (!field) return { parent, key, path, struct: at.struct, fields: at.fields };
  return { parent, key, path, struct: field.struct, fields: [...at.fields, field.name] };
}

/** Go's UnmarshalTypeError for `value` at `at`; `shown` replaces the JSON kind (Go shows `number 1.5` for ints). */
export function typeMismatch(value: unknown, at: Slot, type: { goType: string; want: string }, shown = jsonKindName(value)): DecodeError {
  const where = at.struct || at.fields.length ? `Go struct field ${at.struct}.${at.fields.join(".")}` : "Go value";
  return new DecodeError(`json: cannot unmarshal ${shown} into ${where} of type ${type.goType}`, at.path, value, type.want);
}

/** A type whose values are checked by `check`, which returns undefined for a value of the wrong kind. */
function scalar<T>(goType: string, want: string, zero: T, check: (v: JsonValue, at: Slot) => T | undefined): GoType<T> {
  const type: GoType<T> = {
    kind: "scalar",
    goType,
    want,
    nilable: false,
    decode(v, at) {
      const out = check(v, at);
      if (out === undefined) throw typeMismatch(v, at, type);
      return out;
    },
    zero: () => zero,
  };
  return type;
}

/** Go's `string`. */
export const string = scalar<string>("string", "a string", "", (v) => (typeof v === "string" ? v : undefined));
/** Go's `bool`. */
export const bool = scalar<boolean>("bool", "true or false", false, (v) => (typeof v === "boolean" ? v : undefined));
/** Go's `float64`: any finite number. */
export const float64 = scalar<number>("float64", "a number", 0, (v) => (typeof v === "number" && Number.isFinite(v) ? v : undefined));

const INTEGER_LITERAL = /^-?\d+$/;

/**
 * An integer type with Go's range. A number is accepted when strconv.ParseInt/ParseUint would read its literal
 * (no fraction, no exponent, no sign for unsigned types) and it fits.
 */
function integer(goType: string, min: bigint, max: bigint): GoType<number> {
  const unsigned = min === 0n;
  const want = goType === "int" || goType === "int64" ? "an integer" : `an integer from ${min} to ${max}`;
  const type: GoType<number> = {
    kind: "scalar",
    goType,
    want,
    nilable: false,
    decode(v, at) {
      if (typeof v !== "number") throw typeMismatch(v, at, type);
      const literal = at.parent !== undefined && at.key !== undefined ? numberLiteral(at.parent, at.key) : undefined;
      const text = literal ?? (Object.is(v, -0) ? "-0" : String(v));
      const fits = INTEGER_LITERAL.test(text) && !(unsigned && text.startsWith("-")) && BigInt(text) >= min && BigInt(text) <= max;
      if (!fits) throw typeMismatch(v, at, type, `number ${text}`);
      return v === 0 ? 0 : v;
    },
    zero: () => 0,
  };
  return type;
}

const I64 = 2n ** 63n;
/** Go's `int` (64-bit). */
export const int = integer("int", -I64, I64 - 1n);
/** Go's `int64`. */
export const int64 = integer("int64", -I64, I64 - 1n);
/** Go's `int32`. */
export const int32 = integer("int32", -(2n ** 31n), 2n ** 31n - 1n);
/** Go's `uint` (64-bit). */
export const uint = integer("uint", 0n, 2n ** 64n - 1n);
/** Go's `uint64`. */
export const uint64 = integer("uint64", 0n, 2n ** 64n - 1n);
/** Go's `uint32`. */
export const uint32 = integer("uint32", 0n, 2n ** 32n - 1n);
/** Go's `uint16`. */
export const uint16 = integer("uint16", 0n, 2n ** 16n - 1n);
/** Go's `uint8`. */
export const uint8 = integer("uint8", 0n, 2n ** 8n - 1n);

/** `interface{}`: any value, as it is. */
export const any: GoType<JsonValue> = { kind: "any", goType: "interface {}", want: "any value", nilable: true, decode: (v) => v, zero: () => null };

/** `*T`: like T, but `null` resets it. */
export function ptr<T>(type: GoType<T>): GoType<T> {
  return { ...type, goType: `*${type.goType}`, nilable: true };
}

/** `[]T`. A `null` element is T's zero value. */
export function list<T>(elem: GoType<T>): GoType<T[]> {
  const type: GoType<T[]> = {
    kind: "list",
    elem,
    goType: `[]${elem.goType}`,
    want: "a list",
    nilable: true,
    decode(v, at) {
      if (!Array.isArray(v)) throw typeMismatch(v, at, type);
      return v.map((item, i) => (item === null ? elem.zero(childSlot(at, v, i)) : elem.decode(item, childSlot(at, v, i))));
    },
    zero: () => [],
  };
  return type;
}

/** `map[string]T`: keys as they are (exact), in input order. A `null` value is T's zero value. */
export function map<T>(elem: GoType<T>): GoType<Map<string, T>> {
  const type: GoType<Map<string, T>> = {
    kind: "map",
    elem,
    goType: `map[string]${elem.goType}`,
    want: "an object",
    nilable: true,
    decode(v, at, into) {
      if (!isJsonObject(v)) throw typeMismatch(v, at, type);
      const out = into ?? new Map<string, T>();
      for (const key of Object.keys(v)) {
        const item = v[key]!;
        out.delete(key);
        out.set(key, item === null ? elem.zero(childSlot(at, v, key)) : elem.decode(item, childSlot(at, v, key)));
      }
      return out;
    },
    zero: () => new Map(),
  };
  return type;
}

/**
 * Go's case folding of a key (encoding/json's foldName): ASCII letters upper-cased, any other character mapped
 * to the smallest character of its simple case-fold orbit (so the Kelvin sign folds as `K`, long `ſ` as `S`).
 */
export function foldKey(key: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is 0x00-0x7f, control characters included
  if (/^[\x00-\x7f]*$/.test(key)) return key.toUpperCase();
  let out = "";
  for (const ch of key) {
    let min = ch;
    for (const c of [ch.toLowerCase(), ch.toUpperCase()]) {
      if ([...c].length === 1 && c.codePointAt(0)! < min.codePointAt(0)!) min = c;
    }
    out += min.codePointAt(0)! < 0x80 ? min.toUpperCase() : min;
  }
  return out;
}

/** A struct's fields by JSON name. */
// biome-ignore lint/suspicious/noExplicitAny: fields of any Go type; each field's own GoType keeps its value typed
export type Fields = Record<string, GoType<any>>;
/** The fields of `F` that have a default (withDefault). */
type DefaultedKeys<F extends Fields> = { [K in keyof F]: F[K] extends { readonly fallback: () => unknown } ? K : never }[keyof F];
/** A decoded struct: a field with a default is always set; any other is absent when the input did not set it. */
export type StructOf<F extends Fields> = {
  -readonly [K in keyof F as K extends DefaultedKeys<F> ? never : K]?: Decoded<F[K]>;
} & { -readonly [K in DefaultedKeys<F>]: Decoded<F[K]> };

/** A struct type: its fields by JSON name, and how a key finds its field (exact name, then folded). */
export interface StructType<F extends Fields> extends GoType<StructOf<F>> {
  readonly name: string;
  readonly fields: F;
  /** The field a key of the input sets, or undefined when Go would ignore the key. */
  fieldFor(key: string): (keyof F & string) | undefined;
}

/** Which fields of a struct have a default or a check. */
interface StructShape {
  /** The fields with a default (withDefault), with their types. */
  readonly defaulted: ReadonlyArray<readonly [string, GoType<unknown>]>;
  /** Whether any field is refined (refine). */
  readonly refinedFields: boolean;
}

function structShape(fields: Fields): StructShape {
  // (Plain loops: a call's first use of an array builtin costs a compile, and this runs on every call's path.)
  const defaulted: Array<[string, GoType<unknown>]> = [];
  let refinedFields = false;
  for (const name of Object.keys(fields)) {
    const t = fields[name]!;
    if (t.fallback !== undefined) defaulted.push([name, t]);
    if (t.base !== undefined) refinedFields = true;
  }
  return { defaulted, refinedFields };
}

/** Folded name -> the first field (in declaration order) with that folded name. */
function foldedFields(fields: Fields): Map<string, string> {
  const folded = new Map<string, string>();
  for (const key of Object.keys(fields)) if (!folded.has(foldKey(key))) folded.set(foldKey(key), key);
  return folded;
}

/**
 * A Go struct named `name` (in package `pkg`, for Go's messages) with `fields` keyed by their JSON names.
 * Embedded structs are written by spreading their fields in (Go promotes them to the outer struct).
 */
export function struct<F extends Fields>(name: string, fields: F, pkg = "main"): StructType<F> {
  // The lookup tables are built at the struct's first use, not when it is declared: schemas are declared at
  // module top level, and a plugin call decodes few of the structs of the modules it loads (docs/startup.md).
  // The folded names are made at the first key that is not a field's exact name, which most inputs never have.
  let shape: StructShape | undefined;
  const shapeOf = (): StructShape => (shape ??= structShape(fields));
  let folded: Map<string, string> | undefined;
  /** Sets every absent field that has a default to it. */
  const fillDefaults = (out: Record<string, unknown>): StructOf<F> => {
    for (const [field, t] of shapeOf().defaulted) if (out[field] === undefined) out[field] = t.fallback!();
    return out as StructOf<F>;
  };
  const type: StructType<F> = {
    kind: "struct",
    name,
    fields,
    goType: `${pkg}.${name}`,
    want: "an object",
    nilable: false,
    fieldFor: (key) => (Object.hasOwn(fields, key) ? key : (folded ??= foldedFields(fields)).get(foldKey(key))) as (keyof F & string) | undefined,
    decode(v, at, into) {
      if (!isJsonObject(v)) throw typeMismatch(v, at, type);
      const out = (into ?? {}) as Record<string, unknown>;
      const keys = Object.keys(v);
      // A refined field's value is checked once, as it ends up: the last spelling of its key wins.
      const lastKey = shapeOf().refinedFields ? new Map(keys.map((key) => [type.fieldFor(key), key])) : undefined;
      for (const key of keys) {
        const field = type.fieldFor(key);
        if (field === undefined) continue;
        const item = v[key]!;
        const fieldType = fields[field]!;
        if (item === null) {
          if (fieldType.nilable) delete out[field];
          continue;
        }
        const slot = childSlot(at, v, key, { name: field, struct: name });
        if (fieldType.base && lastKey!.get(field) !== key) {
          fieldType.base.decode(item, slot); // an earlier spelling: Go decodes it too, so a value of the wrong kind is still an error
          continue;
        }
        out[field] = fieldType.decode(item, slot, out[field]);
      }
      return fillDefaults(out);
    },
    zero: () => fillDefaults({}),
  };
  return type;
}

/**
 * `type` with a default: as a struct field, absent or `null` reads as `value` (as when a Go plugin fills its
 * struct before decoding into it), and with `orEmpty` so does `""` (for keys where the plugin takes an empty
 * string as unset). The default is trusted: refine does not check it.
 */
export function withDefault<T>(type: GoType<T>, value: T, options: { orEmpty?: boolean } = {}): DefaultedType<T> {
  const fallback = (): T => (typeof value === "object" && value !== null ? structuredClone(value) : value);
  return {
    ...type,
    fallback,
    decode: (v, at, into) => (options.orEmpty && v === "" ? fallback() : type.decode(v, at, into)),
    zero: fallback,
  };
}

/**
 * `type` whose decoded values pass `check`, which returns what the field is to hold (the value, or a narrower
 * or converted form of it) or throws an error naming `path`, the key as written in the input. This is where a
 * schema says what a key may be (a link name, one of several modes), so that the decoded type is the one code
 * uses. Values are replaced, not merged, when two spellings of a key are given.
 */
export function refine<T, U>(type: GoType<T>, check: (value: T, path: string) => U): GoType<U> {
  const { fallback: _, ...rest } = type;
  return {
    ...rest,
    base: type,
    decode: (v, at) => check(type.decode(v, at), at.path),
    zero: (at = rootSlot()) => check(type.zero(at), at.path),
  };
}

/**
 * Decodes `value` (a whole document, or a part of one at `at`) into `type`. A `null` document is the zero value.
 * Throws DecodeError.
 */
export function decodeGo<T>(type: GoType<T>, value: JsonValue | undefined, at: Slot = rootSlot()): T {
  if (value === undefined || value === null) return type.zero();
  return type.decode(value, at);
}

/** The member of `obj` that Go assigns to field `name`: exact or case-insensitive, the last such key wins. */
export function member(obj: JsonObject, name: string): JsonValue | undefined {
  const fold = foldKey(name);
  let found: JsonValue | undefined;
  for (const key of Object.keys(obj)) if (key === name || foldKey(key) === fold) found = obj[key];
  return found;
}

/** Whether `obj` has a key Go would assign to field `name` (even one whose value is null). */
export function hasMember(obj: JsonObject, name: string): boolean {
  const fold = foldKey(name);
  return Object.keys(obj).some((key) => key === name || foldKey(key) === fold);
}

// ---- field-at-a-time access, for hand-written decoders (results, versions) ---------------------------------

/** Decodes member `name` of `obj` (a Go struct `struct`) into `type`; undefined when absent or null. */
export function getField<T>(obj: JsonObject, name: string, struct: string, type: GoType<T>): T | undefined {
  let found: string | undefined;
  const fold = foldKey(name);
  for (const key of Object.keys(obj)) if (key === name || foldKey(key) === fold) found = key;
  if (found === undefined || obj[found] === null) return undefined;
  return type.decode(obj[found]!, { parent: obj, key: found, path: found, struct, fields: [name] });
}

export const getString = (obj: JsonObject, name: string, struct: string): string | undefined => getField(obj, name, struct, string);
export const getBool = (obj: JsonObject, name: string, struct: string): boolean | undefined => getField(obj, name, struct, bool);
export const getInt = (obj: JsonObject, name: string, struct: string): number | undefined => getField(obj, name, struct, int);
export const getStringList = (obj: JsonObject, name: string, struct: string): string[] | undefined => getField(obj, name, struct, list(string));

/** A struct-typed member, as a raw object for a hand-written decoder. */
export function getObject(obj: JsonObject, name: string, struct: string, goType: string): JsonObject | undefined {
  return getField(obj, name, struct, rawObject(goType));
}

/** A list of structs, each decoded by `decodeItem` (a `null` element is an empty struct). */
export function getList<T>(obj: JsonObject, name: string, struct: string, goType: string, decodeItem: (item: JsonObject) => T): T[] | undefined {
  return getField(obj, name, struct, list(rawObject(goType)))?.map(decodeItem);
}

/** A struct value kept raw (for hand-written decoders): any object; `null` as an element is `{}`. */
function rawObject(goType: string): GoType<JsonObject> {
  const type: GoType<JsonObject> = {
    kind: "struct",
    goType,
    want: "an object",
    nilable: false,
    decode(v, at) {
      if (!isJsonObject(v)) throw typeMismatch(v, at, type);
      return v;
    },
    zero: () => ({}),
  };
  return type;
}
