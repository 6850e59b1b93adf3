#!/usr/bin/env node
/**
 * The multicall entry point: `dist/bin/<name>` links here, and the name it was invoked as picks the program
 * (a plugin type, from the registry, or cnitool). `node main.js <name> [args]` works too.
 * @module
 */
import { writeFdFully } from "../sys/stdio.js";
import { PROGRAM_NAMES } from "./programs.js";
import { aboutAnswer, PLUGINS, versionAnswer } from "./registry.js";
import type { PluginExec } from "../invoke/exec.js";
import type { PluginDefinition } from "../skel/skel.js";

async function run(): Promise<void> {
  // A standalone (bun --compile) binary runs its embedded script as argv[1]; the name it was invoked as
  // (the plugin type) is then argv0. Under node, argv[1] is the link that was run.
  const standalone = (process.argv[1] ?? "").startsWith("/$bunfs/");
  // (The base name by hand: node:path is not worth its start-up cost here.)
  let name = (standalone ? process.argv0 : process.argv[1] ?? "").replace(/\/+$/, "").split("/").pop() ?? "";
  if (name === "main.js" || name === "main" || name === "tscni") {
    name = process.argv[2] ?? "";
    process.argv.splice(1, 1); // so the program sees its own arguments where it expects them
  }
  if (name === "cnitool") {
    const { main } = await import("./cnitool.js");
    return main();
  }
  const entry = PLUGINS[name];
  if (!entry) {
    writeFdFully(2, `tscni: unknown program "${name}"; known: ${PROGRAM_NAMES.join(", ")}\n`);
    process.exitCode = 1;
    return;
  }
  // A subcommand (`dhcp daemon ...`) comes first, as upstream's binary checks its arguments before CNI_COMMAND.
  const command = entry.commands?.[process.argv[2] ?? ""];
  if (command) {
    await (await command()).main(process.argv.slice(3));
    return;
  }
  // The VERSION probe is most of a runtime's calls: answer it, and "about", without loading the plugin.
  if (process.env["CNI_COMMAND"] === "VERSION") {
    writeFdFully(1, versionAnswer(entry.versions));
    return;
  }
  if (!process.env["CNI_COMMAND"]) {
    writeFdFully(2, aboutAnswer(name, entry.versions));
    return;
  }
  // A plugin that delegates to another of ours runs it in-process rather than exec'ing this binary again. That
  // machinery is loaded at the first delegation: most calls never delegate, and every call pays for its start-up.
  const [{ plugin }, { setDefaultExec }, { pluginMain }] = await Promise.all([
    entry.load() as Promise<{ plugin?: PluginDefinition }>, import("../invoke/default-exec.js"), import("../skel/skel.js"),
  ]);
  let multicall: Promise<PluginExec> | undefined;
  setDefaultExec({
    execPlugin: async (...call) => {
      multicall ??= import("./inprocess.js").then(({ MulticallExec }) => new MulticallExec());
      return (await multicall).execPlugin(...call);
    },
  });
  await pluginMain(plugin!.funcs, plugin!.versionInfo, plugin!.about);
}

run().catch((e: unknown) => {
  // Last resort: a CNI error on stdout, never a stack trace.
  const msg = e instanceof Error ? e.message : String(e);
  writeFdFully(1, JSON.stringify({ code: 999, msg }, null, 4));
  process.exitCode = 1;
});
