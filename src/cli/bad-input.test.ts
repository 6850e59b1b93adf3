/**
 * Generated bad input, in-process, for every program in the registry (a registry walk: a plugin is covered the day
 * it lands): its config parser (PluginDefinition.config.parse, what ADD reads) given mutated sample configs, and
 * the skel given hostile CNI_* environments with those configs. Each case must end in success or one CniError with
 * a well-known code (never 999), a message and no stack trace, within a time bound. 500 cases per plugin and
 * part; TSCNI_FUZZ_RUNS=N for long runs, TSCNI_FUZZ_SEED to replay. The same generators run through the binaries
 * and the resident server in integration/bad-input.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { PLUGINS } from "./registry.js";
import { runPlugin, type PluginDefinition, type PluginIO } from "../skel/skel.js";
import { CniError } from "../spec/errors.js";
import { badConfigs, checkErrorDocument, FUZZ_RUNS, FUZZ_SEED, hostileEnv } from "../testing/bad-input.js";
import { SAMPLES } from "../testing/plugin-samples.js";

const TIME_BOUND_MS = 2000;
const seedOf = (name: string, part: number) => FUZZ_SEED + part * 7919 + [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);

async function definition(name: string): Promise<PluginDefinition> {
  const { plugin } = (await PLUGINS[name]!.load()) as { plugin?: PluginDefinition };
  assert.ok(plugin?.config, `${name}: the PluginDefinition has a config reader`);
  assert.ok(SAMPLES[name]?.length, `${name}: testing/plugin-samples.ts has sample configs for it`);
  return plugin;
}

describe("generated bad configs: every plugin's config parser", () => {
  for (const name of Object.keys(PLUGINS)) {
    test(name, async () => {
      const plugin = await definition(name);
      let rejected = 0;
      let cases = 0;
      fc.assert(fc.property(badConfigs(SAMPLES[name]!), (bad) => {
        const t0 = performance.now();
        cases++;
        try {
          plugin.config!.parse(bad.stdin, bad.cniArgs);
        } catch (e) {
          rejected++;
          if (!(e instanceof CniError)) {
            throw new Error(`${name}: not a CNI error (it would be reported as 999): ${(e as Error)?.stack ?? String(e)}\n  input: ${bad.stdin.toString().slice(0, 600)}`);
          }
          const problem = checkErrorDocument({ code: e.code, msg: e.msg });
          if (problem) throw new Error(`${name}: ${problem}\n  input: ${bad.stdin.toString().slice(0, 600)}`);
        }
        const ms = performance.now() - t0;
        if (ms > TIME_BOUND_MS) throw new Error(`${name}: parsing took ${ms.toFixed(0)} ms`);
      }), { numRuns: FUZZ_RUNS, seed: seedOf(name, 1), includeErrorInReport: true });
      // The generator must mostly produce configs the plugin refuses, or this test proves little.
      assert.ok(rejected >= cases * 0.3, `${name}: only ${rejected} of ${cases} generated configs were refused`);
    });
  }
});

describe("generated hostile environments: the skel of every plugin", () => {
  for (const name of Object.keys(PLUGINS)) {
    test(name, async () => {
      const plugin = await definition(name);
      // Stub handlers: this part judges the skel's reading of the environment, not the plugin's actions.
      let called = false;
      const stub = async () => {
        called = true;
      };
      const funcs = { add: stub, del: stub, check: stub, status: stub, gc: stub };
      await fc.assert(fc.asyncProperty(hostileEnv, badConfigs(SAMPLES[name]!), async (env, bad) => {
        called = false;
        let stdout = "";
        const io: PluginIO = {
          env: { ...env, CNI_ARGS: env.CNI_ARGS ?? bad.cniArgs },
          readStdin: async () => bad.stdin,
          writeStdout: (s) => (stdout += s),
          writeStderr: () => undefined,
        };
        const err = await runPlugin(funcs, plugin.versionInfo, plugin.about, io);
        if (err) {
          const problem = checkErrorDocument(JSON.parse(err.print()));
          if (problem) throw new Error(`${name}: ${problem}\n  env: ${JSON.stringify(env)}`);
          if (stdout !== "") throw new Error(`${name}: output before the error: ${stdout}`);
        } else if (!called) {
          // Without a handler: VERSION (one document), or no CNI_COMMAND at all (the "about" text, on stderr).
          if (env.CNI_COMMAND === "VERSION") JSON.parse(stdout);
          else assert.ok(!env.CNI_COMMAND && stdout === "", `${name}: neither a handler nor an error for ${JSON.stringify(env)}: ${stdout}`);
        }
      }), { numRuns: FUZZ_RUNS, seed: seedOf(name, 2), includeErrorInReport: true });
    });
  }
});
