/**
 * The attachment checks, each ADD in a fresh container namespace: at the config's version, ADD (one document, a
 * valid result, what it reports present), CHECK, CHECK with null entries in prevResult (success or one CNI error),
 * STATUS and GC on 1.1.0, DEL (nothing left) and DEL again; at each other claimed version, the result in the shape
 * the spec's conversion gives, CHECK, DEL; ADD with the CNI_ARGS Kubernetes runtimes send, then DEL without
 * prevResult; DEL with an empty prevResult and with one holding null entries (spec PR #1156: DEL is best effort);
 * DEL with the namespace gone, and without CNI_NETNS.
 * @module
 */
import type { JsonObject } from "#go-json/json.js";
import { type Result, toCurrentResult } from "#spec/result/index.js";
import { compareVersions, versionGreaterThanOrEqualTo } from "#spec/version.js";
import { type CheckBody, once, Skip, type SuiteContext } from "./context.js";
import { describeCall, judgeErrorDocument, judgeSuccessDocument, judgeSuccessStatus, type PluginCall, SECTION } from "./output.js";
import type { Problem } from "./report.js";
import type { Namespace } from "./sandbox.js";
import { expectedShape, judgeResult, maskResult, shapeDifferences } from "./shape.js";
import { changesBetween, describeSnapshot, leftoverProblems, presenceProblems, type Snapshots } from "./state.js";

/** How long the kernel may take to destroy a removed namespace (and the veth peers it takes with it). */
const NAMESPACE_TEARDOWN_MS = 5000;

/** CNI_ARGS as Kubernetes runtimes send them, with a key no plugin knows. */
export const K8S_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=conformance;K8S_POD_NAME=pod;K8S_POD_INFRA_CONTAINER_ID=sandbox;CONFORMANCE_UNKNOWN_KEY=1";

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

/** An attachment whose ADD gave a result. */
type Added = Attachment & { result: Result; raw: JsonObject };

/** Runs the attachment checks. */
export async function attachmentChecks(ctx: SuiteContext): Promise<void> {
  const { sandbox } = ctx;
  const { ifName, cniPath } = ctx.opts;
  const { v0, claimed } = ctx.claims;

  let attachments = 0;
  /** An attachment at `version`, made on first use. */
  const attach = (version: string, args = ""): (() => Promise<Attachment>) =>
    once(async () => {
      const ns = await sandbox.namespace();
      const containerId = `${ns.name}-a${++attachments}`;
      const before = await sandbox.snapshots(ns);
      const add = await ctx.run(
        "ADD",
        { CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: ifName, CNI_ARGS: args, CNI_PATH: cniPath },
        ctx.configAt(version),
      );
      const afterAdd = await sandbox.snapshots(ns);
      const { problems: outputProblems, document } = judgeSuccessDocument(add, SECTION.addSuccess);
      const att: Attachment = { version, ns, containerId, args, before, add, afterAdd, outputProblems, resultProblems: [] };
      if (document) {
        att.raw = document;
        const judged = judgeResult(document, version, ns.path);
        att.resultProblems = judged.problems;
        if (judged.result) att.result = judged.result;
      } else if (add.exitCode !== 0) {
        // The kernel refusing the plugin's kind of link (a module this machine lacks) skips what needs the attachment.
        const type = typeof ctx.opts.config["type"] === "string" ? ctx.opts.config["type"] : "";
        if (type && /unknown device type|operation not supported/i.test(`${add.stdout}\n${add.stderr}`)) {
          const reason = sandbox.linkKindMissing(type);
          if (reason) att.kernelLacks = reason;
        }
      }
      return att;
    });
  /** The attachment, its ADD made; skips the check for a kernel without the plugin's link kind. */
  const made = async (get: () => Promise<Attachment>): Promise<Attachment> => {
    const att = await get();
    if (att.kernelLacks) throw new Skip(att.kernelLacks);
    return att;
  };
  /** The attachment, when its ADD gave a result; else the check needing it is skipped, saying why. */
  const added = async (get: () => Promise<Attachment>): Promise<Added> => {
    const att = await made(get);
    if (!att.result || !att.raw) {
      const why = att.outputProblems[0]?.message ?? att.resultProblems[0]?.message ?? "no result";
      throw new Skip(`needs a successful ADD with cniVersion ${att.version}, which failed: ${why}`);
    }
    return att as Added;
  };
  /** The CNI_* variables of a call about an attachment (CNI_NETNS left out when `netns` is false). */
  const attEnv = (att: Attachment, netns = true): Record<string, string> => ({
    CNI_CONTAINERID: att.containerId,
    ...(netns ? { CNI_NETNS: att.ns.path } : {}),
    CNI_IFNAME: ifName,
    CNI_ARGS: att.args,
    CNI_PATH: cniPath,
  });
  /** DEL of an attachment, with prevResult as a runtime sends it (from 0.4.0) unless `prevResult` is false. */
  const del = (att: Attachment, o: { prevResult?: boolean | JsonObject; netns?: boolean } = {}): Promise<PluginCall> => {
    const given = typeof o.prevResult === "object" ? o.prevResult : att.raw;
    const prev: JsonObject = o.prevResult !== false && versionGreaterThanOrEqualTo(att.version, "0.4.0") && given ? { prevResult: given } : {};
    return ctx.run("DEL", attEnv(att, o.netns ?? true), ctx.configAt(att.version, prev));
  };

  /** A DEL's rules: exit 0; nothing the ADD reported and made is left (after a failed ADD: nothing new in the container). */
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
      problems.push(
        ...changesBetween(att.before.container, container).map((c) => ({
          rule: SECTION.del,
          message: `after a failed ADD and its DEL, the container's namespace has a ${c}`,
        })),
      );
    }
    return {
      problems,
      diagnostics: { ...describeCall(call), ...(container ? { container: describeSnapshot(container) } : {}), host: describeSnapshot(host) },
    };
  };

  const addOutput = async (get: () => Promise<Attachment>): Promise<CheckBody> => {
    const att = await made(get);
    return { problems: [...att.outputProblems, ...att.resultProblems], diagnostics: describeCall(att.add) };
  };
  const checkPasses = async (get: () => Promise<Attachment>): Promise<CheckBody> => {
    const att = await added(get);
    const call = await ctx.run("CHECK", attEnv(att), ctx.configAt(att.version, { prevResult: att.raw }));
    return { problems: judgeSuccessStatus(call, SECTION.check), diagnostics: describeCall(call) };
  };

  /** STATUS, then GC keeping the attachment `get` makes at 1.1.0, then GC without it; before its DEL. */
  const statusAndGc = async (get: () => Promise<Attachment>): Promise<void> => {
    await ctx.check("STATUS (1.1.0): exit 0, the plugin being ready for ADD", SECTION.status, async () => {
      const call = await ctx.run("STATUS", { CNI_PATH: cniPath }, ctx.configAt("1.1.0"));
      return { problems: judgeSuccessStatus(call, SECTION.status), diagnostics: describeCall(call) };
    });
    // libcni sends the valid attachments under both keys (the tagged 1.1.0 text named it cni.dev/attachments).
    const gc = (valid: Array<{ containerID: string; ifname: string }>) =>
      ctx.run("GC", { CNI_PATH: cniPath }, ctx.configAt("1.1.0", { "cni.dev/valid-attachments": valid, "cni.dev/attachments": valid }));
    await ctx.check(
      "GC (1.1.0) with the attachment among cni.dev/valid-attachments: exit 0, and it is kept (CHECK passes, its interfaces and addresses are there)",
      SECTION.gc,
      async () => {
        const att = await added(get);
        const call = await gc([{ containerID: att.containerId, ifname: ifName }]);
        const problems = judgeSuccessStatus(call, SECTION.gc);
        const after = await sandbox.snapshots(att.ns);
        problems.push(
          ...presenceProblems(toCurrentResult(att.result), att.ns.path, after).map((p) => ({ rule: SECTION.gc, message: `after GC: ${p.message}` })),
        );
        const checked = await ctx.run("CHECK", attEnv(att), ctx.configAt("1.1.0", { prevResult: att.raw }));
        problems.push(
          ...judgeSuccessStatus(checked, SECTION.gc).map((p) => ({ rule: SECTION.gc, message: `after GC kept the attachment: ${p.message}` })),
        );
        return { problems, diagnostics: { gc: describeCall(call), check: describeCall(checked) } };
      },
    );
    await ctx.check("GC (1.1.0) without the attachment in cni.dev/valid-attachments: exit 0", SECTION.gc, async () => {
      await added(get);
      const call = await gc([]);
      return { problems: judgeSuccessStatus(call, SECTION.gc), diagnostics: describeCall(call) };
    });
  };

  // The config's version: ADD, CHECK, (STATUS, GC), DEL, DEL again.
  const main = attach(v0);
  await ctx.check(`ADD (cniVersion ${v0}): exit 0 and one JSON document on stdout, a valid ${v0} result`, SECTION.addSuccess, () => addOutput(main));
  await ctx.check(`ADD (cniVersion ${v0}): the interfaces and addresses it reports are there`, SECTION.add, async () => {
    const att = await added(main);
    return {
      problems: presenceProblems(toCurrentResult(att.result), att.ns.path, att.afterAdd),
      diagnostics: {
        result: JSON.stringify(att.raw),
        container: describeSnapshot(att.afterAdd.container),
        host: describeSnapshot(att.afterAdd.host),
      },
    };
  });
  if (versionGreaterThanOrEqualTo(v0, "0.4.0")) {
    await ctx.check(`CHECK (cniVersion ${v0}) right after ADD passes`, SECTION.check, () => checkPasses(main));
    await ctx.check(
      "CHECK with a prevResult holding null entries (cni#1191, cni#1192): exit 0, or one CNI error document",
      SECTION.check,
      async () => {
        const att = await added(main);
        const call = await ctx.run("CHECK", attEnv(att), ctx.configAt(att.version, { prevResult: withNullEntries(att.raw) }));
        return { problems: call.exitCode === 0 ? [] : judgeErrorDocument(call).problems, diagnostics: describeCall(call) };
      },
    );
  }
  if (v0 === "1.1.0") await statusAndGc(main);
  const mainDel = once(async () => del(await made(main)));
  await ctx.check(
    `DEL (cniVersion ${v0}${versionGreaterThanOrEqualTo(v0, "0.4.0") ? ", with prevResult" : ""}): exit 0, and nothing the ADD reported is left`,
    SECTION.del,
    async () => judgeDel(await made(main), await mainDel()),
  );
  await ctx.check("DEL again (DEL may follow DEL): exit 0", SECTION.del, async () => {
    const att = await made(main);
    await mainDel();
    const call = await del(att);
    return { problems: judgeSuccessStatus(call, SECTION.del), diagnostics: describeCall(call) };
  });
  if (v0 !== "1.1.0" && !claimed.includes("1.1.0")) {
    for (const [title, section] of [
      ["STATUS (1.1.0): exit 0, the plugin being ready for ADD", SECTION.status],
      ["GC (1.1.0): the attachment kept, then collected", SECTION.gc],
    ] as const) {
      await ctx.check(title, section, async () => {
        throw new Skip("the plugin does not claim 1.1.0, which brought STATUS and GC");
      });
    }
  }

  // Every other version it claims: the result in that version's shape.
  for (const version of claimed.filter((v) => v !== v0)) {
    const older = compareVersions(version, v0) < 0;
    const att = attach(version);
    const title = older
      ? `ADD with cniVersion ${version}: the ${v0} result in ${version}'s shape, as the spec converts it`
      : `ADD with cniVersion ${version}: a valid ${version} result`;
    await ctx.check(title, older ? SECTION.upgrades : SECTION.addSuccess, async () => {
      const a = await made(att);
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
        return {
          problems: problems.map((p) => ({
            ...p,
            message: `the ${v0} result has no ${version} form (${expected.conversionError}), so the ADD must fail: ${p.message}`,
          })),
          diagnostics: describeCall(a.add),
        };
      }
      const differences = a.raw ? shapeDifferences(expected.shape, maskResult(a.raw, a.ns.path)) : [];
      if (differences.length) {
        own.push({
          rule: SECTION.upgrades,
          message: `not what converting the ${v0} result to ${version} gives (addresses, MACs and host link names aside): ${differences.join("; ")}`,
        });
      }
      return {
        problems: own,
        diagnostics: {
          ...describeCall(a.add),
          expected: JSON.stringify(expected.shape),
          ...(a.raw ? { got: JSON.stringify(maskResult(a.raw, a.ns.path)) } : {}),
        },
      };
    });
    if (versionGreaterThanOrEqualTo(version, "0.4.0"))
      await ctx.check(`CHECK (cniVersion ${version}) right after ADD passes`, SECTION.check, () => checkPasses(att));
    if (version === "1.1.0") await statusAndGc(att);
    await ctx.check(`DEL (cniVersion ${version}): exit 0, and nothing the ADD made is left`, SECTION.del, async () => {
      const a = await made(att);
      return judgeDel(a, await del(a));
    });
  }

  // CNI_ARGS as Kubernetes runtimes send them, then DEL without prevResult.
  const k8s = attach(v0, K8S_ARGS);
  await ctx.check(`ADD with CNI_ARGS "${K8S_ARGS}" (IgnoreUnknown=1 and keys it does not know): a valid result`, SECTION.cniArgs, () =>
    addOutput(k8s),
  );
  await ctx.check("DEL without prevResult: exit 0, and nothing the ADD reported is left", SECTION.del, async () => {
    const att = await added(k8s);
    return judgeDel(att, await del(att, { prevResult: false }));
  });

  // DEL is best effort (spec PR #1156): a prevResult that is empty, or holds null entries, is no reason to fail.
  if (versionGreaterThanOrEqualTo(v0, "0.4.0")) {
    const empty = attach(v0);
    await ctx.check("DEL with an empty prevResult ({}, spec PR #1156): exit 0, and nothing the ADD reported is left", SECTION.del, async () => {
      const att = await added(empty);
      return judgeDel(att, await del(att, { prevResult: {} }));
    });
    const nulls = attach(v0);
    await ctx.check(
      "DEL with a prevResult holding null entries (cni#1191, cni#1192): exit 0, and nothing the ADD reported is left",
      SECTION.del,
      async () => {
        const att = await added(nulls);
        return judgeDel(att, await del(att, { prevResult: withNullEntries(att.raw) }));
      },
    );
  }

  // The container's namespace removed before DEL, as when a runtime cleans up after a crash.
  const orphan = attach(v0);
  const orphanDel = once(async () => {
    const att = await added(orphan);
    sandbox.removeNamespace(att.ns);
    return { att, call: await del(att) };
  });
  await ctx.check("DEL with the container's namespace gone: exit 0, and the host links the ADD made are gone", SECTION.del, async () => {
    const { att, call } = await orphanDel();
    return judgeDel(att, call);
  });
  await ctx.check("DEL without CNI_NETNS (optional for DEL), the namespace gone: exit 0", SECTION.parameters, async () => {
    const { att } = await orphanDel();
    const call = await del(att, { netns: false });
    return { problems: judgeSuccessStatus(call, SECTION.del), diagnostics: describeCall(call) };
  });
}

/**
 * A result with null entries added, as runtimes have been seen to pass them and as Go's libcni conversions crash on
 * (containernetworking/cni PRs #1191, #1192): a null first interface and first IP (the IPs' interface indexes moved
 * along), null routes and DNS.
 */
export function withNullEntries(result: JsonObject): JsonObject {
  const interfaces = Array.isArray(result["interfaces"]) ? result["interfaces"] : [];
  const ips = (Array.isArray(result["ips"]) ? result["ips"] : []).map((ip) =>
    ip !== null && typeof ip === "object" && !Array.isArray(ip) && typeof ip["interface"] === "number"
      ? { ...ip, interface: ip["interface"] + 1 }
      : ip,
  );
  return { ...result, interfaces: [null, ...interfaces], ips: [null, ...ips], routes: null, dns: null };
}
