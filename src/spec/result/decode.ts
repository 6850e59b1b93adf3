/**
 * Typed decoding of JSON objects with Go's encoding/json semantics: case-insensitive key match (last wins),
 * null as "absent", and "json: cannot unmarshal ..." errors on type mismatches.
 * @module
 */
import { isJsonObject, jsonKindName, type JsonObject } from "../json.js";

export class DecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DecodeError";
  }
}

/** Go names a number by its text only when it is a number that does not fit an integer type. */
function mismatch(value: unknown, where: string, goType: string): DecodeError {
  const kind = jsonKindName(value);
  const shown = kind === "number" && /^u?int/.test(goType) ? `number ${String(value)}` : kind;
  return new DecodeError(`json: cannot unmarshal ${shown} into Go struct field ${where} of type ${goType}`);
}

/** Reads member `name` the way Go matches struct fields: exact or case-insensitive, last occurrence wins. */
export function member(obj: JsonObject, name: string): unknown {
  const lower = name.toLowerCase();
  let found: unknown = undefined;
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) found = obj[k];
  return found;
}

export function asObject(value: unknown, where: string, goType: string): JsonObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value)) throw mismatch(value, where, goType);
  return value;
}

export function getString(obj: JsonObject, name: string, struct: string): string | undefined {
  const v = member(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw mismatch(v, `${struct}.${name}`, "string");
  return v;
}

export function getInt(obj: JsonObject, name: string, struct: string, goType = "int"): number | undefined {
  const v = member(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v)) throw mismatch(v, `${struct}.${name}`, goType);
  if (goType.startsWith("uint") && v < 0) throw mismatch(v, `${struct}.${name}`, goType);
  return v;
}

export function getBool(obj: JsonObject, name: string, struct: string): boolean | undefined {
  const v = member(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw mismatch(v, `${struct}.${name}`, "bool");
  return v;
}

export function getStringList(obj: JsonObject, name: string, struct: string): string[] | undefined {
  const v = member(obj, name);
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw mismatch(v, `${struct}.${name}`, "[]string");
  return v.map((item) => {
    if (item === null) return ""; // Go leaves a null element at its zero value
    if (typeof item !== "string") throw mismatch(item, `${struct}.${name}`, "string");
    return item;
  });
}

export function getList<T>(obj: JsonObject, name: string, struct: string, goType: string,
  decodeItem: (item: JsonObject) => T): T[] | undefined {
  const v = member(obj, name);
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw mismatch(v, `${struct}.${name}`, `[]${goType}`);
  return v.map((item) => {
    const o = asObject(item, `${struct}.${name}`, goType);
    return decodeItem(o ?? {});
  });
}

export function getObject(obj: JsonObject, name: string, struct: string, goType: string): JsonObject | undefined {
  return asObject(member(obj, name), `${struct}.${name}`, goType);
}
