/**
 * `cnitool install`: puts the multicall binary and one link per plugin type into a CNI bin dir
 * (default /opt/cni/bin): the native program and its launcher, copied (native.ts says where they are found), or
 * else a link to the Node build, said as a warning. Files that are not ours are left alone unless --force. With
 * --resident it also writes the systemd units of the resident server (socket activation: the server starts on the
 * first plugin call); --remove-resident takes them away again. --conf copies network configs into the config dir
 * (default /etc/cni/net.d), each checked first and renamed into place: what a DaemonSet's install container does
 * (docs/runtimes.md), from an image that has no shell.
 * @module
 */
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { DEFAULT_SOCKET } from "#invoke/resident-protocol.js";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import { parseConfList, parsePluginConfig } from "#spec/config.js";
import { selfExecutable } from "#sys/self.js";
import { replaceAtomicSync, writeFileAtomicSync } from "#sys/state.js";
import type { Io } from "./command-io.js";
import { findNativeProgram, LAUNCHER_NAME, PROGRAM_NAME, platformPackageName } from "./native.js";

export const DEFAULT_BIN_DIR = "/opt/cni/bin";

/** What a plugin call costs under the Node build, next to the native program's (said when install falls back). */
export const NODE_BUILD_COST =
  "every plugin call starts Node: ~70 ms for VERSION, ~100 ms and ~50 MB for a host-local ADD " +
  "(the native program: ~1 ms and ~10-15 ms), and the plugins need node on the runtime's PATH";

export interface InstallReport {
  binary: string;
  /** What the plugins run: the native program copied in (and from where), or the Node build linked to, and why. */
  program: { kind: "native"; from: string } | { kind: "node"; entry: string; reason: string };
  installed: string[];
  replaced: string[];
  skipped: Array<{ name: string; reason: string }>;
}

/** Whether `file` is a link to our binary in the same dir (safe to replace). */
function isOurLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink() && readlinkSync(file) === LAUNCHER_NAME;
  } catch {
    return false;
  }
}

/**
 * Installs into `binDir`: the native program (copied, with its launcher) wherever findNativeProgram finds one, else
 * a link to the Node build. `source` names the multicall executable instead (a standalone program is copied, with
 * the launcher beside it when it is tscni-js; a .js entry is linked to).
 */
export function installPlugins(binDir: string, opts: { force?: boolean; source?: string; includeCnitool?: boolean } = {}): InstallReport {
  const self = selfExecutable();
  const native = opts.source ? undefined : findNativeProgram(self);
  const source = opts.source ?? (native && "program" in native ? native.program : self);
  if (!source) throw new Error("cannot tell where the tscni executable is; pass its path");
  mkdirSync(binDir, { recursive: true });
  const binary = path.join(binDir, LAUNCHER_NAME);
  // Copy then rename: a runtime executing the old binary meanwhile never sees a half-written file.
  const copyExecutable = (from: string, to: string) =>
    replaceAtomicSync(to, (tmp) => {
      copyFileSync(from, tmp);
      chmodSync(tmp, 0o755);
    });
  const launcher = path.join(path.dirname(source), LAUNCHER_NAME);
  let program: InstallReport["program"];
  if (source.endsWith(".js")) {
    // The Node build cannot be copied alone: link to it where it is.
    rmSync(binary, { force: true });
    symlinkSync(source, binary);
    program = { kind: "node", entry: source, reason: native && "missing" in native ? native.missing : `${source} is the Node build` };
  } else {
    if (path.basename(source) === PROGRAM_NAME && existsSync(launcher)) {
      copyExecutable(source, path.join(binDir, PROGRAM_NAME)); // the program first: the launcher execs it
      copyExecutable(launcher, binary);
    } else {
      copyExecutable(source, binary);
    }
    program = { kind: "native", from: native && "from" in native ? native.from : path.dirname(source) };
  }
  const report: InstallReport = { binary, program, installed: [], replaced: [], skipped: [] };

  for (const name of PROGRAM_NAMES) {
    if (name === "cnitool" && opts.includeCnitool === false) continue;
    const target = path.join(binDir, name);
    const exists = existsSync(target) || isOurLink(target);
    if (exists && !isOurLink(target) && !opts.force) {
      report.skipped.push({ name, reason: `${target} exists and is not tscni's (use --force to replace it)` });
      continue;
    }
    replaceAtomicSync(target, (tmp) => symlinkSync(LAUNCHER_NAME, tmp));
    (exists ? report.replaced : report.installed).push(name);
  }
  return report;
}

export const DEFAULT_CONF_DIR = "/etc/cni/net.d";

/** A network config read and checked by readConfigs, to be written by installConfigs. */
export interface CheckedConfig {
  name: string;
  text: Buffer;
}

/** Reads and parses each network config (a .conflist as a list, else as one plugin's config); throws at a broken one. */
export function readConfigs(files: string[]): CheckedConfig[] {
  return files.map((file) => {
    const text = readFileSync(file);
    if (file.endsWith(".conflist")) parseConfList(text, file);
    else parsePluginConfig(text, file);
    return { name: path.basename(file), text };
  });
}

/**
 * Writes checked network configs into `confDir` under their own names, each to a temporary name renamed into
 * place (a runtime never reads half a file). Returns the written paths.
 */
export function installConfigs(confDir: string, configs: CheckedConfig[]): string[] {
  mkdirSync(confDir, { recursive: true });
  return configs.map(({ name, text }) => {
    const to = path.join(confDir, name);
    writeFileAtomicSync(to, text, 0o644);
    return to;
  });
}

export const DEFAULT_UNIT_DIR = "/etc/systemd/system";
/** The units' name: tscni.socket starts tscni.service on the first connection. */
export const RESIDENT_UNIT = "tscni";
/** The first line of every unit we write: what --remove-resident recognises as ours. */
const UNIT_MARK = "# Written by `cnitool install --resident` (tscni); `cnitool install --remove-resident` removes it.";

/** The socket and service units of a resident server run as `cnitool` from `binDir`. */
export function residentUnits(binDir: string, socketPath = DEFAULT_SOCKET): { socket: string; service: string } {
  const cnitool = path.join(path.resolve(binDir), "cnitool");
  const socket = `${UNIT_MARK}
[Unit]
Description=tscni resident CNI plugin server (socket)
Documentation=https://www.cni.dev/

[Socket]
ListenStream=${socketPath}
SocketMode=0600
DirectoryMode=0700
SocketUser=root
SocketGroup=root

[Install]
WantedBy=sockets.target
`;
  // No sandboxing options: the server must share the host's network and mount namespaces with its callers
  // (it refuses anyone else), and plugins need CAP_NET_ADMIN and CAP_SYS_ADMIN to enter container namespaces.
  const service = `${UNIT_MARK}
[Unit]
Description=tscni resident CNI plugin server
Documentation=https://www.cni.dev/
Requires=${RESIDENT_UNIT}.socket
After=${RESIDENT_UNIT}.socket

[Service]
Type=simple
ExecStart=${cnitool} daemon --idle 600 --socket ${socketPath}
Restart=on-failure
KillSignal=SIGTERM
TimeoutStopSec=330

[Install]
Also=${RESIDENT_UNIT}.socket
`;
  return { socket, service };
}

const unitFiles = (unitDir: string) => [".socket", ".service"].map((ext) => path.join(unitDir, `${RESIDENT_UNIT}${ext}`));

/** Whether a unit file was written by us. */
function isOurUnit(file: string): boolean {
  try {
    return readFileSync(file, "utf8").startsWith(UNIT_MARK);
  } catch {
    return false;
  }
}

/** Writes the resident units into `unitDir` (not enabled); a unit of the same name that is not ours needs `force`. */
export function installResidentUnits(unitDir: string, binDir: string, opts: { force?: boolean } = {}): string[] {
  const units = residentUnits(binDir);
  const [socketFile, serviceFile] = unitFiles(unitDir) as [string, string];
  for (const file of [socketFile, serviceFile]) {
    if (existsSync(file) && !isOurUnit(file) && !opts.force) throw new Error(`${file} exists and is not tscni's (use --force to replace it)`);
  }
  mkdirSync(unitDir, { recursive: true });
  for (const [file, text] of [
    [socketFile, units.socket],
    [serviceFile, units.service],
  ] as const)
    writeFileAtomicSync(file, text, 0o644);
  return [socketFile, serviceFile];
}

/** Removes the resident units we wrote from `unitDir`; returns the removed files. */
export function removeResidentUnits(unitDir: string): string[] {
  const removed = unitFiles(unitDir).filter(isOurUnit);
  for (const file of removed) rmSync(file);
  return removed;
}

/** What `cnitool uninstall` did: what it removed, and what it left (not tscni's) with why. */
export interface UninstallReport {
  removed: string[];
  left: Array<{ name: string; reason: string }>;
}

/** Whether `file` is tscni's launcher: a program holding its own words, or a link to the Node build's entry. */
function isOurLauncher(file: string): boolean {
  try {
    const st = lstatSync(file);
    if (st.isSymbolicLink()) return /\/dist\/cli\/(main|cnitool-bin)\.js$/.test(readlinkSync(file));
    // The launcher is a few tens of KB; it names itself in its messages ("tscni launcher").
    return st.isFile() && st.size < 4 << 20 && readFileSync(file).includes("tscni launcher");
  } catch {
    return false;
  }
}

/**
 * Removes from `binDir` exactly what installPlugins put there: each plugin name that is a link to tscni's launcher,
 * the launcher when it is tscni's, and the program beside it when the launcher was. A file of a plugin's name that
 * is not such a link (Go's plugin, another vendor's) is left, and said.
 */
export function uninstallPlugins(binDir: string): UninstallReport {
  const report: UninstallReport = { removed: [], left: [] };
  for (const name of PROGRAM_NAMES) {
    const target = path.join(binDir, name);
    if (isOurLink(target)) {
      rmSync(target);
      report.removed.push(name);
    } else if (existsSync(target) || lstatSafe(target)) {
      report.left.push({ name, reason: `${target} is not a link to tscni's launcher (not installed by tscni)` });
    }
  }
  const launcher = path.join(binDir, LAUNCHER_NAME);
  if (isOurLauncher(launcher)) {
    rmSync(launcher);
    report.removed.push(LAUNCHER_NAME);
    const programFile = path.join(binDir, PROGRAM_NAME);
    if (lstatSafe(programFile)?.isFile()) {
      rmSync(programFile);
      report.removed.push(PROGRAM_NAME);
    }
  } else if (lstatSafe(launcher)) {
    report.left.push({ name: LAUNCHER_NAME, reason: `${launcher} is not tscni's launcher` });
  }
  return report;
}

const lstatSafe = (file: string) => {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
};

/** `cnitool install`'s options, as commander gives them. */
interface InstallOptions {
  binDir: string;
  force?: boolean;
  conf: string[];
  confDir: string;
  resident?: boolean;
  unitDir: string;
  removeResident?: boolean;
}

/** `cnitool install [--bin-dir DIR] [--force] [--conf FILE... [--conf-dir DIR]] [--resident [--unit-dir DIR]] | --remove-resident`. */
export function addInstallCommand(program: Command, io: Io): void {
  program
    .command("uninstall")
    .description("Remove from a CNI bin dir exactly what `cnitool install` put there (never a plugin that is not tscni's)")
    .option("--bin-dir <dir>", "CNI plugin directory", DEFAULT_BIN_DIR)
    .action((opts: { binDir: string }) => {
      const report = uninstallPlugins(opts.binDir);
      io.stdout(report.removed.length ? `removed: ${report.removed.join(" ")}\n` : `nothing of tscni's in ${opts.binDir}\n`);
      for (const l of report.left) io.stdout(`left ${l.name}: ${l.reason}\n`);
    });
  program
    .command("install")
    .description("Install the tscni binary and a link per plugin type into a CNI bin dir (and the resident server's systemd units)")
    .option("--bin-dir <dir>", "CNI plugin directory", DEFAULT_BIN_DIR)
    .option("--force", "replace plugins (and units) of the same name that are not tscni's")
    .option(
      "--conf <file>",
      "also copy this network config into --conf-dir, checked and renamed into place (repeatable)",
      (f: string, all: string[]) => [...all, f],
      [] as string[],
    )
    .option("--conf-dir <dir>", "where --conf writes", DEFAULT_CONF_DIR)
    .option("--resident", "also write the resident server's systemd socket and service units (not enabled)")
    .option("--unit-dir <dir>", "where --resident writes the units", DEFAULT_UNIT_DIR)
    .option("--remove-resident", "remove the units --resident wrote (and nothing else)")
    .action(async (opts: InstallOptions) => {
      if (opts.removeResident) {
        const removed = removeResidentUnits(opts.unitDir);
        io.stdout(removed.length ? `removed: ${removed.join(" ")}\n` : `no tscni units in ${opts.unitDir}\n`);
        if (removed.length)
          io.stdout(`stop the server with: systemctl disable --now ${RESIDENT_UNIT}.socket ${RESIDENT_UNIT}.service; systemctl daemon-reload\n`);
        return;
      }
      // The configs are checked before any plugin is installed, and written once all their plugins are there.
      const configs = readConfigs(opts.conf);
      const report = installPlugins(opts.binDir, { force: opts.force });
      io.stdout(`installed ${report.binary}\n`);
      if (report.program.kind === "native") {
        io.stdout(`program: native, from ${report.program.from}\n`);
      } else {
        io.stderr(
          `warning: no native program (${report.program.reason}), so the plugins run the Node build:\n` +
            `  ${report.binary} links to ${report.program.entry}, which must stay there;\n` +
            `  ${NODE_BUILD_COST}.\n` +
            `  The native program comes with the npm package ${platformPackageName()} or the release's plugin tarball.\n`,
        );
      }
      if (report.installed.length) io.stdout(`linked: ${report.installed.join(" ")}\n`);
      if (report.replaced.length) io.stdout(`replaced: ${report.replaced.join(" ")}\n`);
      for (const s of report.skipped) io.stderr(`skipped ${s.name}: ${s.reason}\n`);
      if (configs.length && !report.skipped.length) io.stdout(`wrote: ${installConfigs(opts.confDir, configs).join(" ")}\n`);
      if (opts.resident) {
        const written = installResidentUnits(opts.unitDir, opts.binDir, { force: opts.force });
        io.stdout(`wrote: ${written.join(" ")}\n`);
        io.stdout(`turn resident mode on with: systemctl daemon-reload; systemctl enable --now ${RESIDENT_UNIT}.socket\n`);
      }
      // A partial install is not a success: those plugin types still run the other implementation's programs.
      if (report.skipped.length) {
        const total = report.installed.length + report.replaced.length + report.skipped.length;
        throw new Error(
          `${report.skipped.length} of ${total} plugin types were not installed: ${opts.binDir} holds programs of those ` +
            "names that are not tscni's, which still run (use --force to replace them)" +
            (configs.length ? "; the network configs were not written" : ""),
        );
      }
    });
}
