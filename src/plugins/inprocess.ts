/**
 * In-process delegation: when a plugin delegates (to IPAM) and the executable found in CNI_PATH is this very
 * multicall binary, the delegate runs inside the calling process instead of being exec'd — with what an exec
 * would show: the same env and stdin, stdout parsed the same way, stderr forwarded, errors mapped by the same
 * rules. Any other executable (a user's own IPAM, Go's plugins) is exec'd as usual, and so is everything when the
 * call's environment has TSCNI_NO_INPROCESS set.
 * @module
 */

import { realpathSync } from "node:fs";
import type { Env } from "#invoke/args.js";
import { type ExecOptions, type PluginExec, RawExec, settlePluginRun } from "#invoke/exec.js";
import { type PluginDefinition, runPlugin } from "#skel/skel.js";
import * as path from "#sys/posix-path.js";
import { selfExecutable, selfPaths } from "#sys/self.js";
import { PLUGINS } from "./registry.js";

export class MulticallExec implements PluginExec {
  private readonly raw = new RawExec();
  /** How many delegations ran in-process (the rest were exec'd). */
  inProcessRuns = 0;
  private readonly selves: Set<string>;
  constructor(self: string | undefined = selfExecutable()) {
    this.selves = selfPaths(self);
  }

  /** The plugin definition to run in-process for this path, or undefined to exec it. */
  private async inProcessPlugin(pluginPath: string, env: Env): Promise<PluginDefinition | undefined> {
    if (this.selves.size === 0 || env["TSCNI_NO_INPROCESS"]) return undefined;
    // realpath(3) as fs/promises' realpath does it, without loading node:fs/promises (and node:events) into a
    // call that has node:fs already (docs/startup.md).
    let real: string | undefined;
    try {
      real = realpathSync.native(pluginPath);
    } catch {
      real = undefined;
    }
    if (!real || !this.selves.has(real)) return undefined;
    const entry = PLUGINS[path.basename(pluginPath)];
    if (!entry) return undefined;
    return entry.load();
  }

  async execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options: ExecOptions = {}): Promise<Buffer> {
    const plugin = await this.inProcessPlugin(pluginPath, env);
    if (!plugin) return this.raw.execPlugin(pluginPath, stdin, env, options);
    this.inProcessRuns++;
    const out: string[] = [];
    const err: string[] = [];
    const failure = await runPlugin(plugin.funcs, plugin.versionInfo, plugin.about, {
      env: { ...env },
      readStdin: async () => Buffer.from(stdin),
      writeStdout: (s) => out.push(s),
      writeStderr: (s) => err.push(s),
    });
    if (failure) out.push(failure.print());
    const stdout = Buffer.from(out.join(""));
    const stderr = Buffer.from(err.join(""));
    // A plugin that failed exits 1; from there on, exactly the rules of an exec.
    return settlePluginRun(failure ? "exit status 1" : undefined, stdout, stderr, options.stderr ?? process.stderr);
  }
}
