/**
 * `cnitool install`: puts the multicall binary and one link per plugin type into a CNI bin dir
 * (default /opt/cni/bin). Files that are not ours are left alone unless --force.
 * @module
 */
import { copyFileSync, chmodSync, lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { Io } from "../cnitool/cnitool.js";
import { PROGRAM_NAMES } from "./programs.js";
import { selfExecutable } from "./self.js";

export const DEFAULT_BIN_DIR = "/opt/cni/bin";
/** What plugin links point at: the launcher (or the program itself when there is no launcher). */
const BINARY_NAME = "tscni";
/** The standalone program the launcher hands calls to. */
const PROGRAM_NAME = "tscni-js";

export interface InstallReport {
  binary: string;
  installed: string[];
  replaced: string[];
  skipped: Array<{ name: string; reason: string }>;
}

/** Whether `file` is a link to our binary in the same dir (safe to replace). */
function isOurLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink() && readlinkSync(file) === BINARY_NAME;
  } catch {
    return false;
  }
}

/** Installs into `binDir`; `source` is the multicall executable (default: the one running). */
export function installPlugins(binDir: string, opts: { force?: boolean; source?: string; includeCnitool?: boolean } = {}): InstallReport {
  const source = opts.source ?? selfExecutable();
  if (!source) throw new Error("cannot tell where the tscni executable is; pass its path");
  const standalone = !source.endsWith(".js");
  mkdirSync(binDir, { recursive: true });
  const report: InstallReport = { binary: "", installed: [], replaced: [], skipped: [] };

  const binary = path.join(binDir, BINARY_NAME);
  // Copy then rename: a runtime executing the old binary meanwhile never sees a half-written file.
  const copyExecutable = (from: string, to: string) => {
    const tmp = `${to}.${process.pid}.tmp`;
    copyFileSync(from, tmp);
    chmodSync(tmp, 0o755);
    renameSync(tmp, to);
  };
  const launcher = path.join(path.dirname(source), BINARY_NAME);
  if (!standalone) {
    // The Node build cannot be copied alone: link to it where it is.
    rmSync(binary, { force: true });
    symlinkSync(source, binary);
  } else if (path.basename(source) === PROGRAM_NAME && existsSync(launcher)) {
    copyExecutable(source, path.join(binDir, PROGRAM_NAME)); // the program first: the launcher execs it
    copyExecutable(launcher, binary);
  } else {
    copyExecutable(source, binary);
  }
  report.binary = binary;

  for (const name of PROGRAM_NAMES) {
    if (name === "cnitool" && opts.includeCnitool === false) continue;
    const target = path.join(binDir, name);
    const exists = existsSync(target) || isOurLink(target);
    if (exists && !isOurLink(target) && !opts.force) {
      report.skipped.push({ name, reason: `${target} exists and is not tscni's (use --force to replace it)` });
      continue;
    }
    const tmp = `${target}.${process.pid}.tmp`;
    rmSync(tmp, { force: true });
    symlinkSync(BINARY_NAME, tmp);
    renameSync(tmp, target);
    (exists ? report.replaced : report.installed).push(name);
  }
  return report;
}

/** `cnitool install [--bin-dir DIR] [--force]`. */
export function addInstallCommand(program: Command, io: Io): void {
  program.command("install")
    .description("Install the tscni binary and a link per plugin type into a CNI bin dir")
    .option("--bin-dir <dir>", "CNI plugin directory", DEFAULT_BIN_DIR)
    .option("--force", "replace plugins of the same name that are not tscni's")
    .action(async (opts: { binDir: string; force?: boolean }) => {
      const report = installPlugins(opts.binDir, { force: opts.force });
      io.stdout(`installed ${report.binary}\n`);
      if (report.installed.length) io.stdout(`linked: ${report.installed.join(" ")}\n`);
      if (report.replaced.length) io.stdout(`replaced: ${report.replaced.join(" ")}\n`);
      for (const s of report.skipped) io.stderr(`skipped ${s.name}: ${s.reason}\n`);
    });
}
