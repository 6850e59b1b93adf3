/**
 * Which program a plugin directory runs, and where the native one is. The native program is the Bun-compiled
 * `tscni-js` with the C launcher `tscni` beside it (the launcher execs the program next to itself). It is found
 * beside the running program (a standalone build, or a git checkout's dist/ under Node), else in the platform
 * package `@tscni/<platform>-<arch>` that npm installs beside tscni as an optional dependency (esbuild's and
 * biome's way: `require.resolve("<package>/package.json")`, and only of tscni's own version). Without either, the
 * plugins run the Node build (dist/cli/main.js).
 * @module
 */

import { spawnSync } from "node:child_process";
import { closeSync, existsSync, lstatSync, openSync, readFileSync, readlinkSync, readSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { readBuildId } from "#invoke/build-id.js";
import { selfExecutable } from "#sys/self.js";

/** The launcher's name in a plugin directory: every plugin links to it. */
export const LAUNCHER_NAME = "tscni";
/** The standalone program's name: the launcher runs the file of this name beside itself. */
export const PROGRAM_NAME = "tscni-js";

// The standalone build compiles tscni's version in (scripts/link-bins.mjs), as it has no package.json beside it.
declare const TSCNI_VERSION: string | undefined;

/** What runs a plugin directory's plugins. */
export interface ProgramInfo {
  /** "native": the Bun-compiled program; "node": the Node build, which starts Node for every call. */
  kind: "native" | "node";
  /** The program's file (tscni-js, or the Node entry dist/cli/main.js). */
  path: string;
  /** tscni's version, where the program says it (or its package.json does). */
  version?: string;
  /** The build ID, where the program could be asked (a native program of another architecture cannot). */
  build?: string;
  /** A native program's platform and architecture, in Node's names (linux, x64 / arm64). */
  platform?: string;
  arch?: string;
  /** A native program's launcher, and whether it carries the program's build ID. */
  launcher?: { path: string; sameBuild?: boolean };
  /** The Node build: whether its entry is there (a deleted project leaves the links dangling). */
  present?: boolean;
}

/** The native program, with where it comes from, for `cnitool install` to copy (with the launcher beside it). */
interface NativeProgram {
  program: string;
  from: string;
}

/** The platform package that holds the native program for this machine, e.g. `@tscni/linux-x64`. */
export function platformPackageName(platform: string = process.platform, arch: string = process.arch): string {
  return `@tscni/${platform}-${arch}`;
}

const isNodeEntry = (file: string) => file.endsWith(".js");

/** tscni's version: compiled into the standalone program, else from the package.json above the Node build. */
export function ownVersion(): string | undefined {
  if (typeof TSCNI_VERSION === "string") return TSCNI_VERSION;
  return packageVersion(decodeURIComponent(new URL("../../package.json", import.meta.url).pathname));
}

function packageVersion(file: string): string | undefined {
  try {
    const version = (JSON.parse(readFileSync(file, "utf8")) as { version?: unknown }).version;
    return typeof version === "string" ? version : undefined;
  } catch {
    return undefined;
  }
}

/** The launcher's description beside `program`, when there is one (it carries its build ID as text). */
function launcherBeside(program: string, build: string | undefined): ProgramInfo["launcher"] {
  const launcher = path.join(path.dirname(program), LAUNCHER_NAME);
  if (!existsSync(launcher) || realpathSync(launcher) === realpathSync(program)) return undefined;
  return { path: launcher, ...(build ? { sameBuild: readFileSync(launcher).includes(build) } : {}) };
}

/** The program that is running (never starts another). */
export function describeSelf(): ProgramInfo {
  const self = selfExecutable();
  if (!self) throw new Error("cannot tell where the running tscni program is");
  const build = readBuildId() || undefined;
  const version = ownVersion();
  const info: ProgramInfo = isNodeEntry(self)
    ? { kind: "node", path: self, present: true }
    : { kind: "native", path: self, platform: process.platform, arch: process.arch, launcher: launcherBeside(self, build) };
  if (version) info.version = version;
  if (build) info.build = build;
  if (!info.launcher) delete info.launcher;
  return info;
}

/** ELF machine numbers in Node's architecture names. */
const ELF_MACHINES: Record<number, string> = { 3: "ia32", 40: "arm", 62: "x64", 183: "arm64", 243: "riscv64", 21: "ppc64", 22: "s390x" };

/** The architecture an ELF executable is built for, or undefined for anything else. */
export function elfArch(file: string): string | undefined {
  const head = Buffer.alloc(20);
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    if (readSync(fd, head, 0, 20, 0) < 20 || head.readUInt32BE(0) !== 0x7f454c46) return undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const machine = head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
  return ELF_MACHINES[machine] ?? `elf-machine-${machine}`;
}

/**
 * What the plugins of `dir` run, from its files: the Node build a link names, or the native program, which is
 * asked for its version and build (`cnitool version --json`) when it is built for this machine.
 */
export function describeDir(dir: string): ProgramInfo {
  const entry = path.join(dir, LAUNCHER_NAME);
  let isLink: boolean;
  try {
    isLink = lstatSync(entry).isSymbolicLink();
  } catch {
    throw new Error(`${dir} holds no tscni program (no ${entry})`);
  }
  if (isLink && isNodeEntry(readlinkSync(entry))) {
    const target = path.resolve(dir, readlinkSync(entry));
    const info: ProgramInfo = { kind: "node", path: target, present: existsSync(target) };
    const version = packageVersion(path.join(path.dirname(target), "../../package.json"));
    if (version) info.version = version;
    return info;
  }
  const besideProgram = path.join(dir, PROGRAM_NAME);
  const program = existsSync(besideProgram) ? besideProgram : entry;
  const arch = elfArch(program);
  if (arch === process.arch && process.platform === "linux") {
    const asked = spawnSync(program, ["version", "--json"], { argv0: "cnitool", encoding: "utf8", timeout: 20_000 });
    if (asked.status !== 0)
      throw new Error(`${program} does not answer \`cnitool version\`: ${(asked.stderr || asked.stdout || String(asked.error)).trim()}`);
    return JSON.parse(asked.stdout) as ProgramInfo;
  }
  const info: ProgramInfo = { kind: "native", path: program, platform: "linux" };
  if (arch) info.arch = arch;
  if (program !== entry) info.launcher = { path: entry };
  return info;
}

/** One description as `cnitool version` prints it. */
export function formatProgramInfo(info: ProgramInfo): string {
  const version = `tscni ${info.version ?? "(version unknown)"}`;
  if (info.kind === "node") {
    const state = info.present ? "" : " (missing: these plugins cannot run)";
    return `${version}: the Node build; every plugin call starts Node\nprogram: ${info.path}${state}\n`;
  }
  const build = info.build ? `build ${info.build}` : "not runnable here, build unknown";
  const lines = [`${version}: native program for ${info.platform ?? "?"}-${info.arch ?? "?"}, ${build}`, `program: ${info.path}`];
  if (info.launcher) {
    const same = info.launcher.sameBuild === undefined ? "" : info.launcher.sameBuild ? " (same build)" : " (ANOTHER BUILD: reinstall)";
    lines.push(`launcher: ${info.launcher.path}${same}`);
  }
  return lines.join("\n") + "\n";
}

/** The native program for this machine, or why there is none (then the Node build serves). */
export function findNativeProgram(self: string | undefined = selfExecutable()): NativeProgram | { missing: string } {
  if (!self) return { missing: "cannot tell where the running tscni program is" };
  if (!isNodeEntry(self)) return { program: self, from: path.dirname(self) };
  // A git checkout's build: the standalone program and launcher that link-bins.mjs made beside the Node entry.
  const dist = path.resolve(path.dirname(self), "..");
  if (existsSync(path.join(dist, PROGRAM_NAME))) return { program: path.join(dist, PROGRAM_NAME), from: dist };

  const name = platformPackageName();
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve(`${name}/package.json`);
  } catch {
    return { missing: `${name} is not installed` };
  }
  const found = packageVersion(manifest);
  const wanted = ownVersion();
  if (found !== wanted) return { missing: `${name} is version ${found ?? "(unknown)"}, tscni is ${wanted ?? "(unknown)"}` };
  const program = path.join(path.dirname(manifest), "bin", PROGRAM_NAME);
  if (!existsSync(program)) return { missing: `${name} has no ${program}` };
  return { program, from: `${name} ${found}` };
}
