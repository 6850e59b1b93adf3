/**
 * The protocol's rules about what a plugin prints, judged on one finished call: a success is exit 0 with one JSON
 * document on stdout; a failure is a non-zero exit with one error document (a well-known code, a message) and
 * nothing else on stdout; a VERSION answer lists spec versions. Each broken rule is a Problem naming its source.
 * Pure.
 * @module
 */

import { findJsonSyntaxError, isJsonObject, type JsonObject, type JsonValue, parseJson } from "#go-json/json.js";
import { ErrorCode } from "#spec/errors.js";
import { ALL_VERSIONS } from "#spec/versions.js";
import type { Diagnostic, Problem } from "./report.js";

/** One finished plugin call, as the runner made it and saw it end. */
export interface PluginCall {
  command: string;
  /** The CNI_* variables it was given (those left out are absent). */
  env: Record<string, string>;
  stdin: string;
  /** Exit status; null when a signal ended it. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** Spec sections the output rules come from. */
export const SECTION = {
  parameters: "SPEC §Execution Protocol / Parameters",
  errors: "SPEC §Execution Protocol / Errors",
  add: "SPEC §CNI operations / ADD",
  del: "SPEC §CNI operations / DEL",
  check: "SPEC §CNI operations / CHECK",
  status: "SPEC §CNI operations / STATUS",
  gc: "SPEC §CNI operations / GC",
  version: "SPEC §CNI operations / VERSION",
  addSuccess: "SPEC §Result types / ADD Success",
  ipamResult: "SPEC §Result types / Delegated plugins (IPAM)",
  versionSuccess: "SPEC §Result types / VERSION Success",
  error: "SPEC §Result types / Error",
  config: "SPEC §Network configuration format",
  lifecycle: "SPEC §Lifecycle & Ordering",
  upgrades: "SPEC-UPGRADES §Plugins: honour the requested cniVersion",
  cniArgs: "CONVENTIONS §CNI_ARGS",
} as const;

/**
 * The error codes the spec's table defines, with their meaning (0-99 are reserved; 100 and up are the plugin's own).
 * ErrorCode's 0, 8 and 999 are the reference library's, not the spec's.
 */
export const WELL_KNOWN_CODES: Readonly<Record<number, string>> = {
  [ErrorCode.IncompatibleCNIVersion]: "incompatible CNI version",
  [ErrorCode.UnsupportedField]: "unsupported field in network configuration",
  [ErrorCode.UnknownContainer]: "container unknown or does not exist",
  [ErrorCode.InvalidEnvironmentVariables]: "invalid necessary environment variables",
  [ErrorCode.IOFailure]: "I/O failure",
  [ErrorCode.DecodingFailure]: "failed to decode content",
  [ErrorCode.InvalidNetworkConfig]: "invalid network configuration",
  [ErrorCode.TryAgainLater]: "try again later",
  [ErrorCode.PluginNotAvailable]: "the plugin is not available",
  [ErrorCode.LimitedConnectivity]: "the plugin is not available, existing containers may have limited connectivity",
};

/** What stdout held: the JSON documents in it, in order, and the syntax error that ended the reading, if any. */
export interface Documents {
  documents: JsonValue[];
  malformed?: string;
}

/** Reads stdout as a sequence of JSON documents (white space around and between them allowed). */
export function splitDocuments(text: string): Documents {
  const documents: JsonValue[] = [];
  let rest = text;
  while (rest.trim() !== "") {
    const err = findJsonSyntaxError(rest);
    if (err && !err.message.endsWith("after top-level value")) return { documents, malformed: err.message };
    const end = err ? err.offset : rest.length;
    documents.push(parseJson(rest.slice(0, end)));
    rest = rest.slice(end);
  }
  return { documents };
}

/** A short excerpt of text for a message: its white space collapsed, cut at `max` characters. */
export function excerpt(text: string, max = 160): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

const ended = (call: PluginCall): string => (call.signal ? `it was killed by ${call.signal}` : `it exited with status ${String(call.exitCode)}`);

/** How a failed call failed: the error document it printed, or its stdout and stderr. */
function failure(call: PluginCall): string {
  const { documents } = splitDocuments(call.stdout);
  const err = documents.length === 1 && isJsonObject(documents[0]!) ? documents[0] : undefined;
  const said = err
    ? `error ${JSON.stringify(err["code"] ?? null)}: ${String(err["msg"] ?? "")}${err["details"] ? `; ${String(err["details"])}` : ""}`
    : `stdout "${excerpt(call.stdout)}" (${stderrHint(call)})`;
  return `${call.command} failed (${ended(call)}): ${said}`;
}

/** What stderr says, for messages about a call whose stdout is not what it should be. */
function stderrHint(call: PluginCall): string {
  const lines = call.stderr.split("\n").filter((l) => l.trim() !== "").length;
  const first = call.stderr.split("\n").find((l) => l.trim() !== "") ?? "";
  return lines === 0 ? "stderr is empty too" : `stderr has ${lines} line${lines === 1 ? "" : "s"}, starting "${excerpt(first, 120)}"`;
}

/**
 * A successful call's rules: exit 0 and exactly one JSON object on stdout (`rule` names the section requiring the
 * output). Returns that object when the rules hold.
 */
export function judgeSuccessDocument(call: PluginCall, rule: string): { problems: Problem[]; document?: JsonObject } {
  if (call.exitCode !== 0) return { problems: [{ rule, message: failure(call) }] };
  const { documents, malformed } = splitDocuments(call.stdout);
  if (malformed !== undefined) return { problems: [{ rule, message: `stdout is not JSON (${malformed}): "${excerpt(call.stdout)}"` }] };
  if (documents.length === 0)
    return { problems: [{ rule, message: `${call.command} succeeded but printed nothing on stdout; a result is required` }] };
  if (documents.length > 1) {
    return {
      problems: [{ rule, message: `stdout holds ${documents.length} JSON documents; the result must be exactly one document and nothing else` }],
    };
  }
  const document = documents[0]!;
  if (!isJsonObject(document)) return { problems: [{ rule, message: `the document on stdout is not a JSON object: ${excerpt(call.stdout)}` }] };
  return { problems: [], document };
}

/** A successful call that prints nothing required (CHECK, DEL, STATUS, GC): only the exit status matters. */
export function judgeSuccessStatus(call: PluginCall, rule: string): Problem[] {
  return call.exitCode === 0 ? [] : [{ rule, message: failure(call) }];
}

/** What a failing call is expected to say. */
export interface ExpectedError {
  /** The exact code the rule requires; otherwise any well-known or plugin-specific (100+) code. */
  code?: number;
  /** The rule the exact code comes from. */
  codeRule?: string;
  /** Words the message (msg and details) must contain, e.g. the name of a missing variable. */
  names?: string[];
  namesRule?: string;
}

/** The error document of a failed call, when it printed one. */
export interface ErrorDocument {
  code: unknown;
  msg: unknown;
  details?: unknown;
  cniVersion?: unknown;
}

/**
 * A failing call's rules (SPEC §Result types / Error): a non-zero exit, one error document on stdout and nothing
 * else, an integer code the spec defines or a plugin's own (100+), a message; then what `expected` asks for.
 */
export function judgeErrorDocument(call: PluginCall, expected: ExpectedError = {}): { problems: Problem[]; error?: ErrorDocument } {
  const problems: Problem[] = [];
  if (call.exitCode === 0) {
    problems.push({ rule: SECTION.errors, message: `${call.command} succeeded (exit 0) where it must fail; stdout "${excerpt(call.stdout)}"` });
    return { problems };
  }
  const { documents, malformed } = splitDocuments(call.stdout);
  if (documents.length === 0) {
    const what = malformed !== undefined ? `stdout is not JSON (${malformed}): "${excerpt(call.stdout)}"` : "stdout is empty";
    problems.push({
      rule: SECTION.error,
      message: `a failing plugin prints its error as one JSON document on stdout; ${what} (${stderrHint(call)})`,
    });
    return { problems };
  }
  if (documents.length > 1 || malformed !== undefined) {
    problems.push({
      rule: SECTION.error,
      message: `stdout must hold the error document and nothing else; it holds ${documents.length} document(s)${malformed !== undefined ? " and text that is not JSON" : ""}`,
    });
  }
  const doc = documents[0]!;
  if (!isJsonObject(doc)) {
    problems.push({ rule: SECTION.error, message: `the error document is not a JSON object: "${excerpt(call.stdout)}"` });
    return { problems };
  }
  const error: ErrorDocument = { code: doc["code"], msg: doc["msg"], details: doc["details"], cniVersion: doc["cniVersion"] };
  const code = doc["code"];
  if (typeof code !== "number" || !Number.isInteger(code)) {
    problems.push({ rule: SECTION.error, message: `the error document needs an integer "code"; got ${JSON.stringify(code ?? null)}` });
  } else if (!(code in WELL_KNOWN_CODES) && code < 100) {
    problems.push({
      rule: SECTION.error,
      message: `code ${code} is reserved: codes 0-99 are the spec's well-known ones (${Object.keys(WELL_KNOWN_CODES).join(", ")}), plugins use 100 and up`,
    });
  }
  if (typeof doc["msg"] !== "string" || doc["msg"].trim() === "") {
    problems.push({ rule: SECTION.error, message: `the error document needs a message in "msg"; got ${JSON.stringify(doc["msg"] ?? null)}` });
  }
  if (doc["details"] !== undefined && typeof doc["details"] !== "string") {
    problems.push({ rule: SECTION.error, message: `"details" must be a string; got ${JSON.stringify(doc["details"])}` });
  }
  if (expected.code !== undefined && typeof code === "number" && code !== expected.code) {
    problems.push({
      rule: expected.codeRule ?? SECTION.error,
      message: `expected error code ${expected.code} (${WELL_KNOWN_CODES[expected.code] ?? "plugin-specific"}), got ${code}${typeof doc["msg"] === "string" ? `: ${doc["msg"]}` : ""}`,
    });
  }
  const text = `${typeof doc["msg"] === "string" ? doc["msg"] : ""} ${typeof doc["details"] === "string" ? doc["details"] : ""}`;
  for (const name of expected.names ?? []) {
    if (!text.includes(name)) {
      problems.push({ rule: expected.namesRule ?? SECTION.error, message: `the error message must name ${name}; it says "${text.trim()}"` });
    }
  }
  return { problems, error };
}

/** A VERSION answer, read: what it claims, and what is wrong with it. */
export interface VersionAnswer {
  problems: Problem[];
  cniVersion?: string;
  /** The claimed versions that are spec versions (what the rest of the run uses). */
  supported: string[];
  /** supportedVersions as printed, when it is a list of strings. */
  listed?: string[];
}

/** VERSION's rules: exit 0, one document with `cniVersion` and a non-empty `supportedVersions` list of strings. */
export function judgeVersionAnswer(call: PluginCall): VersionAnswer {
  const { problems, document } = judgeSuccessDocument(call, SECTION.versionSuccess);
  if (!document) return { problems, supported: [] };
  const cniVersion = document["cniVersion"];
  if (typeof cniVersion !== "string" || cniVersion === "") {
    problems.push({
      rule: SECTION.versionSuccess,
      message: `the answer needs "cniVersion" (a version string); got ${JSON.stringify(cniVersion ?? null)}`,
    });
  }
  const list = document["supportedVersions"];
  if (!Array.isArray(list) || list.length === 0 || !list.every((v) => typeof v === "string")) {
    problems.push({
      rule: SECTION.versionSuccess,
      message: `the answer needs "supportedVersions", a non-empty list of version strings; got ${JSON.stringify(list ?? null)}`,
    });
    return { problems, supported: [], ...(typeof cniVersion === "string" ? { cniVersion } : {}) };
  }
  const listed = list as string[];
  const known = ALL_VERSIONS as readonly string[];
  return {
    problems,
    listed,
    supported: known.filter((v) => listed.includes(v)),
    ...(typeof cniVersion === "string" ? { cniVersion } : {}),
  };
}

/** supportedVersions' own rules: each entry a published spec version, listed once. */
export function judgeSupportedVersions(listed: readonly string[]): Problem[] {
  const known = ALL_VERSIONS as readonly string[];
  const problems: Problem[] = [];
  const unknown = listed.filter((v) => !known.includes(v));
  if (unknown.length) {
    problems.push({
      rule: SECTION.versionSuccess,
      message: `supportedVersions must list CNI spec versions; ${unknown.map((v) => JSON.stringify(v)).join(", ")} ${unknown.length === 1 ? "is" : "are"} not one (the spec's versions: ${known.join(", ")})`,
    });
  }
  const repeated = [...new Set(listed.filter((v, i) => listed.indexOf(v) !== i))];
  if (repeated.length) {
    problems.push({
      rule: SECTION.versionSuccess,
      message: `supportedVersions lists ${repeated.map((v) => JSON.stringify(v)).join(", ")} more than once`,
    });
  }
  return problems;
}

/** How a call shows in a failure's diagnostics: what it was given and what it did. */
export function describeCall(call: PluginCall, maxText = 4000): Record<string, Diagnostic> {
  const cut = (s: string) => (s.length > maxText ? `${s.slice(0, maxText)}\n... (${s.length - maxText} more characters)` : s);
  return {
    command: call.command,
    env: Object.entries(call.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(" "),
    stdin: cut(call.stdin),
    exit: call.signal ? `signal ${call.signal}` : call.exitCode,
    stdout: cut(call.stdout),
    stderr: cut(call.stderr),
    ms: Math.round(call.durationMs),
  };
}
