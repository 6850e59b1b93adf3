/**
 * skel: the main function of a CNI plugin. It reads the environment and stdin, validates them per verb,
 * enforces version support, calls the plugin's handler, and prints the result in the config's version or
 * the error as CNI JSON on stdout. A plugin's main is one call to `pluginMain`.
 * @module
 */

import type { GoType } from "#go-json/go-decode.js";
import { isJsonObject, type JsonObject, jsonKindName, parseJson } from "#go-json/json.js";
import {
  CniError,
  decodingFailure,
  ErrorCode,
  incompatibleVersion,
  invalidConfig,
  invalidEnv,
  invalidNetNS,
  messageOf,
  pluginError,
  withReason,
  wrap,
} from "#spec/errors.js";
import type { Result, Result020, Result040, Result100, Version020, Version040, Version100 } from "#spec/result/index.js";
import { describeTraceContext } from "#spec/trace-context.js";
import { validateContainerId, validateInterfaceName, validateNetworkName } from "#spec/validate.js";
import { parsedConfigVersion, reconcileVersion, type VersionInfo, versionGreaterThanOrEqualTo } from "#spec/version.js";
import { phase } from "#sys/phase-trace.js";
import { OrderedWriter, readStdin } from "#sys/plugin-stdio.js";

/** What a plugin handler is given: the CNI environment and the raw config bytes. */
export interface CmdArgs {
  containerID: string;
  netns: string;
  ifName: string;
  /** CNI_ARGS, raw. */
  args: string;
  /** CNI_PATH, raw. */
  path: string;
  netnsOverride: string;
  stdinData: Buffer;
  /**
   * The whole environment of this call, which delegations pass on (never read process.env on a request's path:
   * in-process runs share one process between many calls).
   */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * This call's stderr (warnings, delegates' diagnostics): never process.stderr, for the same reason. Only
   * write(); a plain object rather than a stream, as node:stream is not loaded at start-up (docs/startup.md).
   */
  stderr: CallStderr;
}

/** A call's stderr: anything with write() (process.stderr, a Writable, or the plain object the skel gives). */
export interface CallStderr {
  /** Writes text or bytes to the call's stderr. */
  write(chunk: string | Uint8Array): unknown;
}

/**
 * A handler returns a result (printed in the config's version), a string (printed verbatim), or nothing.
 * Throwing a CniError reports it as is; any other throw becomes code 999.
 */
export type Handler = (args: CmdArgs) => Promise<Result | string | void> | Result | string | void;

/**
 * A plugin's handlers, one per verb. ADD and DEL need one; CHECK needs one when the plugin declares 0.4.0 or later;
 * a verb without one answers a CNI error naming it, except STATUS (ready) and GC (nothing to collect), which
 * answer success: a runtime sends them to every plugin of a list.
 */
export interface PluginFuncs {
  add?: Handler;
  check?: Handler;
  del?: Handler;
  status?: Handler;
  gc?: Handler;
}

// Compile-time checks of a plugin's handlers (types only: nothing here exists at run time; src/skel/type-tests/
// holds each mistake with the first lines of the error it gets under every compiler the tests run). pluginMain
// takes its handlers as one generic `F`, inferred from what the author wrote, and intersects it with
// `CheckedFuncs<F, V>`: a property that is fine there is `unknown` (so `F`'s own type stands), and a mistake is a
// string literal type that says what is wrong. The compiler then reports "Type '…' is not assignable to type
// '"ips[].gatway is not a key of a 1.0.0 result …"'", or "Property 'del' is missing … '{ del: "DEL is in every CNI
// version …" }'", with the key, the verb or the version named in its first lines. TypeScript alone does not
// check an arrow function's returned object literal for extra keys, nor a named function's inferred result.

/** The result shape of a version (never for a string that is not one). */
type ResultOfVersion<V> = V extends Version100 ? Result100 : V extends Version040 ? Result040 : V extends Version020 ? Result020 : never;

type Scalar = string | number | boolean | bigint | symbol | null | undefined | void;

/** The keys of `S` as one string, "a, b, c" (their order is the compiler's). */
type KeyList<S, Keys = keyof S & string> = [Keys] extends [never] ? "" : JoinKeys<Keys>;
type LastOf<U> = (U extends unknown ? (x: () => U) => void : never) extends (x: infer L) => void ? (L extends () => infer R ? R : never) : never;
type JoinKeys<U, Done extends string = ""> = [U] extends [never]
  ? Done
  : LastOf<U> extends infer K extends string
    ? JoinKeys<Exclude<U, K>, Done extends "" ? K : `${K}, ${Done}`>
    : Done;

/**
 * The first mistake of value type `T` against shape `S` at `Path`, as a message naming the key, or never: a key
 * `S` does not have (misspelled, or another version's), or a key `S` requires that `T` lacks.
 */
type ShapeProblem<T, S, Path extends string, V extends string> = T extends Scalar
  ? never
  : T extends readonly (infer E)[]
    ? NonNullable<S> extends readonly (infer SE)[]
      ? ShapeProblem<E, SE, `${Path}[]`, V>
      : never
    : StrayKey<T, NonNullable<S>, Path, V> extends infer P extends string
      ? [P] extends [never]
        ? MissingKey<T, NonNullable<S>, Path, V> extends infer M extends string
          ? [M] extends [never]
            ? InnerProblem<T, NonNullable<S>, Path, V>
            : M
          : never
        : P
      : never;

type Dot<Path extends string, K extends string> = Path extends "" ? K : `${Path}.${K}`;

type StrayKey<T, S, Path extends string, V extends string> = {
  [K in keyof T & string]: K extends keyof S
    ? never
    : `${Dot<Path, K>} is not a key of a ${V} result (${Path extends "" ? "a result" : Path} takes: ${KeyList<S>})`;
}[keyof T & string];

type RequiredKeys<S> = { [K in keyof S]-?: Partial<Pick<S, K>> extends Pick<S, K> ? never : K }[keyof S] & string;

type MissingKey<T, S, Path extends string, V extends string> = {
  [K in RequiredKeys<S>]: K extends keyof T ? never : `${Dot<Path, K>} is missing: a ${V} result requires it`;
}[RequiredKeys<S>];

type InnerProblem<T, S, Path extends string, V extends string> = {
  [K in keyof T & keyof S & string]: ShapeProblem<T[K], S[K], Dot<Path, K>, V>;
}[keyof T & keyof S & string];

/** What is wrong with what a handler returns (never when it is fine): nothing at all from add, or a result's mistake. */
type ResultProblem<R, Verb extends string> = [R] extends [never]
  ? never // it always throws
  : [R] extends [void | undefined | null]
    ? Verb extends "add"
      ? "add returns nothing: ADD must return a result (the previous one, passed on, for a chained plugin)"
      : never
    : EachResultProblem<R>;

/** What is wrong with one result (a member of what a handler returns). */
type EachResultProblem<R> = R extends Scalar
  ? never
  : R extends { readonly cniVersion: infer V extends string }
    ? string extends V
      ? // A version known only at run time (a named function's literal, the config's version): the shape must be
        // one some version has; skel checks it against the label at run time.
        [
          ShapeProblem<R, Result100, "", "1.x">,
          ShapeProblem<R, Result040, "", "0.3.x/0.4.0">,
          ShapeProblem<R, Result020, "", "0.1.0/0.2.0">,
        ] extends [infer A, infer B, infer C]
        ? [A] extends [never]
          ? never
          : [B] extends [never]
            ? never
            : [C] extends [never]
              ? never
              : A
        : never
      : [ResultOfVersion<V>] extends [never]
        ? V extends ""
          ? never
          : `cniVersion '${V}' is not a CNI version: want one of ${JoinKeys<Exclude<Version100 | Version040 | Version020, "">>}`
        : ShapeProblem<R, ResultOfVersion<V>, "", V>
    : "the result has no cniVersion: label it with the version whose shape it has (skel prints it in the config's version)";

/** A handler's problem: what its (awaited) result has wrong, as a message, or never. */
type HandlerProblem<H, Verb extends string> = H extends undefined
  ? never
  : H extends (...args: never[]) => infer R
    ? ResultProblem<Awaited<R>, Verb>
    : `${Verb} is not a function`;

/** The handlers a plugin declaring versions `V` must have, each missing one with the reason as its type. */
type RequiredVerbs<F, V extends string> = ("add" extends keyof F ? unknown : { add: "ADD is in every CNI version: a plugin needs an add handler" }) &
  ("del" extends keyof F ? unknown : { del: "DEL is in every CNI version: a plugin needs a del handler (one with nothing to undo returns)" }) &
  ("check" extends keyof F
    ? unknown
    : [V & ("0.4.0" | "1.0.0" | "1.1.0")] extends [never]
      ? string extends V
        ? { check: "CHECK is in 0.4.0 on: a plugin needs a check handler" }
        : unknown
      : { check: `CHECK is in 0.4.0 on, and this plugin declares ${JoinKeys<V & ("0.4.0" | "1.0.0" | "1.1.0")>}: it needs a check handler` });

/** The verbs a plugin can handle. */
type Verb = keyof PluginFuncs;

/** What pluginMain infers a plugin's handlers as before it checks them: any value per verb, the verbs' args typed. */
export type LooseFuncs = { [K in Verb]?: (args: CmdArgs) => LooseReturn };
type LooseResult = { readonly cniVersion: Version100 | Version040 | Version020 | (string & {}) };
type LooseReturn = LooseResult | string | void | undefined | PromiseLike<LooseResult | string | void | undefined>;

/**
 * Handlers as pluginMain checks them: `unknown` where `F` is right, a message type where it is not (a verb that is
 * not one, a result with a key its version does not have or without one it requires, a version that is not one,
 * an ADD returning nothing, a handler that the declared versions `V` require and `F` lacks).
 */
export type CheckedFuncs<F, V extends string = string> = {
  [K in keyof F]: K extends Verb
    ? [HandlerProblem<F[K], K>] extends [never]
      ? unknown
      : HandlerProblem<F[K], K>
    : `${K & string} is not a verb: want add, check, del, status or gc`;
} & RequiredVerbs<F, V>;

/**
 * What a plugin module exports as `plugin`: its handlers and how it reads its config. Its versions and about text
 * are not its own to declare: the program catalog (plugins/catalog.ts) gives them.
 */
export interface PluginModule {
  funcs: PluginFuncs;
  /**
   * How the plugin reads its config: the schema it decodes stdin into (the Go plugin's struct, read with Go's
   * rules: go-json/go-decode.ts) and the parser its ADD uses, which validates without changing anything.
   */
  config?: PluginConfigReader;
}

/** A plugin as skel runs it, as a process or in-process: its module, the versions it speaks and its about text. */
export interface PluginDefinition extends PluginModule {
  versionInfo: VersionInfo;
  about: string;
}

/** A plugin's config schema and parser (see PluginModule.config). */
export interface PluginConfigReader {
  schema: GoType<unknown>;
  /** Parses and validates stdin (and CNI_ARGS) as ADD would, changing nothing; throws the CNI error ADD would give. */
  parse: (stdin: Buffer, cniArgs: string) => unknown;
}

/** Where skel reads and writes; pluginMain uses the real process, tests inject their own. */
export interface PluginIO {
  env: Record<string, string | undefined>;
  /** Reads the whole config. */
  readStdin: () => Promise<Uint8Array>;
  /** Where results and errors go. */
  writeStdout: (s: string) => void;
  /** Where diagnostics go. */
  writeStderr: (s: string) => void;
  /** Resolves when everything written has reached its destination (for output written asynchronously). */
  flush?: () => Promise<void>;
}

type EnvVar = "CNI_COMMAND" | "CNI_CONTAINERID" | "CNI_NETNS" | "CNI_IFNAME" | "CNI_ARGS" | "CNI_PATH" | "CNI_NETNS_OVERRIDE";

/** Which verbs require each variable, in the order they are reported. */
const ENV_RULES: ReadonlyArray<{ name: EnvVar; requiredFor: readonly string[]; validate?: (v: string) => void }> = [
  { name: "CNI_COMMAND", requiredFor: ["*"] },
  { name: "CNI_CONTAINERID", requiredFor: ["ADD", "DEL", "CHECK"], validate: validateContainerId },
  { name: "CNI_NETNS", requiredFor: ["ADD", "CHECK"] },
  { name: "CNI_IFNAME", requiredFor: ["ADD", "DEL", "CHECK"], validate: validateInterfaceName },
  { name: "CNI_ARGS", requiredFor: [] },
  { name: "CNI_PATH", requiredFor: ["ADD", "DEL", "CHECK", "GC", "STATUS"] },
  { name: "CNI_NETNS_OVERRIDE", requiredFor: [] },
];

function readEnv(env: PluginIO["env"]): { command: string; values: Record<EnvVar, string> } {
  const command = env["CNI_COMMAND"] ?? "";
  const values = {} as Record<EnvVar, string>;
  const missing: string[] = [];
  for (const rule of ENV_RULES) {
    const value = env[rule.name] ?? "";
    values[rule.name] = value;
    const required = rule.requiredFor.includes("*") || rule.requiredFor.includes(command);
    if (!required) continue;
    if (value === "") missing.push(rule.name);
    else rule.validate?.(value);
  }
  if (missing.length > 0) {
    throw invalidEnv(`required env variables [${missing.join(",")}] missing`);
  }
  return { command, values };
}

/** Every config must decode and carry a valid network name, whatever the verb. Gives the parsed config. */
function validateConfigName(stdin: Uint8Array): JsonObject {
  let raw: unknown;
  try {
    raw = parseJson(stdin);
    if (!isJsonObject(raw)) throw new Error(`json: cannot unmarshal ${jsonKindName(raw)} into Go value of type skel.reqForCmdEntry`);
  } catch (e) {
    throw wrap("error unmarshall network config", e, ErrorCode.DecodingFailure);
  }
  const name = raw["name"];
  if (name !== undefined && name !== null && typeof name !== "string") {
    throw decodingFailure(`error unmarshall network config: json: cannot unmarshal ${jsonKindName(name)} into Go struct field .name of type string`);
  }
  const networkName = (name as string | undefined) ?? "";
  if (networkName === "") throw invalidConfig("missing network name");
  validateNetworkName(networkName);
  return raw;
}

function configVersionOf(config: JsonObject): string {
  try {
    return parsedConfigVersion(config);
  } catch (e) {
    throw decodingFailure(messageOf(e));
  }
}

/** `bytes` as a Buffer, sharing its memory. */
const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/** True when `netnsPath` is the network namespace this process runs in. */
async function isOwnNetns(netnsPath: string): Promise<boolean> {
  // (node:fs is loaded here, past the checks a bad call fails: docs/startup.md.)
  const { statSync } = await import("node:fs");
  try {
    const target = statSync(netnsPath);
    const own = statSync("/proc/self/ns/net");
    return target.dev === own.dev && target.ino === own.ino;
  } catch {
    return false; // unopenable (e.g. already gone on DEL) is fine
  }
}

/** CHECK/GC/STATUS need a config version >= `minimum` and a plugin version >= the config's. */
function gateVersion(verb: string, minimum: string, configVersion: string, info: VersionInfo): void {
  let allowed: boolean;
  try {
    allowed = versionGreaterThanOrEqualTo(configVersion, minimum);
  } catch (e) {
    throw decodingFailure(messageOf(e));
  }
  if (!allowed) throw incompatibleVersion(`config version does not allow ${verb}`);
  for (const v of info.supportedVersions) {
    let ok: boolean;
    try {
      ok = versionGreaterThanOrEqualTo(v, configVersion);
    } catch (e) {
      throw decodingFailure(messageOf(e));
    }
    if (ok) return;
  }
  throw incompatibleVersion(`plugin version does not allow ${verb}`);
}

const HANDLERS: Record<string, keyof PluginFuncs> = { ADD: "add", DEL: "del", CHECK: "check", STATUS: "status", GC: "gc" };
const MIN_VERSION: Record<string, string> = { CHECK: "0.4.0", GC: "1.1.0", STATUS: "1.1.0" };

/**
 * Runs one plugin invocation against `io`. Returns the error to report, or undefined on success (output has
 * been written). Never throws. `funcs` may be a loader of the handlers: it is called after the environment, the
 * config's name and version and the namespace have passed their checks, right before the handler runs.
 */
export async function runPlugin(
  funcs: PluginFuncs | (() => Promise<PluginFuncs>),
  info: VersionInfo,
  about: string,
  io: PluginIO,
): Promise<CniError | undefined> {
  let pluginType: unknown;
  try {
    let env: ReturnType<typeof readEnv>;
    try {
      env = readEnv(io.env);
    } catch (e) {
      if (e instanceof CniError && e.code === ErrorCode.InvalidEnvironmentVariables && !io.env["CNI_COMMAND"] && about) {
        io.writeStderr(info.aboutText(about));
        return undefined;
      }
      throw e;
    }
    const { command, values } = env;
    if (command === "VERSION") {
      io.writeStdout(info.encode());
      return undefined;
    }
    let stdin: Uint8Array;
    try {
      stdin = await io.readStdin();
    } catch (e) {
      throw wrap("error reading from stdin", e, ErrorCode.IOFailure);
    }
    const config = validateConfigName(stdin);
    pluginType = config["type"];
    const handlerName = HANDLERS[command];
    if (!handlerName) throw invalidEnv(`unknown CNI_COMMAND: ${command}`);

    const configVersion = configVersionOf(config);
    const minimum = MIN_VERSION[command];
    if (minimum) gateVersion(command, minimum, configVersion, info);
    reconcileVersion(configVersion, info);

    // Go's skel checks this after the handler ran, when an ADD has already configured (and DEL removed
    // interfaces in) the plugin's own namespace; checked first, a mistaken CNI_NETNS changes nothing.
    if ((command === "ADD" || command === "DEL") && values.CNI_NETNS) {
      const override = values.CNI_NETNS_OVERRIDE.toLowerCase();
      if (override !== "true" && override !== "1" && (await isOwnNetns(values.CNI_NETNS))) {
        throw invalidNetNS("plugin's netns and netns from CNI_NETNS should not be the same");
      }
    }
    // A plugin given as its loader is loaded only now: a call refused above never pays for the plugin's code.
    const handler = (typeof funcs === "function" ? await phase("load", "the plugin's code", funcs) : funcs)[handlerName];
    if (typeof handler !== "function") {
      if (command === "STATUS" || command === "GC") return undefined; // ready; nothing to collect
      throw missingHandler(command, handlerName, handler);
    }
    const args: CmdArgs = {
      containerID: values.CNI_CONTAINERID,
      netns: values.CNI_NETNS,
      ifName: values.CNI_IFNAME,
      args: values.CNI_ARGS,
      path: values.CNI_PATH,
      netnsOverride: values.CNI_NETNS_OVERRIDE,
      stdinData: asBuffer(stdin),
      env: io.env,
      stderr: { write: (chunk: string | Uint8Array) => (io.writeStderr(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString()), true) },
    };
    const output: unknown = await handler(args);
    if (command === "ADD") checkAddOutput(output);
    if (typeof output === "string") io.writeStdout(output);
    else if (typeof output === "object" && output !== null) {
      const { printResult, resultShapeMismatch } = await import("#spec/result/index.js");
      const mismatch = resultShapeMismatch(output as Result);
      if (mismatch) throw pluginError(mismatch);
      io.writeStdout(printResult(output as Result, configVersion));
    }
    return undefined;
  } catch (e) {
    const error = withPermissionHint(CniError.from(e), e);
    logTracedError(io, error, typeof pluginType === "string" ? pluginType : "");
    if (!(e instanceof CniError) && io.env["TSCNI_DEBUG"] === "1") io.writeStderr(`${stackOf(e)}\n`);
    return error;
  }
}

/**
 * The error of a verb whose handler the plugin lacks (a plugin's bug: code 999, as Go's skel gives any plain
 * error of a plugin; the codes below 100 tell the runtime that its own input was wrong, and it was not).
 */
function missingHandler(command: string, name: string, found: unknown): CniError {
  const what = found === undefined ? `has no ${name} handler` : `has a ${name} handler that is not a function (${typeof found})`;
  const why =
    command === "CHECK" ? "CHECK is in every version from 0.4.0 on, and this call's config is one of them" : `${command} is in every CNI version`;
  return pluginError(`the plugin ${what}: ${why}`);
}

/**
 * What an ADD handler returned must be a result: an object, or a string holding a JSON object (printed as it
 * is). Anything else would leave the runtime an empty or unreadable stdout, and a failure far from its cause.
 */
function checkAddOutput(output: unknown): void {
  let what: string | undefined;
  if (output === undefined || output === null) what = `returned ${String(output)}`;
  else if (typeof output === "string") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(output);
    } catch {
      parsed = undefined;
    }
    if (!isJsonObject(parsed)) what = `returned a string that is not a JSON object (${JSON.stringify(output.slice(0, 40))})`;
  } else if (typeof output !== "object" || Array.isArray(output)) what = `returned ${Array.isArray(output) ? "an array" : `a ${typeof output}`}`;
  if (what) throw pluginError(`ADD gave no result: its handler ${what}; it must return the result`);
}

/** A thrown value's stack (its text when it has none), for TSCNI_DEBUG=1's stderr. */
function stackOf(e: unknown): string {
  const stack = e instanceof Error ? e.stack : undefined;
  return stack ?? `thrown: ${String(e)}`;
}

/** CAP_NET_ADMIN's bit in /proc/<pid>/status's CapEff. */
const CAP_NET_ADMIN = 12n;

/**
 * A call refused by the kernel for want of privilege (EPERM or EACCES anywhere in the error's chain: a system call,
 * a netlink answer, a tool's "Operation not permitted") from a process without CAP_NET_ADMIN gets the reason in
 * its message: plugins run as root for runtimes, and a bare "Operation not permitted" leaves whoever ran one by
 * hand guessing. With the capability, the error is the kernel's own and is left as it is.
 */
function withPermissionHint(error: CniError, thrown: unknown): CniError {
  let denied = false;
  for (let c: unknown = thrown, depth = 0; c && depth < 16 && !denied; c = (c as { cause?: unknown }).cause, depth++) {
    const { code, kind } = c as { code?: unknown; kind?: unknown };
    denied = code === "EPERM" || code === "EACCES" || kind === "denied";
  }
  if (!denied && !/\b(operation not permitted|permission denied)\b/i.test(error.msg)) return error;
  let capEff = 0n;
  try {
    const status = process.getBuiltinModule("node:fs").readFileSync("/proc/self/status", "latin1");
    capEff = BigInt(`0x${/\nCapEff:\s*([0-9a-f]+)/.exec(status)?.[1] ?? "0"}`);
  } catch {
    /* no /proc: say nothing more */
    return error;
  }
  if ((capEff >> CAP_NET_ADMIN) & 1n) return error;
  const uid = process.geteuid?.() ?? -1;
  return withReason(error, `this plugin needs root with CAP_NET_ADMIN, as a container runtime runs it; it ran as uid ${uid} without CAP_NET_ADMIN`);
}

/**
 * A failed call that carries a trace context (TRACEPARENT, TRACESTATE, BAGGAGE) says so on stderr, in one line of
 * `key="value"` pairs (values quoted as JSON strings) naming the call, the error and the trace, so an operator can
 * find the failure of a trace; stdout keeps only the error document.
 */
function logTracedError(io: PluginIO, error: CniError, pluginType: string): void {
  const trace = describeTraceContext(io.env);
  if (!trace) return;
  const q = (value: string | undefined) => JSON.stringify(value ?? "");
  const { env } = io;
  io.writeStderr(
    `CNI plugin error: type=${q(pluginType)} command=${q(env["CNI_COMMAND"])} containerID=${q(env["CNI_CONTAINERID"])} ` +
      `ifname=${q(env["CNI_IFNAME"])} code=${error.code} msg=${q(error.message)} ${trace}\n`,
  );
}

/**
 * The real process's IO: its file descriptors 0, 1 and 2 (not process.stdin/stdout: see sys/stdio.ts).
 * `stdinInMemoryFile`: stdin is the C launcher's in-memory copy of the config (sys/plugin-stdio.ts).
 */
export function processIO(opts: { stdinInMemoryFile?: boolean } = {}): PluginIO {
  const out = new OrderedWriter();
  return {
    env: process.env,
    readStdin: () => readStdin(opts.stdinInMemoryFile),
    writeStdout: (s) => out.write(1, s),
    writeStderr: (s) => out.write(2, s),
    flush: () => out.flush(),
  };
}

/**
 * A plugin's main: run, print any error as CNI JSON on stdout, and set the exit code (1 on error).
 * Resolves when output is flushed; it does not call process.exit, so pending writes complete. The compiler checks
 * the handlers against the versions `info` declares (see CheckedFuncs); skel checks the same at run time.
 */
export async function pluginMain<const F extends LooseFuncs, const V extends string>(
  funcs: F & CheckedFuncs<F, NoInfer<V>>,
  info: VersionInfo<V>,
  about: string,
  io: PluginIO = processIO(),
): Promise<void> {
  await finishCall(await runPlugin(funcs as PluginFuncs, info, about, io), io);
}

/**
 * pluginMain for a plugin given as the loader of its handlers (tscni's own programs): the loader is called only
 * once the call has passed the checks every call must (see runPlugin). Unchecked by the compiler.
 */
export async function pluginMainLoading(
  load: () => Promise<PluginFuncs>,
  info: VersionInfo,
  about: string,
  io: PluginIO = processIO(),
): Promise<void> {
  await finishCall(await runPlugin(load, info, about, io), io);
}

async function finishCall(err: CniError | undefined, io: PluginIO): Promise<void> {
  if (err) {
    io.writeStdout(err.print());
    process.exitCode = 1;
  }
  await io.flush?.();
}
