/**
 * Integration-test harness: where the built programs are, whether integration tests can run here, network
 * namespaces with a unique per-run prefix, commands run inside them, and cleanup that always happens. A test's
 * "host" is itself a namespace the test made, so bridges, firewall rules and sysctls never touch the real host.
 * @module
 */
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** The repository (tests run from dist-test/, two levels down). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The shipped plugin directory under test. */
export const OUR_BIN = path.join(ROOT, "dist/bin");
/** The test plugins (noop, sleep, legacy010, broken): dist-test/bin, never part of the shipped directory. */
export const TEST_BIN = path.join(ROOT, "dist-test/bin");
export const GO_BIN = "/usr/lib/cni";
export const CNITOOL = path.join(OUR_BIN, "cnitool");

/**
 * A missing prerequisite (root, a tool, a package): the reason a test skips, printed. Under CI=true nothing may
 * be missing, so it throws instead and the test file fails. Kernel features this VM lacks are not prerequisites:
 * their tests skip with their reason everywhere.
 */
export function missing(reason: string | undefined): string | undefined {
  if (reason && process.env["CI"] === "true") throw new Error(`CI=true and a prerequisite is missing: ${reason}`);
  return reason;
}

/** Why integration tests cannot run here (see `missing`), or undefined when they can. */
export function skipReason(needGo = false, ...more: Array<string | undefined>): string | undefined {
  if (process.getuid?.() !== 0) return missing("integration tests need root (network namespaces)");
  if (spawnSync("ip", ["-V"]).status !== 0) return missing("iproute2 (ip) is not installed");
  if (needGo && !existsSync(path.join(GO_BIN, "bridge"))) return missing("Debian's containernetworking-plugins (/usr/lib/cni) is not installed");
  return missing(more.find((r) => r !== undefined));
}

/** A short random tag so parallel runs and leftovers never collide (link names have 15 bytes at most). */
export const runTag = (): string => Math.random().toString(16).slice(2, 6);

export class Netns {
  readonly path: string;
  constructor(readonly name: string) {
    this.path = `/run/netns/${name}`;
  }
  static create(name: string): Netns {
    execFileSync("ip", ["netns", "add", name]);
    execFileSync("ip", ["-n", name, "link", "set", "lo", "up"]);
    return new Netns(name);
  }
  /**
   * A pinned mount namespace that commands in this namespace run in (the resident pass, testing/resident-host.ts);
   * otherwise each gets its own from `ip netns exec`.
   */
  mountNs?: string;
  /** This namespace's own resident server (the resident pass): commands run here call it unless told otherwise. */
  residentSocket?: string;
  /** `env` (default: this process's) for a command run here: it calls this namespace's server unless told otherwise. */
  callEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
    const own = this.residentSocket && env["TSCNI_RESIDENT_SOCKET"] === process.env["TSCNI_RESIDENT_SOCKET"];
    return own ? { ...env, TSCNI_RESIDENT_SOCKET: this.residentSocket } : env;
  }
  /** The command line that runs `cmd` in this namespace (for spawn; run() and exec() use it). */
  commandLine(cmd: string, args: string[], cwd = process.cwd()): [string, string[]] {
    // (Entering a mount namespace moves to its root: --wd keeps the directory, as `ip netns exec` does.)
    return this.mountNs
      ? ["nsenter", [`--net=${this.path}`, `--mount=${this.mountNs}`, `--wd=${cwd}`, "--", cmd, ...args]]
      : ["ip", ["netns", "exec", this.name, cmd, ...args]];
  }
  /** Runs a command in this namespace; resolves with stdout/stderr and the exit status (never rejects). */
  async run(
    cmd: string,
    args: string[],
    opts: { env?: NodeJS.ProcessEnv; input?: string | Buffer; cwd?: string; timeoutMs?: number } = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    return runCommand(...this.commandLine(cmd, args, opts.cwd), { ...opts, env: this.callEnv(opts.env) });
  }
  /** Synchronous, throwing variant for quick inspection. */
  exec(cmd: string, args: string[]): string {
    return execFileSync(...this.commandLine(cmd, args), { encoding: "utf8" });
  }
  /** A sysctl of this namespace, by its dotted name. */
  sysctl(key: string): string {
    return this.exec("cat", [`/proc/sys/${key.replaceAll(".", "/")}`]).trim();
  }
  ipJson(args: string[]): unknown {
    return JSON.parse(execFileSync("ip", ["-n", this.name, "-json", ...args], { encoding: "utf8" }) || "[]");
  }
  delete(): void {
    spawnSync("ip", ["netns", "delete", this.name]);
  }
}

export async function runCommand(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; input?: string | Buffer; cwd?: string; timeoutMs?: number } = {},
) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      cmd,
      args,
      { env: opts.env ?? process.env, maxBuffer: 16 << 20, cwd: opts.cwd, timeout: opts.timeoutMs, killSignal: "SIGKILL" },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    // A program may exit without reading its stdin (the launcher answers VERSION itself): not an error.
    child.stdin?.on("error", () => undefined);
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

export { execFileAsync };

/** A scratch directory removed by cleanup(). */
export function tempDir(prefix = "tscni-it-"): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function writeJson(file: string, value: unknown): void {
  writeFileSync(file, JSON.stringify(value, null, 2));
}

/** Collects cleanup actions and runs them all (in reverse), whatever fails. */
export class Cleanup {
  private actions: Array<() => void> = [];
  add(action: () => void): void {
    this.actions.push(action);
  }
  netns(name: string): Netns {
    const ns = Netns.create(name);
    this.add(() => ns.delete());
    return ns;
  }
  dir(prefix?: string): string {
    const d = tempDir(prefix);
    this.add(() => rmSync(d, { recursive: true, force: true }));
    return d;
  }
  run(): void {
    for (const action of this.actions.reverse()) {
      try {
        action();
      } catch {
        /* keep cleaning */
      }
    }
    this.actions = [];
  }
}
