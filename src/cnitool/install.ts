/**
 * `cnitool install`: puts the multicall binary and one link per plugin type into a CNI bin dir
 * (default /opt/cni/bin). Files that are not ours are left alone unless --force.
 * @module
 */
import { copyFileSync, chmodSync, lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, existsSync } from "node:fs";
import path from "node:path";
import { PROGRAMS } from "../cli/registry.js";
import { selfExecutable } from "../cli/inprocess.js";

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

  for (const [name, entry] of Object.entries(PROGRAMS)) {
    if (entry.test || (name === "cnitool" && opts.includeCnitool === false)) continue;
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
