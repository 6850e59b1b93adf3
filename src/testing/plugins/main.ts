#!/usr/bin/env node
/**
 * The test plugins' own multicall entry (dist-test/bin/<name> links here): noop, sleep, legacy010 and broken; and the
 * recorder, which tests link into plugin directories of their own, as `dnsname` when it stands in for that plugin
 * (recorder-log.ts). They are test doubles, never part of the shipped program or its plugin directory.
 * @module
 */
import path from "node:path";
import type { PluginDefinition } from "#skel/skel.js";

const TEST_PLUGINS: Record<string, () => Promise<{ main?: () => Promise<void> | void; plugin?: PluginDefinition }>> = {
  noop: () => import("./noop.js"),
  sleep: () => import("./sleep.js"),
  legacy010: () => import("./legacy.js"),
  broken: () => import("./broken.js"),
  recorder: () => import("./recorder.js"),
  dnsname: () => import("./recorder.js"),
};

async function run(): Promise<void> {
  const name = path.basename(process.argv[1] ?? "");
  const load = TEST_PLUGINS[name];
  if (!load) throw new Error(`unknown test plugin "${name}"; known: ${Object.keys(TEST_PLUGINS).join(", ")}`);
  const program = await load();
  if (program.plugin) {
    const { pluginMain } = await import("#skel/skel.js");
    await pluginMain(program.plugin.funcs, program.plugin.versionInfo, program.plugin.about);
  } else {
    await program.main!();
  }
}

run().catch((e: unknown) => {
  process.stdout.write(JSON.stringify({ code: 999, msg: e instanceof Error ? e.message : String(e) }));
  process.exitCode = 1;
});
