/**
 * What every check of a run shares: the plugin and its config, the versions it claims, the sandbox, and `check()`,
 * which runs one check when --only selects it and turns what it finds (problems, a skip, an exception) into a
 * CheckResult.
 * @module
 */

import type { JsonObject } from "#go-json/json.js";
import { messageOf } from "#spec/errors.js";
import type { PluginCall } from "./output.js";
import type { CheckResult, Diagnostic, Problem } from "./report.js";
import type { Sandbox } from "./sandbox.js";

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

/** What the plugin's VERSION answer decided for the rest of the run. */
export interface Claims {
  /** The spec versions it claims, oldest first. */
  claimed: string[];
  /** The version of the attachments: the config's, or the newest claimed when the config's is not claimed. */
  v0: string;
}

/** Thrown by a check (or by what it needs) that cannot run: the check is skipped with the reason. */
export class Skip extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "Skip";
  }
}

/** What a check found. */
export interface CheckBody {
  problems: Problem[];
  diagnostics?: Record<string, Diagnostic>;
  /** The problems are a tolerated deviation (report.ts) rather than a failure. */
  tolerated?: boolean;
}

/** `make`, run on the first call only; later calls get the same promise. */
export const once = <T>(make: () => Promise<T>): (() => Promise<T>) => {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
};

export class SuiteContext {
  readonly results: CheckResult[] = [];

  constructor(
    readonly opts: SuiteOptions,
    readonly claims: Claims,
  ) {}

  get sandbox(): Sandbox {
    return this.opts.sandbox;
  }

  /** Runs `body` as the check `title` when selected, and reports it: pass, fail, tolerated, or skip (Skip thrown). */
  async check(title: string, section: string, body: () => Promise<CheckBody>): Promise<void> {
    if (this.opts.only && !this.opts.only.test(`${title} [${section}]`)) return;
    const started = performance.now();
    let result: Omit<CheckResult, "id" | "durationMs">;
    try {
      const b = await body();
      const outcome = b.problems.length === 0 ? "pass" : b.tolerated ? "tolerated" : "fail";
      result = { title, section, outcome, problems: b.problems, ...(outcome !== "pass" && b.diagnostics ? { diagnostics: b.diagnostics } : {}) };
    } catch (e) {
      result =
        e instanceof Skip
          ? { title, section, outcome: "skip", problems: [], skipReason: e.reason }
          : { title, section, outcome: "fail", problems: [{ rule: "RUNNER", message: `the check could not be carried out: ${messageOf(e)}` }] };
    }
    const done: CheckResult = { ...result, id: this.results.length + 1, durationMs: performance.now() - started };
    this.results.push(done);
    this.opts.report(done);
  }

  /** The config at `version`, with `extra` keys set. */
  configAt(version: string, extra: JsonObject = {}): JsonObject {
    return { ...this.opts.config, cniVersion: version, ...extra };
  }

  /** One plugin call: CNI_COMMAND `command`, the other CNI_* variables `cni`, `stdin` (JSON-encoded unless text). */
  run(command: string, cni: Record<string, string>, stdin: JsonObject | string): Promise<PluginCall> {
    return this.sandbox.runPlugin(
      this.opts.plugin,
      command,
      { CNI_COMMAND: command, ...cni },
      typeof stdin === "string" ? stdin : JSON.stringify(stdin),
    );
  }
}
