/**
 * The checks of `cnitool conformance`, in the order they run: VERSION; the protocol's refusals (missing variables,
 * a config that is not JSON, a cniVersion the plugin does not claim, a config breaking the spec's name rules); an
 * attachment at the config's version (ADD, CHECK, STATUS and GC on 1.1.0, DEL twice); one per other claimed
 * version; DEL without prevResult; DEL with the namespace gone and without CNI_NETNS. A check runs only when
 * selected (--only); what it needs (an attachment, a DEL before a second DEL) is made on first use, so any
 * selection runs on its own.
 * @module
 */
import type { JsonObject } from "../../spec/json.js";
import { toCurrentResult, type Result } from "../../spec/result/index.js";
import { ALL_VERSIONS } from "../../spec/versions.js";
import { compareVersions, parseVersion } from "../../spec/version.js";
import type { CheckResult, Diagnostic, Problem } from "./report.js";
import {
  describeCall, judgeErrorDocument, judgeSuccessDocument, judgeSuccessStatus, judgeSupportedVersions, judgeVersionAnswer,
  SECTION, type ErrorDocument, type ExpectedError, type PluginCall,
} from "./output.js";
import { expectedShape, judgeResult, maskResult, shapeDifferences } from "./shape.js";
import { changesBetween, describeSnapshot, leftoverProblems, presenceProblems, type Snapshots } from "./state.js";
import type { Namespace, Sandbox } from "./sandbox.js";

/** The rule this runner adds to the spec's: a request refused for its input leaves nothing behind. */
export const REFUSAL_RULE = "RUNNER: a request refused for its input changes nothing (no link, no address, in the container or on the host)";

/** How long the kernel may take to destroy a removed namespace (and the veth peers it takes with it). */
const NAMESPACE_TEARDOWN_MS = 5000;

/** Network names the spec's name rule refuses (a leading letter or digit, then letters, digits, `_`, `.`, `-`). */
export const BAD_NAMES = ["bad/name", ".."] as const;

/** A version that was never published and never will be (the spec went from 0.4.0 to 1.0.0). */
export const NEVER_A_VERSION = "0.5.0";

/** What a suite runs against. */
export interface SuiteOptions {
  /** The plugin executable (absolute path). */
  plugin: string;
  /** The plugin's config: what a runtime puts on stdin before adding prevResult, runtimeConfig and the like. */
  config: JsonObject;
  /** CNI_PATH of every call. */
  cniPath: string;
  /** CNI_IFNAME of the attachments. */
  ifName: string;
  /** Runs only the checks whose `title [section]` matches. */
  only?: RegExp;
  sandbox: Sandbox;
  /** Called with each check as it finishes. */
  report: (result: CheckResult) => void;
  /** A remark about the run (a TAP comment). */
  note: (text: string) => void;
}

/** Thrown by a check (or what it needs) that cannot run: the check is skipped with the reason. */
class Skip extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

interface CheckBody {
  problems: Problem[];
  diagnostics?: Record<string, Diagnostic>;
  /** The problems are a tolerated deviation (see report.ts) rather than a failure. */
  tolerated?: boolean;
}

/** An ADD made in a namespace of its own, with what the namespaces held around it. */
interface Attachment {
  version: string;
  ns: Namespace;
  containerId: string;
  args: string;
  before: Snapshots;
  add: PluginCall;
  afterAdd: Snapshots;
  /** The problems of the ADD's output (exit status, one document). */
  outputProblems: Problem[];
  /** The document on stdout, when it is one JSON object. */
  raw?: JsonObject;
  /** The problems of the result as one of `version` (judgeResult). */
  resultProblems: Problem[];
  result?: Result;
  /** Set when the ADD failed because this kernel cannot make the plugin's kind of link. */
  kernelLacks?: string;
}

const once = <T>(make: () => Promise<T>): (() => Promise<T>) => {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
};

const atLeast = (v: string, min: string): boolean => compareVersions(v, min) >= 0;

/** Runs the suite; resolves with every check's result (each also given to `report` as it finishes). */
export async function runSuite(opts: SuiteOptions): Promise<CheckResult[]> {
  const { sandbox, plugin, cniPath, ifName } = opts;
  const results: CheckResult[] = [];

  async function check(title: string, section: string, body: () => Promise<CheckBody>): Promise<void> {
    if (opts.only && !opts.only.test(`${title} [${section}]`)) return;
    const started = performance.now();
    let result: Omit<CheckResult, "id" | "durationMs">;
    try {
      const b = await body();
      const outcome = b.problems.length === 0 ? "pass" : b.tolerated ? "tolerated" : "fail";
      result = { title, section, outcome, problems: b.problems, ...(outcome !== "pass" && b.diagnostics ? { diagnostics: b.diagnostics } : {}) };
    } catch (e) {
      result = e instanceof Skip
        ? { title, section, outcome: "skip", problems: [], skipReason: e.reason }
        : { title, section, outcome: "fail", problems: [{ rule: "RUNNER", message: `the check could not be carried out: ${(e as Error).message}` }] };
    }
    const done: CheckResult = { ...result, id: results.length + 1, durationMs: performance.now() - started };
    results.push(done);
    opts.report(done);
  }

  const configAt = (version: string, extra: JsonObject = {}): JsonObject => ({ ...opts.config, cniVersion: version, ...extra });
  const run = (command: string, cni: Record<string, string>, stdin: JsonObject | string): Promise<PluginCall> =>
    sandbox.runPlugin(plugin, command, { CNI_COMMAND: command, ...cni }, typeof stdin === "string" ? stdin : JSON.stringify(stdin));

  // ---- VERSION ----

  const versionCall = (input: string) => run("VERSION", {}, { cniVersion: input });
  const firstVersion = once(() => versionCall("1.1.0"));
  const answer = judgeVersionAnswer(await firstVersion());
  const claimed = answer.supported;
  opts.note(`the plugin claims: ${answer.listed?.join(", ") ?? "(no usable supportedVersions)"}`);

  const requested = typeof opts.config["cniVersion"] === "string" ? opts.config["cniVersion"] : "";
  let v0 = requested;
  if (claimed.length && !claimed.includes(requested)) {
    v0 = claimed[claimed.length - 1]!;
    opts.note(`the config's cniVersion ${JSON.stringify(requested)} is not one the plugin claims: the attachments use ${v0}, the newest it does`);
  }
  const checkVersion = atLeast(v0, "0.4.0") ? v0 : claimed.filter((v) => atLeast(v, "0.4.0")).pop();
  const gcClaimed = claimed.includes("1.1.0");

  await check("VERSION: exit 0 and one JSON document with cniVersion and supportedVersions, with only CNI_COMMAND set", SECTION.version, async () => {
    const call = await firstVersion();
    return { problems: answer.problems, diagnostics: describeCall(call) };
  });
  await check("VERSION: supportedVersions lists CNI spec versions, each once", SECTION.versionSuccess, async () => {
    if (!answer.listed) throw new Skip("the answer has no supportedVersions list");
    return { problems: judgeSupportedVersions(answer.listed), diagnostics: { supportedVersions: answer.listed } };
  });
  const otherAnswers = once(async () => {
    const answers: Array<{ v: string; call: PluginCall }> = [];
    for (const v of ALL_VERSIONS.filter((x) => x !== "1.1.0")) answers.push({ v, call: await versionCall(v) });
    return answers;
  });
  await check("VERSION: the same supportedVersions whatever spec version is on stdin", SECTION.version, async () => {
    const problems: Problem[] = [];
    for (const { v, call } of await otherAnswers()) {
      const other = judgeVersionAnswer(call);
      if (JSON.stringify(other.listed) !== JSON.stringify(answer.listed)) {
        problems.push({ rule: SECTION.version, message: `with cniVersion ${v} on stdin it lists ${JSON.stringify(other.listed ?? null)}; with 1.1.0, ${JSON.stringify(answer.listed ?? null)}` });
      }
    }
    return { problems };
  });
  await check("VERSION: the answer's cniVersion is the one on stdin", SECTION.versionSuccess, async () => {
    const seen = [{ v: "1.1.0", call: await firstVersion() }, ...(await otherAnswers())]
      .map(({ v, call }) => ({ v, said: judgeVersionAnswer(call).cniVersion }))
      .filter(({ v, said }) => said !== undefined && said !== v);
    if (seen.length === 0) return { problems: [] };
    const values = [...new Set(seen.map((s) => s.said))];
    const answered = values.length === 1 ? `${JSON.stringify(values[0])} to ${seen.map((s) => s.v).join(", ")}` : seen.map((s) => `${JSON.stringify(s.said)} to ${s.v}`).join(", ");
    return {
      tolerated: true,
      problems: [{ rule: SECTION.versionSuccess,
        message: `it answers cniVersion ${answered}; the spec asks for the input's value. Go's skel answers its own newest version, and runtimes read only supportedVersions` }],
    };
  });

  // ---- refusals: the protocol's errors, in a namespace of their own ----

  const errorNs = once(() => sandbox.namespace());
  const errorDocuments: ErrorDocument[] = [];
  const refused = async (command: string, cni: Record<string, string>, stdin: JsonObject | string, expected: ExpectedError): Promise<CheckBody> => {
    const ns = await errorNs();
    const before = await sandbox.snapshots(ns);
    const call = await run(command, cni, stdin);
    const after = await sandbox.snapshots(ns);
    const { problems, error } = judgeErrorDocument(call, expected);
    if (error) errorDocuments.push(error);
    const changes = [
      ...changesBetween(before.container, after.container).map((c) => `in the container's namespace: ${c}`),
      ...changesBetween(before.host, after.host).map((c) => `on the host: ${c}`),
    ];
    if (changes.length) problems.push({ rule: REFUSAL_RULE, message: `the refused ${command} left ${changes.join("; ")}` });
    return { problems, diagnostics: { ...describeCall(call), ...(changes.length ? { changes } : {}) } };
  };
  const fullEnv = async (): Promise<Record<string, string>> => {
    const ns = await errorNs();
    return { CNI_CONTAINERID: `${ns.name}-e`, CNI_NETNS: ns.path, CNI_IFNAME: ifName, CNI_ARGS: "", CNI_PATH: cniPath };
  };
  const without = (env: Record<string, string>, name: string) => Object.fromEntries(Object.entries(env).filter(([k]) => k !== name));
  const missingVariable = { code: 4, codeRule: SECTION.error, namesRule: SECTION.error };

  const required: Array<[string, string[], string | undefined]> = [
    ["ADD", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"], v0],
    ["DEL", ["CNI_CONTAINERID", "CNI_IFNAME"], v0],
    ["CHECK", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"], checkVersion],
  ];
  for (const [command, names, version] of required) {
    for (const name of names) {
      await check(`${command} without ${name}: error code 4 naming ${name}`, SECTION.parameters, async () => {
        if (version === undefined) throw new Skip("the plugin claims no version with CHECK (0.4.0 and later)");
        return refused(command, without(await fullEnv(), name), configAt(version), { ...missingVariable, names: [name] });
      });
    }
  }
  await check("GC without CNI_PATH: error code 4 naming CNI_PATH", SECTION.parameters, async () => {
    if (!gcClaimed) throw new Skip("the plugin does not claim 1.1.0, which brought GC");
    return refused("GC", {}, configAt("1.1.0", { "cni.dev/valid-attachments": [], "cni.dev/attachments": [] }), { ...missingVariable, names: ["CNI_PATH"] });
  });

  const notJson = (version: string) => JSON.stringify(configAt(version)).slice(0, 20);
  for (const command of ["ADD", "DEL"]) {
    await check(`${command} with a config that is not JSON: error code 6`, SECTION.error, async () =>
      refused(command, await fullEnv(), notJson(v0), { code: 6, codeRule: SECTION.error }));
  }

  const unclaimed = [...ALL_VERSIONS.filter((v) => claimed.length && !claimed.includes(v)), NEVER_A_VERSION];
  for (const version of unclaimed) {
    await check(`ADD with cniVersion ${version}, which it does not claim: error code 1`, SECTION.upgrades, async () =>
      refused("ADD", await fullEnv(), configAt(version), { code: 1, codeRule: SECTION.error }));
  }

  const { name: _name, ...nameless } = configAt(v0);
  const badConfigs: Array<[string, JsonObject]> = [
    [`ADD with a config without "name": refused`, nameless],
    ...BAD_NAMES.map((name): [string, JsonObject] => [`ADD with "name": ${JSON.stringify(name)} (the spec's name rule): refused`, configAt(v0, { name })]),
  ];
  for (const [title, config] of badConfigs) {
    await check(title, SECTION.config, async () => refused("ADD", await fullEnv(), config, {}));
  }

  await check("error documents carry cniVersion", SECTION.error, async () => {
    if (errorDocuments.length === 0) throw new Skip("no error document was printed");
    const lacking = errorDocuments.filter((e) => typeof e.cniVersion !== "string").length;
    if (lacking === 0) return { problems: [] };
    return {
      tolerated: true,
      problems: [{ rule: SECTION.error, message: `${lacking} of ${errorDocuments.length} error documents have no cniVersion; the spec lists it, Go's library never prints it and runtimes do not read it` }],
    };
  });

  // ---- attachments ----

  let attachments = 0;
  const attach = (version: string, args = ""): (() => Promise<Attachment>) => once(async () => {
    const ns = await sandbox.namespace();
    const containerId = `${ns.name}-a${++attachments}`;
    const before = await sandbox.snapshots(ns);
    const add = await run("ADD", { CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: ifName, CNI_ARGS: args, CNI_PATH: cniPath }, configAt(version));
    const afterAdd = await sandbox.snapshots(ns);
    const { problems: outputProblems, document } = judgeSuccessDocument(add, SECTION.addSuccess);
    const att: Attachment = { version, ns, containerId, args, before, add, afterAdd, outputProblems, resultProblems: [] };
    if (document) {
      att.raw = document;
      const judged = judgeResult(document, version, ns.path);
      att.resultProblems = judged.problems;
      if (judged.result) att.result = judged.result;
    } else if (add.exitCode !== 0) {
      const said = `${add.stdout}\n${add.stderr}`;
      const type = typeof opts.config["type"] === "string" ? opts.config["type"] : "";
      if (/unknown device type|operation not supported/i.test(said) && type) {
        const reason = sandbox.linkKindMissing(type);
        if (reason) att.kernelLacks = reason;
      }
    }
    return att;
  });
  /** The CNI_* variables of a call about an attachment (CNI_NETNS left out when `netns` is false). */
  const attEnv = (att: Attachment, netns = true): Record<string, string> => ({
    CNI_CONTAINERID: att.containerId, ...(netns ? { CNI_NETNS: att.ns.path } : {}), CNI_IFNAME: ifName, CNI_ARGS: att.args, CNI_PATH: cniPath,
  });
  /** The attachment, when its ADD gave a result; else the check needing it is skipped, saying why. */
  const added = async (get: () => Promise<Attachment>): Promise<Attachment & { result: Result; raw: JsonObject }> => {
    const att = await get();
    if (att.kernelLacks) throw new Skip(att.kernelLacks);
    if (!att.result || !att.raw) {
      const why = att.outputProblems[0]?.message ?? att.resultProblems[0]?.message ?? "no result";
      throw new Skip(`needs a successful ADD with cniVersion ${att.version}, which failed: ${why}`);
    }
    return att as Attachment & { result: Result; raw: JsonObject };
  };
  const withPrevResult = (att: Attachment, version: string): JsonObject => (atLeast(version, "0.4.0") && att.raw ? { prevResult: att.raw } : {});

  /** DEL of an attachment; `prevResult` as a runtime sends it (from 0.4.0) unless told not to. */
  const del = async (att: Attachment, o: { prevResult?: boolean; netns?: boolean } = {}): Promise<PluginCall> =>
    run("DEL", attEnv(att, o.netns ?? true), configAt(att.version, o.prevResult === false ? {} : withPrevResult(att, att.version)));

  /** A DEL's rules: exit 0; nothing the ADD reported and made is left (or, after a failed ADD, nothing new in the container). */
  const judgeDel = async (att: Attachment, call: PluginCall): Promise<CheckBody> => {
    const problems = judgeSuccessStatus(call, SECTION.del);
    const container = sandbox.exists(att.ns) ? await sandbox.snapshot(att.ns) : undefined;
    let host = await sandbox.snapshot();
    if (att.result) {
      const current = toCurrentResult(att.result);
      let left = leftoverProblems(current, att.ns.path, att.before, att.afterAdd, { ...(container ? { container } : {}), host });
      // A removed namespace is destroyed by the kernel a moment later, and the peers of its veths with it.
      for (let waited = 0; !container && left.length && waited < NAMESPACE_TEARDOWN_MS; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        host = await sandbox.snapshot();
        left = leftoverProblems(current, att.ns.path, att.before, att.afterAdd, { host });
      }
      problems.push(...left);
    } else if (container) {
      problems.push(...changesBetween(att.before.container, container).map((c) => ({ rule: SECTION.del, message: `after a failed ADD and its DEL, the container's namespace has a ${c}` })));
    }
    return { problems, diagnostics: { ...describeCall(call), ...(container ? { container: describeSnapshot(container) } : {}), host: describeSnapshot(host) } };
  };

  const addOutputCheck = async (get: () => Promise<Attachment>): Promise<CheckBody> => {
    const att = await get();
    if (att.kernelLacks) throw new Skip(att.kernelLacks);
    return { problems: [...att.outputProblems, ...att.resultProblems], diagnostics: describeCall(att.add) };
  };
  const checkPasses = async (get: () => Promise<Attachment>): Promise<CheckBody> => {
    const att = await added(get);
    const call = await run("CHECK", attEnv(att), configAt(att.version, { prevResult: att.raw }));
    return { problems: judgeSuccessStatus(call, SECTION.check), diagnostics: describeCall(call) };
  };

  /** STATUS and GC (1.1.0) around the attachment `get` makes at 1.1.0; before its DEL. */
  const gcChecks = async (get: () => Promise<Attachment>): Promise<void> => {
    await check("STATUS (1.1.0): exit 0, the plugin being ready for ADD", SECTION.status, async () => {
      const call = await run("STATUS", { CNI_PATH: cniPath }, configAt("1.1.0"));
      return { problems: judgeSuccessStatus(call, SECTION.status), diagnostics: describeCall(call) };
    });
    const gc = (valid: Array<{ containerID: string; ifname: string }>) =>
      run("GC", { CNI_PATH: cniPath }, configAt("1.1.0", { "cni.dev/valid-attachments": valid, "cni.dev/attachments": valid }));
    await check("GC (1.1.0) with the attachment among cni.dev/valid-attachments: exit 0, and it is kept (CHECK passes, its interfaces and addresses are there)", SECTION.gc, async () => {
      const att = await added(get);
      const call = await gc([{ containerID: att.containerId, ifname: ifName }]);
      const problems = judgeSuccessStatus(call, SECTION.gc);
      const after = await sandbox.snapshots(att.ns);
      problems.push(...presenceProblems(toCurrentResult(att.result), att.ns.path, after).map((p) => ({ rule: SECTION.gc, message: `after GC: ${p.message}` })));
      const checked = await run("CHECK", attEnv(att), configAt("1.1.0", { prevResult: att.raw }));
      problems.push(...judgeSuccessStatus(checked, SECTION.gc).map((p) => ({ rule: SECTION.gc, message: `after GC kept the attachment: ${p.message}` })));
      return { problems, diagnostics: { gc: describeCall(call), check: describeCall(checked) } };
    });
    await check("GC (1.1.0) without the attachment in cni.dev/valid-attachments: exit 0", SECTION.gc, async () => {
      await added(get);
      const call = await gc([]);
      return { problems: judgeSuccessStatus(call, SECTION.gc), diagnostics: describeCall(call) };
    });
  };
  const noGc = async (): Promise<void> => {
    for (const title of ["STATUS (1.1.0): exit 0, the plugin being ready for ADD", "GC (1.1.0): the attachment kept, then collected"]) {
      await check(title, title.startsWith("GC") ? SECTION.gc : SECTION.status, async () => {
        throw new Skip("the plugin does not claim 1.1.0, which brought STATUS and GC");
      });
    }
  };

  // The config's version: ADD, CHECK, (STATUS, GC), DEL, DEL again.
  const main = attach(v0);
  await check(`ADD (cniVersion ${v0}): exit 0 and one JSON document on stdout, a valid ${v0} result`, SECTION.addSuccess, () => addOutputCheck(main));
  await check(`ADD (cniVersion ${v0}): the interfaces and addresses it reports are there`, SECTION.add, async () => {
    const att = await added(main);
    return {
      problems: presenceProblems(toCurrentResult(att.result), att.ns.path, att.afterAdd),
      diagnostics: { result: JSON.stringify(att.raw), container: describeSnapshot(att.afterAdd.container), host: describeSnapshot(att.afterAdd.host) },
    };
  });
  if (atLeast(v0, "0.4.0")) await check(`CHECK (cniVersion ${v0}) right after ADD passes`, SECTION.check, () => checkPasses(main));
  if (v0 === "1.1.0") await gcChecks(main);
  const mainDel = once(async () => del(await main()));
  await check(`DEL (cniVersion ${v0}${atLeast(v0, "0.4.0") ? ", with prevResult" : ""}): exit 0, and nothing the ADD reported is left`, SECTION.del, async () => {
    const att = await main();
    if (att.kernelLacks) throw new Skip(att.kernelLacks);
    return judgeDel(att, await mainDel());
  });
  await check("DEL again (DEL may follow DEL): exit 0", SECTION.del, async () => {
    const att = await main();
    if (att.kernelLacks) throw new Skip(att.kernelLacks);
    await mainDel();
    const call = await del(att);
    return { problems: judgeSuccessStatus(call, SECTION.del), diagnostics: describeCall(call) };
  });
  if (v0 !== "1.1.0" && !gcClaimed) await noGc();

  // Every other version it claims: the result in that version's shape.
  for (const version of claimed.filter((v) => v !== v0)) {
    const older = compareVersions(version, v0) < 0;
    const att = attach(version);
    await check(`ADD with cniVersion ${version}: ${older ? `the ${v0} result in ${version}'s shape, as the spec converts it` : `a valid ${version} result`}`, older ? SECTION.upgrades : SECTION.addSuccess, async () => {
      const a = await att();
      if (a.kernelLacks) throw new Skip(a.kernelLacks);
      const own = [...a.outputProblems, ...a.resultProblems];
      if (!older) return { problems: own, diagnostics: describeCall(a.add) };
      const reference = await added(main).catch((e: unknown) => {
        // Without the config version's result there is nothing to convert; what this ADD printed can still be wrong.
        if (e instanceof Skip && a.add.exitCode === 0 && own.length) return undefined;
        throw e;
      });
      if (!reference) return { problems: own, diagnostics: describeCall(a.add) };
      const expected = expectedShape(reference.result, reference.ns.path, version);
      if ("conversionError" in expected) {
        // Nothing can be printed in this version: the ADD must fail, as a failure.
        const { problems } = judgeErrorDocument(a.add);
        return { problems: problems.map((p) => ({ ...p, message: `the ${v0} result has no ${version} form (${expected.conversionError}), so the ADD must fail: ${p.message}` })), diagnostics: describeCall(a.add) };
      }
      const problems = [...own];
      const differences = a.raw ? shapeDifferences(expected.shape, maskResult(a.raw, a.ns.path)) : [];
      if (differences.length) {
        problems.push({ rule: SECTION.upgrades, message: `not what converting the ${v0} result to ${version} gives (addresses, MACs and host link names aside): ${differences.join("; ")}` });
      }
      return { problems, diagnostics: { ...describeCall(a.add), expected: JSON.stringify(expected.shape), ...(a.raw ? { got: JSON.stringify(maskResult(a.raw, a.ns.path)) } : {}) } };
    });
    if (atLeast(version, "0.4.0")) await check(`CHECK (cniVersion ${version}) right after ADD passes`, SECTION.check, () => checkPasses(att));
    if (version === "1.1.0") await gcChecks(att);
    await check(`DEL (cniVersion ${version}): exit 0, and nothing the ADD made is left`, SECTION.del, async () => {
      const a = await att();
      if (a.kernelLacks) throw new Skip(a.kernelLacks);
      return judgeDel(a, await del(a));
    });
  }

  // CNI_ARGS as Kubernetes runtimes send them, then DEL without prevResult.
  const k8sArgs = "IgnoreUnknown=1;K8S_POD_NAMESPACE=conformance;K8S_POD_NAME=pod;K8S_POD_INFRA_CONTAINER_ID=sandbox;CONFORMANCE_UNKNOWN_KEY=1";
  const plain = attach(v0, k8sArgs);
  await check(`ADD with CNI_ARGS "${k8sArgs}" (IgnoreUnknown=1 and keys it does not know): a valid result`, SECTION.cniArgs, () => addOutputCheck(plain));
  await check("DEL without prevResult: exit 0, and nothing the ADD reported is left", SECTION.del, async () => {
    const att = await added(plain);
    return judgeDel(att, await del(att, { prevResult: false }));
  });

  // The container's namespace removed before DEL, as when a runtime cleans up after a crash.
  const orphan = attach(v0);
  const orphanDel = once(async () => {
    const att = await added(orphan);
    sandbox.removeNamespace(att.ns);
    return { att, call: await del(att) };
  });
  await check("DEL with the container's namespace gone: exit 0, and the host links the ADD made are gone", SECTION.del, async () => {
    const { att, call } = await orphanDel();
    return judgeDel(att, call);
  });
  await check("DEL without CNI_NETNS (optional for DEL), the namespace gone: exit 0", SECTION.parameters, async () => {
    const { att } = await orphanDel();
    const call = await del(att, { netns: false });
    return { problems: judgeSuccessStatus(call, SECTION.del), diagnostics: describeCall(call) };
  });

  return results;
}

/** Why `config` cannot be used as a plugin's config (undefined when it can): a JSON object with cniVersion and type. */
export function configProblem(config: unknown): string | undefined {
  if (typeof config !== "object" || config === null || Array.isArray(config)) return "the config must be a JSON object (one plugin's configuration)";
  const c = config as JsonObject;
  if (typeof c["cniVersion"] !== "string" || c["cniVersion"] === "") return `the config needs "cniVersion" (a version string)`;
  try {
    parseVersion(c["cniVersion"]);
  } catch (e) {
    return `the config's cniVersion: ${(e as Error).message}`;
  }
  if (typeof c["name"] !== "string" || c["name"] === "") return `the config needs "name"`;
  if (typeof c["type"] !== "string" || c["type"] === "") return `the config needs "type"`;
  return undefined;
}

