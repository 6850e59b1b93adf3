/**
 * tuning: a chained plugin that sets network sysctls inside the container and tunes the container
 * interface (MAC, MTU, promiscuous and all-multicast modes, transmit queue length). ADD backs up the link
 * settings it changes and DEL puts them back; sysctls are not restored (the namespace goes with the
 * container). CHECK compares everything configured with the live values. The result is the prevResult, with
 * the interface's new MAC when ADD changed it. GC drops the backups of the network's attachments that are gone.
 * @module
 */

import { NetNS } from "#net/netns.js";
import { probeSysctls, writeSysctlFiles } from "#net/sysctl.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig, invalidKey } from "#spec/errors.js";
import { type Result, toCurrentResult } from "#spec/result/index.js";
import { backupFile, backupOf, readBackup, removeBackup, staleBackups, writeBackup, writeNetworkOf } from "./backup.js";
import {
  changesLink,
  checkAllowlist,
  loadTuningConf,
  loadTuningDataDir,
  readAllowlist,
  type SysctlSetting,
  sysctlSettings,
  TUNING_SCHEMA,
  type TuningConf,
} from "./config.js";
import { type LinkTunables, readLinkTunables, setLinkTunables } from "./link-tunables.js";

function requirePrev(n: TuningConf): Result {
  const prev = parsePrevResult(n.conf);
  if (!prev) throw invalidConfig("Required prevResult missing");
  return prev;
}

/** Every configured sysctl must exist in the container; returns their current values (undefined: write-only). */
async function currentSysctls(ns: NetNS, settings: SysctlSetting[]): Promise<Array<string | undefined>> {
  const states = await probeSysctls(
    ns,
    settings.map((s) => s.path),
  );
  return settings.map((s, i) => {
    const state = states[i]!;
    if (!state.exists) throw invalidKey("sysctl", s.key, `no such sysctl in the container (${s.path} does not exist)`);
    return state.value;
  });
}

/** The link's current settings; its absence is an error naming it. */
async function containerLink(ns: NetNS, ifName: string): Promise<LinkTunables> {
  const link = await readLinkTunables(ns, ifName);
  if (!link) throw failure(`failed to get "${ifName}": no such interface in the container`);
  return link;
}

/** The prevResult with `mac` on every interface named `ifName` (as the Go plugin matches them: by name). */
function withMac(prev: Result, ifName: string, mac: string): Result {
  const result = toCurrentResult(prev);
  for (const iface of result.interfaces ?? []) if (iface.name === ifName) iface.mac = mac;
  return result;
}

/**
 * ADD: validates everything first (sysctl keys exist, the link exists), saves the link's original settings,
 * then writes the sysctls and changes the link in one step each. If a change fails, what was already changed
 * is put back and the backup removed.
 */
async function add(args: CmdArgs): Promise<Result> {
  const n = loadTuningConf(args.stdinData, args.args);
  const settings = sysctlSettings(n, args.ifName);
  checkAllowlist(n.sysctl.keys(), readAllowlist());
  const prev = requirePrev(n);
  const ns = await NetNS.open(args.netns);

  const before = await currentSysctls(ns, settings);
  const original = changesLink(n) ? await containerLink(ns, args.ifName) : undefined;
  const file = backupFile(n.dataDir, args.containerID, args.ifName);
  if (original) {
    await writeNetworkOf(file, n.conf.name);
    await writeBackup(file, backupOf(original, n.link));
  }
  try {
    await writeSysctlFiles(
      ns,
      settings.map((s) => [s.path, s.value] as const),
    );
    if (original) await setLinkTunables(ns, args.ifName, n.link);
  } catch (e) {
    const restore = settings.flatMap((s, i) => (before[i] !== undefined && before[i] !== s.value ? [[s.path, before[i]!] as const] : []));
    await writeSysctlFiles(ns, restore).catch(() => undefined);
    if (original) {
      await setLinkTunables(ns, args.ifName, backupOf(original, n.link)).catch(() => undefined);
      await removeBackup(file).catch(() => undefined);
    }
    throw e;
  }
  return n.link.mac ? withMac(prev, args.ifName, n.link.mac) : prev;
}

/** Puts back each saved setting on its own, so one failure does not keep the others; the failures' texts. */
async function restoreOneByOne(ns: NetNS, ifName: string, saved: Partial<LinkTunables>): Promise<string[]> {
  const errors: string[] = [];
  for (const key of ["mtu", "mac", "promisc", "allmulti", "txQLen"] as const) {
    if (saved[key] === undefined) continue;
    await setLinkTunables(ns, ifName, { [key]: saved[key] }).catch((e: Error) => errors.push(`failed to restore ${key}: ${e.message}`));
  }
  return errors;
}

/**
 * DEL: restores the backed-up link settings and removes the backup. Never fails on what it finds: no backup,
 * no namespace (CNI_NETNS empty or gone) or no interface mean nothing is left to restore, and the backup goes.
 * A restore that fails keeps the backup (a later DEL may succeed) and is reported on stderr only.
 */
async function del(args: CmdArgs): Promise<void> {
  const file = backupFile(loadTuningDataDir(args.stdinData), args.containerID, args.ifName);
  const saved = await readBackup(file);
  if (saved === undefined) {
    await removeBackup(file); // the network file of an ADD killed before its backup
    return;
  }
  const ns = saved === "unreadable" ? undefined : await NetNS.openIfThere(args.netns);
  if (!ns || saved === "unreadable" || !(await readLinkTunables(ns, args.ifName))) {
    await removeBackup(file);
    return;
  }
  try {
    await setLinkTunables(ns, args.ifName, saved);
  } catch {
    const errors = await restoreOneByOne(ns, args.ifName, saved);
    if (errors.length) {
      args.stderr.write(`tuning: could not restore ${args.ifName} from ${file}: ${errors.join("; ")}\n`);
      return;
    }
  }
  await removeBackup(file);
}

/** CHECK: every configured sysctl and link setting has its configured value (promisc unset means off). */
async function check(args: CmdArgs): Promise<void> {
  const n = loadTuningConf(args.stdinData, args.args);
  const settings = sysctlSettings(n, args.ifName);
  requirePrev(n);
  const ns = await NetNS.open(args.netns);

  const states = await probeSysctls(
    ns,
    settings.map((s) => s.path),
  );
  settings.forEach((s, i) => {
    const state = states[i]!;
    if (!state.exists) throw failure(`sysctl ${s.key} does not exist in the container (${s.path})`);
    if (state.value !== s.value) {
      throw failure(`Tuning configured value of ${s.path} is ${s.value}, current value is ${state.value ?? "(unreadable)"}`);
    }
  });

  const link = await readLinkTunables(ns, args.ifName);
  if (!link) throw failure(`Cannot find container link ${args.ifName}`);
  const want = n.link;
  if (want.mac !== undefined && want.mac !== link.mac)
    throw failure(`Tuning configured MAC of ${args.ifName} is ${want.mac}, current value is ${link.mac}`);
  const promisc = want.promisc ?? false;
  if (promisc !== link.promisc) throw failure(`Tuning link ${args.ifName} configured promisc is ${promisc}, current value is ${link.promisc}`);
  if (want.mtu !== undefined && want.mtu !== link.mtu)
    throw failure(`Tuning configured MTU of ${args.ifName} is ${want.mtu}, current value is ${link.mtu}`);
  if (want.allmulti !== undefined && want.allmulti !== link.allmulti) {
    throw failure(`Tuning configured all-multicast mode of ${args.ifName} is ${want.allmulti}, current value is ${link.allmulti}`);
  }
  if (want.txQLen !== undefined && want.txQLen !== link.txQLen) {
    throw failure(`Tuning configured transmit queue length of ${args.ifName} is ${want.txQLen}, current value is ${link.txQLen}`);
  }
}

/**
 * GC: drops the backups of this network's attachments that are not in `cni.dev/valid-attachments` (their
 * containers, and the links to restore, are gone). Without the list nothing is known to be stale; backups without
 * a network file (Go's) are left alone.
 */
async function gc(args: CmdArgs): Promise<void> {
  const { conf } = loadPluginConf(args.stdinData);
  if (!conf.validAttachments) return;
  for (const file of await staleBackups(loadTuningDataDir(args.stdinData), conf.name, conf.validAttachments)) await removeBackup(file);
}

export const plugin: PluginModule = {
  funcs: { add, del, check, gc },
  config: { schema: TUNING_SCHEMA, parse: loadTuningConf },
};
