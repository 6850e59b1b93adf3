/**
 * Where a conformance run happens: a "host" network namespace of its own, in which the plugin runs (through
 * `nsenter --net`) and the user's setup commands run, and container namespaces made for each attachment. Nothing
 * touches the real host's network. Everything made is removed by `cleanup()` — synchronous, so it also runs from a
 * signal handler — and the processes left in the runner's namespaces (daemons a setup command started) are ended.
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { runTool } from "#net/tools.js";
import { MANIFESTS } from "#plugins/manifests.js";
import { findTool } from "#sys/tool-path.js";
import type { PluginCall } from "./output.js";
import { type NsSnapshot, parseIpAddrJson, type Snapshots } from "./state.js";

/** A network namespace the runner made: its name under /run/netns and its path. */
export interface Namespace {
  name: string;
  path: string;
}

/** How the sandbox is built and how plugins are run in it. */
export interface SandboxOptions {
  /** Makes the namespace names unique: `cnic-<tag>-h` for the host, `cnic-<tag>-<n>` for containers. */
  tag: string;
  /** The caller's environment: passed to every plugin and command, without its CNI_* variables. */
  env: Record<string, string | undefined>;
  /** Shell commands run in the host namespace, in order, before any check. */
  hostSetup: readonly string[];
  /** Shell commands run in the host namespace after each container namespace is made (CONFORMANCE_NETNS names it). */
  netnsSetup: readonly string[];
  /** A plugin call running longer is killed (SIGKILL). */
  timeoutMs: number;
}

/** A setup command failed: the run cannot go on. */
export class SetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SetupError";
  }
}

interface Finished {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

const tool = (name: string): string => findTool(name) ?? name;

/** Blocks for `ms` (the cleanup path is synchronous). */
const pauseSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

export class Sandbox {
  readonly host: Namespace;
  private readonly made: Namespace[] = [];
  private readonly running = new Set<ChildProcess>();
  private readonly baseEnv: Record<string, string>;
  private readonly kindProbes = new Map<string, string | undefined>();
  private counter = 0;

  /** Makes nothing yet (start() does): a signal handler can hold it, and clean up, from the first moment. */
  constructor(private readonly opts: SandboxOptions) {
    this.host = { name: `cnic-${opts.tag}-h`, path: `/run/netns/cnic-${opts.tag}-h` };
    this.baseEnv = Object.fromEntries(Object.entries(opts.env).filter((e): e is [string, string] => e[1] !== undefined && !e[0].startsWith("CNI_")));
  }

  /** Makes the host namespace (loopback up) and runs the host setup commands in it; throws SetupError. */
  async start(): Promise<void> {
    this.addNamespace(this.host);
    this.ip(["-n", this.host.name, "link", "set", "lo", "up"]);
    for (const command of this.opts.hostSetup) await this.setupCommand(command, { CONFORMANCE_HOST_NETNS: this.host.path });
  }

  private ip(args: string[]): string {
    const r = spawnSync(tool("ip"), args, { encoding: "utf8" });
    if (r.status !== 0) throw new SetupError(`ip ${args.join(" ")}: ${(r.stderr || r.error?.message || "").trim()}`);
    return r.stdout;
  }

  private addNamespace(ns: Namespace): void {
    this.ip(["netns", "add", ns.name]);
    this.made.push(ns);
  }

  /** A fresh container namespace (loopback left down, as the kernel makes it), after the netns setup commands ran. */
  async namespace(): Promise<Namespace> {
    const index = ++this.counter;
    const ns = { name: `cnic-${this.opts.tag}-${index}`, path: `/run/netns/cnic-${this.opts.tag}-${index}` };
    this.addNamespace(ns);
    for (const command of this.opts.netnsSetup) {
      await this.setupCommand(command, {
        CONFORMANCE_HOST_NETNS: this.host.path,
        CONFORMANCE_NETNS: ns.path,
        CONFORMANCE_NETNS_NAME: ns.name,
        CONFORMANCE_NETNS_INDEX: String(index),
      });
    }
    return ns;
  }

  /** Removes a namespace now (ending any process in it), as a runtime does when its container goes. */
  removeNamespace(ns: Namespace): void {
    this.endProcessesIn(ns);
    spawnSync(tool("ip"), ["netns", "delete", ns.name]);
    const i = this.made.indexOf(ns);
    if (i >= 0) this.made.splice(i, 1);
  }

  private async setupCommand(command: string, vars: Record<string, string>): Promise<void> {
    const r = await this.spawnIn(tool("sh"), ["-c", command], { ...this.baseEnv, ...vars }, "", 120_000);
    if (r.exitCode !== 0) {
      throw new SetupError(
        `setup command failed (${r.signal ? `signal ${r.signal}` : `exit ${String(r.exitCode)}`}): ${command}\n${r.stdout}${r.stderr}`.trimEnd(),
      );
    }
  }

  /** Runs `plugin` in the host namespace with the caller's environment, `cni` (the CNI_* variables) and `stdin`. */
  async runPlugin(plugin: string, command: string, cni: Record<string, string>, stdin: string): Promise<PluginCall> {
    const r = await this.spawnIn(plugin, [], { ...this.baseEnv, ...cni }, stdin, this.opts.timeoutMs);
    return { command, env: cni, stdin, ...r };
  }

  /**
   * Runs `file` in the host namespace. Resolves when it exits: output still held open by a process it left running
   * (a daemon started by a setup command) is not waited for beyond a moment.
   */
  private spawnIn(file: string, args: string[], env: Record<string, string>, stdin: string, timeoutMs: number): Promise<Finished> {
    const started = performance.now();
    return new Promise((resolve) => {
      const child = spawn(tool("nsenter"), [`--net=${this.host.path}`, "--", file, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
      this.running.add(child);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let killedForTime = false;
      let settled = false;
      const timer = setTimeout(() => {
        killedForTime = true;
        child.kill("SIGKILL");
      }, timeoutMs);
      const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.running.delete(child);
        const stderr = Buffer.concat(err).toString() + (killedForTime ? `\n[cnitool conformance: killed after ${timeoutMs} ms]` : "");
        resolve({ exitCode, signal, stdout: Buffer.concat(out).toString(), stderr, durationMs: performance.now() - started });
      };
      child.stdout.on("data", (b: Buffer) => out.push(b));
      child.stderr.on("data", (b: Buffer) => err.push(b));
      child.stdin.on("error", () => undefined); // a program may exit without reading stdin
      child.on("error", (e) => {
        err.push(Buffer.from(`cannot run ${file}: ${e.message}`));
        finish(127, null);
      });
      child.on("close", (code, signal) => finish(code, signal));
      child.on("exit", (code, signal) => {
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          finish(code, signal);
        }, 300).unref();
      });
      child.stdin.end(stdin);
    });
  }

  /** The links and addresses of a namespace (the host's when none is named). */
  async snapshot(ns: Namespace = this.host): Promise<NsSnapshot> {
    const { stdout } = await runTool("ip", ["-n", ns.name, "-json", "-details", "addr", "show"], `reading namespace ${ns.name}`);
    return parseIpAddrJson(stdout);
  }

  /** The container namespace and the host, read together. */
  async snapshots(ns: Namespace): Promise<Snapshots> {
    return { container: await this.snapshot(ns), host: await this.snapshot() };
  }

  /** Whether a namespace is still there. */
  exists(ns: Namespace): boolean {
    return existsSync(ns.path);
  }

  /**
   * Why this kernel cannot make the links plugin type `kind` makes (undefined when it can, or when the type makes
   * no link kind of its own: its manifest's linkKindProbe): `ip link add` of that kind on a veth in a scratch namespace,
   * refused with "Unknown device type".
   */
  linkKindMissing(kind: string): string | undefined {
    const words = MANIFESTS.find((m) => m.name === kind)?.linkKindProbe;
    if (!words) return undefined;
    if (this.kindProbes.has(kind)) return this.kindProbes.get(kind);
    const ns = { name: `cnic-${this.opts.tag}-probe`, path: `/run/netns/cnic-${this.opts.tag}-probe` };
    let reason: string | undefined;
    this.addNamespace(ns);
    try {
      this.ip(["-n", ns.name, "link", "add", "pv0", "type", "veth", "peer", "name", "pv1"]);
      const r = spawnSync(tool("ip"), ["-n", ns.name, ...words], { encoding: "utf8" });
      if (r.status !== 0 && /unknown device type/i.test(r.stderr))
        reason = `this kernel cannot make ${kind} links (ip ${words.join(" ")}: ${r.stderr.trim()})`;
    } finally {
      this.removeNamespace(ns);
    }
    this.kindProbes.set(kind, reason);
    return reason;
  }

  /** Ends the processes whose network namespace is `ns`: SIGTERM, then SIGKILL for those still there after 1 s. */
  private endProcessesIn(ns: Namespace): void {
    const pids = () => spawnSync(tool("ip"), ["netns", "pids", ns.name], { encoding: "utf8" }).stdout.split(/\s+/).filter(Boolean).map(Number);
    let left = pids();
    if (left.length === 0) return;
    for (const pid of left) this.signal(pid, "SIGTERM");
    for (let waited = 0; waited < 1000 && left.length; waited += 50) {
      pauseSync(50);
      left = pids();
    }
    for (const pid of left) this.signal(pid, "SIGKILL");
  }

  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }

  /** Removes everything the run made: plugin calls still running, processes in its namespaces, the namespaces. */
  cleanup(): void {
    for (const child of this.running) child.kill("SIGKILL");
    this.running.clear();
    for (const ns of [...this.made].reverse()) this.removeNamespace(ns);
  }
}
