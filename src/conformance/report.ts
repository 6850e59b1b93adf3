/**
 * What a conformance run reports and how: each check's outcome with the rule it comes from, written as TAP
 * (one line per check as it completes, a YAML block under a failure) or as JUnit XML once the run is over.
 * Pure: text in, text out.
 * @module
 */

/**
 * A check's outcome. `tolerated` is a deviation from the spec's letter that the reference library itself makes and
 * every runtime accepts: reported (TAP `# TODO`), never failing the run.
 */
export type Outcome = "pass" | "fail" | "skip" | "tolerated";

/** One way a plugin broke a rule: the rule's source (`SPEC §...`, `CONVENTIONS §...`) and what happened. */
export interface Problem {
  rule: string;
  message: string;
}

/** A diagnostic value: text, numbers, lists and nested records (what the YAML block and JUnit body show). */
export type Diagnostic = string | number | boolean | null | undefined | Diagnostic[] | { [key: string]: Diagnostic };

/** A finished check. */
export interface CheckResult {
  /** Its number in the run (1-based, only checks selected by --only count). */
  id: number;
  title: string;
  /** The spec section the check comes from. */
  section: string;
  outcome: Outcome;
  /** Fail and tolerated: what was wrong (the first problem's rule leads); skip: why it did not run. */
  problems: Problem[];
  skipReason?: string;
  /** The plugin calls and observations behind a failure. */
  diagnostics?: Record<string, Diagnostic>;
  durationMs: number;
}

/** Whether a run with these results passes: no check failed (skips and tolerated deviations do not fail a run). */
export const runPassed = (results: readonly CheckResult[]): boolean => results.every((r) => r.outcome !== "fail");

/** Counts per outcome. */
export function tally(results: readonly CheckResult[]): Record<Outcome, number> {
  const counts: Record<Outcome, number> = { pass: 0, fail: 0, skip: 0, tolerated: 0 };
  for (const r of results) counts[r.outcome]++;
  return counts;
}

// ---- YAML (the subset TAP diagnostics need) ----

const PLAIN_SCALAR = /^[A-Za-z0-9_./][A-Za-z0-9_ ./()§-]*$/;

/** A scalar as YAML: plain when unambiguous, else double-quoted (JSON's escapes are YAML's). */
function yamlScalar(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "~";
  if (typeof value !== "string") return String(value);
  const ambiguous = /^(true|false|null|yes|no|on|off|~|[-+]?[\d.]+(e[-+]?\d+)?)$/i.test(value) || value.endsWith(" ");
  return PLAIN_SCALAR.test(value) && !ambiguous && !value.includes(": ") && !value.includes(" #") ? value : JSON.stringify(value);
}

/** The lines of `value` as YAML at `indent` (a record's members, a list's items, or a block scalar for text). */
function yamlLines(key: string, value: Diagnostic, indent: string): string[] {
  const head = `${indent}${key}:`;
  if (Array.isArray(value)) {
    if (value.length === 0) return [`${head} []`];
    return [head, ...value.flatMap((item) => yamlItem(item, `${indent}  `))];
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return [`${head} {}`];
    return [head, ...entries.flatMap(([k, v]) => yamlLines(k, v, `${indent}  `))];
  }
  if (typeof value === "string" && value.includes("\n") && !/[^\n\t\x20-\x7e\u00a0-\uffff]/.test(value)) {
    // A literal block keeps output readable; `|-` drops the final newline, `|+` keeps trailing ones.
    const chomp = value.endsWith("\n") ? "+" : "-";
    const body = (value.endsWith("\n") ? value.slice(0, -1) : value).split("\n");
    const leadingSpace = body[0]!.startsWith(" ") ? "2" : "";
    return [`${head} |${leadingSpace}${chomp}`, ...body.map((l) => (l === "" ? "" : `${indent}  ${l}`))];
  }
  return [`${head} ${yamlScalar(value)}`];
}

function yamlItem(item: Diagnostic, indent: string): string[] {
  if (item !== null && typeof item === "object" && !Array.isArray(item)) {
    const lines = Object.entries(item)
      .filter(([, v]) => v !== undefined)
      .flatMap(([k, v]) => yamlLines(k, v, `${indent}  `));
    if (lines.length === 0) return [`${indent}- {}`];
    return [`${indent}- ${lines[0]!.slice(indent.length + 2)}`, ...lines.slice(1)];
  }
  if (Array.isArray(item) || (typeof item === "string" && item.includes("\n"))) {
    return [`${indent}-`, ...yamlLines("value", item, `${indent}  `)];
  }
  return [`${indent}- ${yamlScalar(item)}`];
}

/** A YAML document of `record`, as TAP 13 puts it under a test line (`---` ... `...`, indented by two). */
export function yamlBlock(record: Record<string, Diagnostic>): string {
  const lines = Object.entries(record)
    .filter(([, v]) => v !== undefined)
    .flatMap(([k, v]) => yamlLines(k, v, "  "));
  return ["  ---", ...lines, "  ..."].join("\n") + "\n";
}

// ---- TAP ----

/** `#` and backslashes would end or escape a TAP description. */
const tapDescription = (text: string): string => text.replace(/\\/g, "\\\\").replace(/#/g, "\\#").replace(/\n/g, " ");

/** What a failure's or tolerated deviation's YAML block holds: the rule and message first, then the evidence. */
function failureRecord(r: CheckResult): Record<string, Diagnostic> {
  const [first, ...more] = r.problems;
  return {
    message: first?.message ?? "failed",
    rule: first?.rule ?? r.section,
    ...(more.length ? { more: more.map((p) => ({ rule: p.rule, message: p.message })) } : {}),
    ...r.diagnostics,
  };
}

/** A check's TAP line (and YAML block for a failure or tolerated deviation). */
export function tapEntry(r: CheckResult): string {
  const description = `${tapDescription(r.title)} [${tapDescription(r.section)}]`;
  switch (r.outcome) {
    case "pass":
      return `ok ${r.id} - ${description}\n`;
    case "skip":
      return `ok ${r.id} - ${description} # SKIP ${tapDescription(r.skipReason ?? "")}\n`;
    case "tolerated": {
      const why = `tolerated deviation: ${r.problems[0]?.message ?? ""}`;
      return `not ok ${r.id} - ${description} # TODO ${tapDescription(why)}\n${yamlBlock(failureRecord(r))}`;
    }
    case "fail":
      return `not ok ${r.id} - ${description}\n${yamlBlock(failureRecord(r))}`;
  }
}

/** The TAP stream's header lines: the version and comments about the run. */
export const tapHeader = (comments: readonly string[]): string =>
  ["TAP version 13", ...comments.map((c) => `# ${c.replace(/\n/g, " ")}`)].join("\n") + "\n";

/** The TAP stream's end: the plan (at the end, as the number of checks is known only then) and a summary comment. */
export function tapFooter(results: readonly CheckResult[]): string {
  const t = tally(results);
  return `1..${results.length}\n# pass ${t.pass}, fail ${t.fail}, skip ${t.skip}, tolerated deviations ${t.tolerated}\n`;
}

// ---- JUnit ----

/** Text as XML character data or attribute value (also dropping characters XML 1.0 cannot hold). */
function xml(text: string): string {
  return text
    .replace(/[^\t\n\r\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, "\ufffd")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

const seconds = (ms: number): string => (ms / 1000).toFixed(3);

/** What a JUnit report names besides its checks. */
export interface JUnitSuite {
  /** The suite's name (the plugin). */
  name: string;
  /** When the run started. */
  timestamp: Date;
  /** Shown as the suite's properties (plugin path, config file, versions...). */
  properties: Record<string, string>;
}

/**
 * The whole run as JUnit XML (the Jenkins/GitLab/GitHub dialect): one testsuite, a testcase per check named by its
 * title with its section as classname; failures carry the rule as `type`; tolerated deviations pass with the
 * deviation in `system-out`.
 */
export function formatJUnit(suite: JUnitSuite, results: readonly CheckResult[]): string {
  const t = tally(results);
  const time = seconds(results.reduce((s, r) => s + r.durationMs, 0));
  const counts = `tests="${results.length}" failures="${t.fail}" errors="0" skipped="${t.skip}" time="${time}"`;
  const out = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="cnitool conformance" ${counts}>`,
    `  <testsuite name="${xml(suite.name)}" ${counts} timestamp="${suite.timestamp.toISOString().replace(/\.\d+Z$/, "")}">`,
    `    <properties>`,
    ...Object.entries(suite.properties).map(([k, v]) => `      <property name="${xml(k)}" value="${xml(v)}"/>`),
    `    </properties>`,
  ];
  for (const r of results) {
    const open = `    <testcase classname="${xml(r.section)}" name="${xml(r.title)}" time="${seconds(r.durationMs)}"`;
    const body = yamlBlock(failureRecord(r)).replace(/^ {2}/gm, "");
    if (r.outcome === "pass") out.push(`${open}/>`);
    else if (r.outcome === "skip") out.push(`${open}>`, `      <skipped message="${xml(r.skipReason ?? "")}"/>`, `    </testcase>`);
    else if (r.outcome === "tolerated") {
      out.push(`${open}>`, `      <system-out>${xml(`tolerated deviation (does not fail the run)\n${body}`)}</system-out>`, `    </testcase>`);
    } else {
      const first = r.problems[0];
      out.push(
        `${open}>`,
        `      <failure message="${xml(first?.message ?? "failed")}" type="${xml(first?.rule ?? r.section)}">${xml(body)}</failure>`,
        `    </testcase>`,
      );
    }
  }
  out.push(`  </testsuite>`, `</testsuites>`);
  return out.join("\n") + "\n";
}
