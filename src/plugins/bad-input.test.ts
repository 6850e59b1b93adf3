/**
 * Generated bad input, in-process, for every program in the registry (a registry walk: a plugin is covered the day
 * it lands): its config parser (PluginDefinition.config.parse, what ADD reads) given mutated sample configs, and
 * the skel given hostile CNI_* environments with those configs. Each case must end in success or one CniError with
 * a well-known code (never 999), a message and no stack trace, within a time bound. 500 cases per plugin and
 * part; TSCNI_FUZZ_RUNS=N for long runs, TSCNI_FUZZ_SEED to replay. The same generators run through the binaries
 * and the resident server in integration/reliability.test.ts. cnitool, the registry's one program that is not a
 * plugin, gets generated command lines through its executable.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";
import { type PluginDefinition, type PluginIO, runPlugin } from "#skel/skel.js";
import { CniError } from "#spec/errors.js";
import { badConfigs, checkErrorDocument, FUZZ_RUNS, FUZZ_SEED, hostileEnv, hostileEnvValue } from "#testing/bad-input.js";
import { CNITOOL } from "#testing/harness.js";
import { SAMPLES } from "#testing/plugin-samples.js";
import { useTempDirs } from "#testing/temp.js";
import { PLUGINS } from "./registry.js";

const TIME_BOUND_MS = 2000;
const seedOf = (name: string, part: number) => FUZZ_SEED + part * 7919 + [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);

async function definition(name: string): Promise<PluginDefinition> {
  const plugin = await PLUGINS[name]!.load();
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
      fc.assert(
        fc.property(badConfigs(SAMPLES[name]!), (bad) => {
          const t0 = performance.now();
          cases++;
          try {
            plugin.config!.parse(bad.stdin, bad.cniArgs);
          } catch (e) {
            rejected++;
            if (!(e instanceof CniError)) {
              throw new Error(
                `${name}: not a CNI error (it would be reported as 999): ${(e as Error)?.stack ?? String(e)}\n  input: ${bad.stdin.toString().slice(0, 600)}`,
              );
            }
            const problem = checkErrorDocument({ code: e.code, msg: e.msg });
            if (problem) throw new Error(`${name}: ${problem}\n  input: ${bad.stdin.toString().slice(0, 600)}`);
          }
          const ms = performance.now() - t0;
          if (ms > TIME_BOUND_MS) throw new Error(`${name}: parsing took ${ms.toFixed(0)} ms`);
        }),
        { numRuns: FUZZ_RUNS, seed: seedOf(name, 1), includeErrorInReport: true },
      );
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
        return "{}"; // (an ADD must give a result)
      };
      const funcs = { add: stub, del: stub, check: stub, status: stub, gc: stub };
      await fc.assert(
        fc.asyncProperty(hostileEnv, badConfigs(SAMPLES[name]!), async (env, bad) => {
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
        }),
        { numRuns: FUZZ_RUNS, seed: seedOf(name, 2), includeErrorInReport: true },
      );
    });
  }
});

describe("generated command lines: cnitool", () => {
  const tempDir = useTempDirs("tscni-fuzz-cnitool-");
  // What cnitool may do here: nothing outside its temp dirs (no install, no daemon, no cluster IPAM: those reach
  // outside by design), and no plugin that exists (the one network names a type CNI_PATH does not have).
  const verbs = ["add", "check", "del", "gc", "status", "list", "validate", "version", "network", "pod", "bogus", ""];
  const sub = ["ls", "inspect", "rm", "prune", "create", "up", "down", "status", ""];
  const arg = fc.oneof(
    hostileEnvValue.map((v) => v ?? ""),
    fc.constantFrom(
      "fz",
      "--cache-dir",
      "-i",
      "--ifname",
      "--timeout",
      "-1",
      "1e9",
      "--help",
      "-h",
      "--json",
      "--subnet",
      "10.0.0.0/8",
      "/run/netns/none",
    ),
  );
  const commandLine = fc
    .tuple(fc.constantFrom(...verbs), fc.constantFrom(...sub), fc.array(arg, { maxLength: 5 }))
    .map(([verb, subVerb, rest]) => [verb, ...(verb === "network" || verb === "pod" ? [subVerb] : []), ...rest].filter((a, i) => a !== "" || i > 0));
  test("every generated command line ends in exit 0 or 1 with a message, no stack trace, in time", () => {
    const root = tempDir();
    const confDir = path.join(root, "conf");
    const cwd = path.join(root, "cwd");
    for (const d of [confDir, path.join(root, "bin"), path.join(root, "cache"), cwd]) mkdirSync(d);
    writeFileSync(path.join(confDir, "10-fz.conflist"), JSON.stringify({ cniVersion: "1.0.0", name: "fz", plugins: [{ type: "nosuchplugin" }] }));
    fc.assert(
      fc.property(commandLine, (argv) => {
        const r = spawnSync(CNITOOL, ["--cache-dir", path.join(root, "cache"), ...argv], {
          cwd,
          encoding: "utf8",
          timeout: 20_000,
          env: { PATH: process.env["PATH"], NETCONFPATH: confDir, CNI_PATH: path.join(root, "bin"), TSCNI_RESIDENT_SOCKET: "" },
        });
        const what = `cnitool ${JSON.stringify(argv)}: status ${r.status} signal ${r.signal}\n${r.stdout}${r.stderr}`;
        assert.ok(r.status === 0 || r.status === 1, what);
        assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at .+:\d+:\d+/, what);
        if (r.status === 1) assert.ok((r.stderr + r.stdout).trim().length > 0, `${what}: failed without a message`);
      }),
      { numRuns: Math.max(60, Math.floor(FUZZ_RUNS / 5)), seed: seedOf("cnitool", 3), includeErrorInReport: true },
    );
    assert.deepEqual(readdirSync(root).sort(), ["bin", "cache", "conf", "cwd"], "nothing written beside cnitool's own dirs");
  });
});
