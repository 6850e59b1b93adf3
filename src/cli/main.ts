#!/usr/bin/env node
import { setDefaultExec } from "#invoke/default-exec.js";
import type { PluginExec } from "#invoke/exec.js";
import { aboutText, PROGRAM_NAMES } from "#plugins/catalog.js";
import { aboutAnswer, PLUGINS, versionAnswer } from "#plugins/registry.js";
import { pluginMainLoading, processIO } from "#skel/skel.js";
import { CniError } from "#spec/errors.js";
import { VersionInfo } from "#spec/version.js";
/**
 * The multicall entry point: `dist/bin/<name>` links here, and the name it was invoked as picks the program
 * (a plugin type, from the registry, or cnitool). `node main.js <name> [args]` works too.
 * @module
 */
import { writeStd } from "#sys/plugin-stdio.js";
import { basename } from "#sys/posix-path.js";

async function run(): Promise<void> {
  // A standalone (bun --compile) binary runs its embedded script as argv[1]; the name it was invoked as
  // (the plugin type) is then argv0. Under node, argv[1] is the link that was run.
  const standalone = (process.argv[1] ?? "").startsWith("/$bunfs/");
  let name = basename(standalone ? process.argv0 : (process.argv[1] ?? ""));
  if (name === "main.js" || name === "main" || name === "tscni") {
    name = process.argv[2] ?? "";
    process.argv.splice(1, 1); // so the program sees its own arguments where it expects them
  }
  if (name === "cnitool") {
    const { main } = await import("#cnitool/cnitool.js");
    return main();
  }
  const entry = PLUGINS[name];
  if (!entry) {
    await writeStd(2, `tscni: unknown program "${name}"; known: ${PROGRAM_NAMES.join(", ")}\n`);
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
    await writeStd(1, versionAnswer(entry.versions));
    return;
  }
  if (!process.env["CNI_COMMAND"]) {
    await writeStd(2, aboutAnswer(name, entry.versions));
    return;
  }
  // TSCNI_STDIN_MEMFD=1: the launcher made stdin an in-memory copy of the config (launcher.c). Removed from the
  // environment, so no delegate or tool this call runs inherits it.
  const stdinInMemoryFile = process.env["TSCNI_STDIN_MEMFD"] === "1";
  delete process.env["TSCNI_STDIN_MEMFD"];
  // The plugin's own code is loaded once skel's checks have passed, and in-process delegation (a delegate that is
  // this binary runs in this process) at the first delegation (docs/startup.md).
  const loadPlugin = async () => {
    const { funcs } = await entry.load();
    let multicall: Promise<PluginExec> | undefined;
    setDefaultExec({
      execPlugin: async (...call) => {
        multicall ??= import("#plugins/inprocess.js").then(({ MulticallExec }) => new MulticallExec());
        return (await multicall).execPlugin(...call);
      },
    });
    return funcs;
  };
  const call = () => pluginMainLoading(loadPlugin, new VersionInfo(entry.versions), aboutText(name), processIO({ stdinInMemoryFile }));
  // TSCNI_TRACE_PHASES=FILE: this call's phases as one line of FILE (sys/phase-trace.ts; the server's is a flag).
  const traceFile = process.env["TSCNI_TRACE_PHASES"];
  if (!traceFile) return call();
  const { enablePhaseTrace, tracedCall } = await import("#sys/phase-trace.js");
  try {
    enablePhaseTrace(traceFile);
  } catch {
    // an unusable trace file costs the trace, not the call
  }
  const env = process.env;
  return tracedCall(
    { program: name, command: env["CNI_COMMAND"] ?? "", containerID: env["CNI_CONTAINERID"] ?? "", ifName: env["CNI_IFNAME"] ?? "", where: "exec" },
    call,
  );
}

run().catch(async (e: unknown) => {
  // Last resort: a CNI error on stdout (code 999 unless it is one already), never a stack trace.
  process.exitCode = 1;
  await writeStd(1, CniError.from(e).print()).catch(() => undefined);
});
