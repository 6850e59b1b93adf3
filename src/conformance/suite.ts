/**
 * The checks of `cnitool conformance`, in the order they run: VERSION (here); the protocol's refusals
 * (refusals.ts); the attachments (attachments.ts). The VERSION answer decides what follows: the versions tried, and
 * the attachments' version (the config's, or the newest the plugin claims). A check runs only when selected
 * (--only); what it needs (an attachment, a DEL before a second DEL) is made on first use, so any selection runs on
 * its own.
 * @module
 */

import type { JsonObject } from "#go-json/json.js";
import { messageOf } from "#spec/errors.js";
import { parseVersion } from "#spec/version.js";
import { ALL_VERSIONS, CURRENT_VERSION } from "#spec/versions.js";
import { attachmentChecks } from "./attachments.js";
import { type Claims, once, Skip, SuiteContext, type SuiteOptions } from "./context.js";
import { describeCall, judgeSupportedVersions, judgeVersionAnswer, type PluginCall, SECTION, type VersionAnswer } from "./output.js";
import { refusalChecks } from "./refusals.js";
import type { CheckResult } from "./report.js";

/** Runs the suite; resolves with every check's result (each also given to `report` as it finishes). */
export async function runSuite(opts: SuiteOptions): Promise<CheckResult[]> {
  const version = (input: string) =>
    opts.sandbox.runPlugin(opts.plugin, "VERSION", { CNI_COMMAND: "VERSION" }, JSON.stringify({ cniVersion: input }));
  const first = await version(CURRENT_VERSION);
  const answer = judgeVersionAnswer(first);
  opts.note(`the plugin claims: ${answer.listed?.join(", ") ?? "(no usable supportedVersions)"}`);
  const ctx = new SuiteContext(opts, claimsOf(answer, opts));
  await versionChecks(ctx, answer, first, version);
  await refusalChecks(ctx);
  await attachmentChecks(ctx);
  return ctx.results;
}

/** The versions the plugin claims, and the attachments' version (said in a note when it is not the config's). */
function claimsOf(answer: VersionAnswer, opts: SuiteOptions): Claims {
  const claimed = answer.supported;
  const requested = String(opts.config["cniVersion"]);
  if (claimed.length === 0 || claimed.includes(requested)) return { claimed, v0: requested };
  const v0 = claimed[claimed.length - 1]!;
  opts.note(`the config's cniVersion ${JSON.stringify(requested)} is not one the plugin claims: the attachments use ${v0}, the newest it does`);
  return { claimed, v0 };
}

/** VERSION: the answer's form, its list, the same list whatever the input, and the input's cniVersion echoed. */
async function versionChecks(
  ctx: SuiteContext,
  answer: VersionAnswer,
  first: PluginCall,
  version: (input: string) => Promise<PluginCall>,
): Promise<void> {
  await ctx.check(
    "VERSION: exit 0 and one JSON document with cniVersion and supportedVersions, with only CNI_COMMAND set",
    SECTION.version,
    async () => ({ problems: answer.problems, diagnostics: describeCall(first) }),
  );
  await ctx.check("VERSION: supportedVersions lists CNI spec versions, each once", SECTION.versionSuccess, async () => {
    if (!answer.listed) throw new Skip("the answer has no supportedVersions list");
    return { problems: judgeSupportedVersions(answer.listed), diagnostics: { supportedVersions: answer.listed } };
  });
  const otherAnswers = once(async () => {
    const others: Array<{ v: string; call: PluginCall }> = [];
    for (const v of ALL_VERSIONS.filter((x) => x !== CURRENT_VERSION)) others.push({ v, call: await version(v) });
    return others;
  });
  await ctx.check("VERSION: the same supportedVersions whatever spec version is on stdin", SECTION.version, async () => {
    const problems = [];
    for (const { v, call } of await otherAnswers()) {
      const other = judgeVersionAnswer(call);
      if (JSON.stringify(other.listed) !== JSON.stringify(answer.listed)) {
        problems.push({
          rule: SECTION.version,
          message: `with cniVersion ${v} on stdin it lists ${JSON.stringify(other.listed ?? null)}; with ${CURRENT_VERSION}, ${JSON.stringify(answer.listed ?? null)}`,
        });
      }
    }
    return { problems };
  });
  await ctx.check("VERSION: the answer's cniVersion is the one on stdin", SECTION.versionSuccess, async () => {
    const seen = [{ v: CURRENT_VERSION, call: first }, ...(await otherAnswers())]
      .map(({ v, call }) => ({ v, said: judgeVersionAnswer(call).cniVersion }))
      .filter(({ v, said }) => said !== undefined && said !== v);
    if (seen.length === 0) return { problems: [] };
    const values = [...new Set(seen.map((s) => s.said))];
    const answered =
      values.length === 1
        ? `${JSON.stringify(values[0])} to ${seen.map((s) => s.v).join(", ")}`
        : seen.map((s) => `${JSON.stringify(s.said)} to ${s.v}`).join(", ");
    return {
      tolerated: true,
      problems: [
        {
          rule: SECTION.versionSuccess,
          message: `it answers cniVersion ${answered}; the spec asks for the input's value. Go's skel answers its own newest version, and runtimes read only supportedVersions`,
        },
      ],
    };
  });
}

/** Why `config` cannot be used as a plugin's config (undefined when it can): an object with cniVersion, name and type. */
export function configProblem(config: unknown): string | undefined {
  if (typeof config !== "object" || config === null || Array.isArray(config)) return "the config must be a JSON object (one plugin's configuration)";
  const c = config as JsonObject;
  if (typeof c["cniVersion"] !== "string" || c["cniVersion"] === "") return `the config needs "cniVersion" (a version string)`;
  try {
    parseVersion(c["cniVersion"]);
  } catch (e) {
    return `the config's cniVersion: ${messageOf(e)}`;
  }
  if (typeof c["name"] !== "string" || c["name"] === "") return `the config needs "name"`;
  if (typeof c["type"] !== "string" || c["type"] === "") return `the config needs "type"`;
  return undefined;
}
