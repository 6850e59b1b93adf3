/**
 * `cnitool reload`: the cached attachments' host firewall state put back after a firewall reload (the walk is
 * runtime/firewall-reload.ts, which the resident server's self-repair runs too), a line per attachment.
 * @module
 */
import type { Command } from "commander";
import { formatReload, type ReloadOptions, reloadFirewall } from "#runtime/firewall-reload.js";

/** Adds `reload` to cnitool. */
export function addReloadCommand(
  program: Command,
  ctx: {
    cacheDir: () => string;
    env: ReloadOptions["env"];
    out: (s: string) => void;
    err: (s: string) => void;
  },
): void {
  program
    .command("reload")
    .description("Put back the host firewall rules of every cached attachment (after a firewalld reload, iptables -F or nft flush ruleset)")
    .action(async () => {
      const results = await reloadFirewall({ cacheDir: ctx.cacheDir(), env: ctx.env });
      for (const r of results) (r.status === "failed" ? ctx.err : ctx.out)(`${formatReload(r)}\n`);
      const failed = results.filter((r) => r.status === "failed").length;
      if (failed) throw new Error(`${failed} of ${results.length} attachments could not be restored (see above)`);
    });
}
