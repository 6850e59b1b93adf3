/**
 * Generated bad input for plugins (fast-check arbitraries), shared by the in-process tests (cli/bad-input.test.ts)
 * and the ones through the binaries and the resident server (integration/bad-input.test.ts): a plugin's valid
 * sample configs (testing/plugin-samples.ts) mutated — wrong types, missing and extra keys, huge and negative
 * numbers, bad addresses and CIDRs, deep nesting, odd Unicode, capitalised keys, broken JSON — and hostile CNI_*
 * environments. Runs are seeded (TSCNI_FUZZ_SEED) and sized by TSCNI_FUZZ_RUNS, so a failure is reproducible and
 * a long run is one variable away.
 * @module
 */
import fc from "fast-check";
import type { JsonValue } from "#go-json/json.js";
import { nullResults } from "./null-results.js";
import type { Sample } from "./plugin-samples.js";

/** Cases per plugin (CI: 500 in-process; the binaries get a sample of them). */
export const FUZZ_RUNS = Number(process.env["TSCNI_FUZZ_RUNS"] ?? 500);
/** The seed of every generated run (printed by fast-check with a failing case). */
export const FUZZ_SEED = Number(process.env["TSCNI_FUZZ_SEED"] ?? 20261123);

/** The well-known CNI error codes a config or environment error may carry (never 999, never 0). */
export const WELL_KNOWN_CODES = new Set([1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51]);

const nested = (depth: number, leaf: JsonValue, asArray: boolean): JsonValue => {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v };
  return v;
};

/** Values that are wrong somewhere: every JSON kind, extremes, bad addresses, odd text, deep nesting. */
export const hostileValue: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.constantFrom<JsonValue>(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    -0.5,
    1e308,
    -1e308,
    2 ** 53,
    2 ** 63,
    2 ** 64,
    -(2 ** 63),
    4294967296,
    65536,
    4096,
    99999,
    "",
    " ",
    "0",
    "-1",
    "true",
    "null",
    "10.0.0.256",
    "10.0.0.1/33",
    "::g",
    "fd00::/129",
    "10.0.0.0/8 ",
    " 10.0.0.1",
    "1.2.3",
    "0.0.0.0/0",
    "::/0",
    "255.255.255.255",
    "10.1.0.0/16",
    "fe80::1%eth0",
    "aa:bb:cc:dd:ee",
    "ff:ff:ff:ff:ff:ff",
    "00:00:00:00:00:00",
    "..",
    "../..",
    "a/../../b",
    "eth0\n",
    "x\u0000y",
    "\ud800",
    "\u202e",
    "é",
    "🦀",
    "tcp",
    "TCP",
    "sctp",
    "icmp",
    "none",
    "a".repeat(300),
    "9".repeat(40),
    [],
    {},
    [null],
    [{}],
    [[]],
    { "": null },
    // Results with null entries (as a prevResult, or anywhere): Go's libcni crashes on them (cni#1191, cni#1192).
    ...nullResults("1.1.0").map((r) => r.result),
    ...nullResults("0.4.0").map((r) => r.result),
    ...nullResults("0.2.0").map((r) => r.result),
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 32 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.tuple(fc.integer({ min: 20, max: 200 }), fc.constant(null as JsonValue), fc.boolean()).map(([d, leaf, arr]) => nested(d, leaf, arr)),
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>,
);

type Path = Array<string | number>;

/** Every path into a JSON value (objects' keys, arrays' indexes), the root excluded. */
function pathsOf(v: JsonValue, prefix: Path = [], out: Path[] = [], depth = 0): Path[] {
  if (depth > 8 || v === null || typeof v !== "object") return out;
  const entries: Array<[string | number, JsonValue]> = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  for (const [k, child] of entries) {
    const p = [...prefix, k];
    out.push(p);
    pathsOf(child, p, out, depth + 1);
  }
  return out;
}

const clone = (v: JsonValue): JsonValue => JSON.parse(JSON.stringify(v)) as JsonValue;

function parentOf(root: JsonValue, path: Path): JsonValue | undefined {
  let v: JsonValue | undefined = root;
  for (const k of path.slice(0, -1)) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, JsonValue>)[k as string];
  }
  return v;
}

/** One change to a config. */
type Mutation =
  | { kind: "replace"; pick: number; value: JsonValue }
  | { kind: "delete"; pick: number }
  | { kind: "extra"; pick: number; key: string; value: JsonValue }
  | { kind: "capitalise"; pick: number; value: JsonValue | undefined };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("replace" as const), pick: fc.nat(), value: hostileValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("extra" as const),
      pick: fc.nat(),
      key: fc.oneof(
        fc.string({ maxLength: 12 }),
        fc.constantFrom("type", "cniVersion", "ipam", "__proto__", "constructor", "prevResult", "runtimeConfig", "args"),
      ),
      value: hostileValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("capitalise" as const), pick: fc.nat(), value: fc.option(hostileValue, { nil: undefined }) }),
  },
);

function applyMutation(root: JsonValue, m: Mutation): void {
  const paths = pathsOf(root);
  if (paths.length === 0) return;
  const path = paths[m.pick % paths.length]!;
  const parent = parentOf(root, path);
  if (parent === null || typeof parent !== "object" || parent === undefined) return;
  const key = path[path.length - 1]!;
  const obj = parent as Record<string | number, JsonValue>;
  switch (m.kind) {
    case "replace":
      obj[key] = clone(m.value);
      break;
    case "delete":
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete obj[key];
      break;
    case "extra": {
      const target = obj[key];
      if (target !== null && typeof target === "object" && !Array.isArray(target)) {
        // defineProperty: "__proto__" becomes a real own key, as JSON text with that key would give.
        Object.defineProperty(target, m.key, { value: clone(m.value), enumerable: true, writable: true, configurable: true });
      } else obj[key] = clone(m.value);
      break;
    }
    case "capitalise":
      if (!Array.isArray(parent) && typeof key === "string") {
        const value = m.value === undefined ? obj[key]! : clone(m.value);
        delete obj[key];
        obj[key.toUpperCase() === key ? key.toLowerCase() : key.toUpperCase()] = value;
      }
      break;
  }
}

/** Ways to break the JSON text itself. */
type TextBreak =
  | { kind: "none" }
  | { kind: "truncate"; at: number }
  | { kind: "bytes"; at: number; bytes: number[] }
  | { kind: "duplicate"; key: string; value: JsonValue };

const textBreak: fc.Arbitrary<TextBreak> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: "none" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("bytes" as const),
      at: fc.nat(),
      bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("duplicate" as const),
      key: fc.constantFrom("type", "cniVersion", "name", "ipam", "prevResult"),
      value: hostileValue,
    }),
  },
);

function render(config: JsonValue, b: TextBreak): Buffer {
  const text = JSON.stringify(config);
  switch (b.kind) {
    case "none":
      return Buffer.from(text);
    case "truncate":
      return Buffer.from(text.slice(0, b.at % Math.max(1, text.length)));
    case "bytes": {
      const buf = Buffer.from(text);
      const at = b.at % Math.max(1, buf.length);
      return Buffer.concat([buf.subarray(0, at), Buffer.from(b.bytes), buf.subarray(at)]);
    }
    case "duplicate":
      // Go takes the last of duplicate keys: a bad value after a good one must be what is read.
      return Buffer.from(
        text
          .replace(/^\{/, `{${JSON.stringify(b.key)}:${JSON.stringify(b.value)},`)
          .replace(/\}$/, `,${JSON.stringify(b.key)}:${JSON.stringify(b.value)}}`),
      );
  }
}

/** Hostile CNI_ARGS strings. */
export const hostileCniArgs: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    "IgnoreUnknown=1",
    "IP=10.0.0.2",
    "IP=garbage",
    "IP=10.0.0.1/24",
    "MAC=zz",
    "K8S_POD_NAME",
    "=;;=",
    ";",
    "a=b=c",
    "IgnoreUnknown=1;IP=10.99.0.5;MAC=0a:58:0a:01:00:09",
    "IgnoreUnknown=true;X=" + "y".repeat(2000),
    "IP=::1;IP=::2",
  ),
  fc.string({ maxLength: 40 }),
);

/** A generated bad config of a plugin: its stdin bytes and CNI_ARGS. */
export interface BadConfig {
  stdin: Buffer;
  cniArgs: string;
  /** What it was made from, for the failure message. */
  describe: string;
}

/**
 * Mutated configs of a plugin. `rewrite` adjusts each sample before mutation (the integration tests point its
 * dataDirs and names at their own).
 */
export function badConfigs(samples: readonly Sample[], rewrite: (c: JsonValue) => JsonValue = (c) => c): fc.Arbitrary<BadConfig> {
  return fc
    .record({
      sample: fc.nat({ max: samples.length - 1 }),
      mutations: fc.array(mutation, { minLength: 1, maxLength: 4 }),
      text: textBreak,
      cniArgs: fc.oneof(fc.constant<string | undefined>(undefined), hostileCniArgs),
    })
    .map(({ sample, mutations, text, cniArgs }) => {
      const base = samples[sample]!;
      const config = rewrite(clone(base.config));
      for (const m of mutations) applyMutation(config, m);
      const bad: BadConfig = {
        stdin: render(config, text),
        cniArgs: cniArgs ?? base.cniArgs ?? "",
        describe: `sample ${sample}, ${JSON.stringify(mutations).slice(0, 400)}, text ${text.kind}`,
      };
      // How fast-check prints a failing case: readable text rather than a byte array.
      Object.defineProperty(bad, fc.toStringMethod, {
        value: () => `${bad.describe}\n  stdin: ${bad.stdin.toString().slice(0, 1500)}\n  CNI_ARGS: ${JSON.stringify(bad.cniArgs)}`,
      });
      return bad;
    });
}

/** Hostile values for the CNI_* variables (undefined: unset). */
export const hostileEnvValue: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    "",
    " ",
    "..",
    "../../etc",
    "/",
    "/proc/self/ns/net",
    "/dev/null",
    "/nonexistent/netns",
    "a/b",
    "x\ny",
    "x\ty",
    "-",
    "eth0",
    "lo",
    "a".repeat(16),
    "a".repeat(300),
    "ADD",
    "add",
    "VERSION",
    "GC",
    "STATUS",
    "CHECK",
    "DEL",
    "BOGUS",
    "é",
    "c1",
    "IgnoreUnknown=1",
  ),
  fc.string({ maxLength: 20 }),
);

/** A hostile CNI environment (CNI_COMMAND among the real ones most of the time). */
export const hostileEnv = fc.record({
  CNI_COMMAND: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom("ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION") },
    { weight: 1, arbitrary: hostileEnvValue },
  ),
  CNI_CONTAINERID: hostileEnvValue,
  CNI_NETNS: hostileEnvValue,
  CNI_IFNAME: hostileEnvValue,
  CNI_ARGS: fc.option(hostileCniArgs, { nil: undefined }),
  CNI_PATH: hostileEnvValue,
});

/**
 * What is wrong with a failed call's output (one CNI error document on stdout, a well-known code, no stack
 * trace), or undefined. `allowInternal`: the config was valid and the failure is the system's (a missing link,
 * CHECK of a container that was never added), which Go's plugins too report as 999.
 */
export function checkErrorOutput(stdout: string, stderr: string, exitCode: number, allowInternal = false): string | undefined {
  if (exitCode === 0) return "exit status 0 with an error expected";
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    return `stdout is not one JSON document: ${JSON.stringify(stdout.slice(0, 300))}`;
  }
  return checkErrorDocument(doc, stderr, allowInternal);
}

/** What is wrong with a CNI error (its code and message; a stack trace in stderr), or undefined. */
export function checkErrorDocument(doc: unknown, stderr = "", allowInternal = false): string | undefined {
  const e = doc as { code?: unknown; msg?: unknown };
  if (typeof e !== "object" || e === null) return `not an error object: ${JSON.stringify(doc)}`;
  if (typeof e.code !== "number" || !(WELL_KNOWN_CODES.has(e.code) || (allowInternal && e.code === 999)))
    return `code ${String(e.code)} is not a well-known config/environment error code: ${JSON.stringify(doc)}`;
  if (typeof e.msg !== "string" || e.msg.length === 0) return `no message: ${JSON.stringify(doc)}`;
  if (/\n\s+at .+:\d+:\d+/.test(String(e.msg)) || /\n\s+at .+:\d+:\d+/.test(stderr))
    return `a stack trace: ${JSON.stringify(doc)} ${stderr.slice(0, 400)}`;
  return undefined;
}
