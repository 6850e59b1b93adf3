/**
 * The protocol's refusals: calls the plugin must fail, each judged by the error rules (one error document on stdout,
 * a well-known code, a message, a non-zero exit) plus the code its rule names, and by this runner's rule that a
 * refused request changes nothing. Missing CNI_* variables (code 4), a config that is not JSON (6), a cniVersion
 * the plugin does not claim (1), configs breaking the spec's name rules; then whether the error documents carried
 * cniVersion (a tolerated deviation when not). All in one container namespace of their own.
 * @module
 */
import type { JsonObject } from "#go-json/json.js";
import { versionGreaterThanOrEqualTo } from "#spec/version.js";
import { ALL_VERSIONS } from "#spec/versions.js";
import { type CheckBody, once, Skip, type SuiteContext } from "./context.js";
import { describeCall, type ErrorDocument, type ExpectedError, judgeErrorDocument, SECTION } from "./output.js";
import { changesBetween } from "./state.js";

/** The rule this runner adds to the spec's: a request refused for its input leaves nothing behind. */
export const REFUSAL_RULE = "RUNNER: a request refused for its input changes nothing (no link, no address, in the container or on the host)";

/** Network names the spec's name rule refuses (a leading letter or digit, then letters, digits, `_`, `.`, `-`). */
export const BAD_NAMES = ["bad/name", ".."] as const;

/** A version that was never published and never will be (the spec went from 0.4.0 to 1.0.0). */
export const NEVER_A_VERSION = "0.5.0";

/** The variables each command requires (SPEC §Execution Protocol / Parameters), CNI_COMMAND aside. */
const REQUIRED: ReadonlyArray<[command: string, names: string[]]> = [
  ["ADD", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]],
  ["DEL", ["CNI_CONTAINERID", "CNI_IFNAME"]],
  ["CHECK", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]],
];

/** Runs the refusal checks. */
export async function refusalChecks(ctx: SuiteContext): Promise<void> {
  const { v0, claimed } = ctx.claims;
  const errorNs = once(() => ctx.sandbox.namespace());
  const errorDocuments: ErrorDocument[] = [];

  /** One call that must fail as `expected` says, judged with what it left in the namespaces. */
  const refused = async (command: string, cni: Record<string, string>, stdin: JsonObject | string, expected: ExpectedError): Promise<CheckBody> => {
    const ns = await errorNs();
    const before = await ctx.sandbox.snapshots(ns);
    const call = await ctx.run(command, cni, stdin);
    const after = await ctx.sandbox.snapshots(ns);
    const { problems, error } = judgeErrorDocument(call, expected);
    if (error) errorDocuments.push(error);
    const changes = [
      ...changesBetween(before.container, after.container).map((c) => `in the container's namespace: ${c}`),
      ...changesBetween(before.host, after.host).map((c) => `on the host: ${c}`),
    ];
    if (changes.length) problems.push({ rule: REFUSAL_RULE, message: `the refused ${command} left ${changes.join("; ")}` });
    return { problems, diagnostics: { ...describeCall(call), ...(changes.length ? { changes } : {}) } };
  };
  /** Every CNI_* variable an attachment call has. */
  const fullEnv = async (): Promise<Record<string, string>> => {
    const ns = await errorNs();
    return { CNI_CONTAINERID: `${ns.name}-e`, CNI_NETNS: ns.path, CNI_IFNAME: ctx.opts.ifName, CNI_ARGS: "", CNI_PATH: ctx.opts.cniPath };
  };
  const without = (env: Record<string, string>, name: string) => Object.fromEntries(Object.entries(env).filter(([k]) => k !== name));
  const missingVariable = { code: 4 };

  const checkVersion = versionGreaterThanOrEqualTo(v0, "0.4.0") ? v0 : claimed.filter((v) => versionGreaterThanOrEqualTo(v, "0.4.0")).pop();
  for (const [command, names] of REQUIRED) {
    const version = command === "CHECK" ? checkVersion : v0;
    for (const name of names) {
      await ctx.check(`${command} without ${name}: error code 4 naming ${name}`, SECTION.parameters, async () => {
        if (version === undefined) throw new Skip("the plugin claims no version with CHECK (0.4.0 and later)");
        return refused(command, without(await fullEnv(), name), ctx.configAt(version), { ...missingVariable, names: [name] });
      });
    }
  }
  await ctx.check("GC without CNI_PATH: error code 4 naming CNI_PATH", SECTION.parameters, async () => {
    if (!claimed.includes("1.1.0")) throw new Skip("the plugin does not claim 1.1.0, which brought GC");
    return refused("GC", {}, ctx.configAt("1.1.0", { "cni.dev/valid-attachments": [], "cni.dev/attachments": [] }), {
      ...missingVariable,
      names: ["CNI_PATH"],
    });
  });

  const cutShort = JSON.stringify(ctx.configAt(v0)).slice(0, 20);
  for (const command of ["ADD", "DEL"]) {
    await ctx.check(`${command} with a config that is not JSON: error code 6`, SECTION.error, async () =>
      refused(command, await fullEnv(), cutShort, { code: 6 }),
    );
  }

  const unclaimed = [...ALL_VERSIONS.filter((v) => claimed.length && !claimed.includes(v)), NEVER_A_VERSION];
  for (const version of unclaimed) {
    await ctx.check(`ADD with cniVersion ${version}, which it does not claim: error code 1`, SECTION.upgrades, async () =>
      refused("ADD", await fullEnv(), ctx.configAt(version), { code: 1 }),
    );
  }

  const { name: _name, ...nameless } = ctx.configAt(v0);
  const badConfigs: Array<[string, JsonObject]> = [
    [`ADD with a config without "name": refused`, nameless],
    ...BAD_NAMES.map((name): [string, JsonObject] => [
      `ADD with "name": ${JSON.stringify(name)} (the spec's name rule): refused`,
      ctx.configAt(v0, { name }),
    ]),
  ];
  for (const [title, config] of badConfigs) {
    await ctx.check(title, SECTION.config, async () => refused("ADD", await fullEnv(), config, {}));
  }

  await ctx.check("error documents carry cniVersion", SECTION.error, async () => {
    if (errorDocuments.length === 0) throw new Skip("no error document was printed");
    const lacking = errorDocuments.filter((e) => typeof e.cniVersion !== "string").length;
    if (lacking === 0) return { problems: [] };
    return {
      tolerated: true,
      problems: [
        {
          rule: SECTION.error,
          message: `${lacking} of ${errorDocuments.length} error documents have no cniVersion; the spec lists it, Go's library never prints it and runtimes do not read it`,
        },
      ],
    };
  });
}
