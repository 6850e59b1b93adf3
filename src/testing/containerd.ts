/**
 * A private containerd for end-to-end tests and the benchmark: its own config, root, state dir and sockets under
 * a scratch dir, run in a private mount namespace (with a tmpfs over /run/containerd, where shims put their
 * sockets and runc its state) and, for tests, in a test-made "host" network namespace with sysfs remounted and
 * the host's cgroups kept. Its CRI plugin runs CNI from a given plugin directory and conf dir; the sandbox
 * ("pause") image is built here from a 20-line C program and imported with ctr, since there is no registry.
 * Stopped by PID; whatever it leaves (shims, sandbox processes, cgroups) is found by what only it could have
 * made (its socket address, the cgroup parent) and removed.
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { status as grpcStatus } from "@grpc/grpc-js";
import { type ContainerdSandboxInfo, CriClient, CriError } from "./cri-client.js";
import { docSnippet, substitute } from "./doc-snippets.js";
import { missing, runCommand, skipReason } from "./harness.js";

/** The CRI plugin's own state dir under containerd's state dir (netns mounts live in its `netns`). */
const CRI_STATE = "io.containerd.grpc.v1.cri";

/** Why a private containerd cannot run here, or undefined when it can. */
export function containerdSkipReason(): string | undefined {
  return missing(whyNoContainerd());
}

function whyNoContainerd(): string | undefined {
  const base = skipReason();
  if (base) return base;
  for (const [tool, args] of [
    ["containerd", ["--version"]],
    ["ctr", ["--version"]],
    ["containerd-shim-runc-v2", ["-v"]],
    ["runc", ["--version"]],
  ] as const) {
    if (spawnSync(tool, [...args]).status !== 0) return `${tool} is not installed (apt-get install containerd runc)`;
  }
  for (const tool of ["nsenter", "unshare", "flock", "tar"]) {
    if (spawnSync(tool, ["--version"]).status !== 0) return `${tool} is not installed`;
  }
  const cc = spawnSync("gcc", ["-static", "-x", "c", "-", "-o", "/dev/null"], { input: "int main(void) { return 0; }\n" });
  if (cc.error) return "gcc is not installed (it builds the sandbox image's pause program)";
  if (cc.status !== 0) return "gcc cannot link statically (libc6-dev missing?); the pause program must be static";
  return undefined;
}

/** The sandbox's PID 1: sleeps until SIGTERM or SIGINT, reaping whatever it inherits. */
const PAUSE_C = `#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>

static volatile sig_atomic_t stopping;
static void on_stop(int sig) { (void)sig; stopping = 1; }
static void on_child(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction stop = { .sa_handler = on_stop }, child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };
  sigset_t wanted, waiting;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGTERM); sigaddset(&wanted, SIGINT); sigaddset(&wanted, SIGCHLD);
  sigprocmask(SIG_BLOCK, &wanted, &waiting);
  sigaction(SIGTERM, &stop, NULL); sigaction(SIGINT, &stop, NULL); sigaction(SIGCHLD, &child, NULL);
  while (!stopping) sigsuspend(&waiting);
  return 0;
}
`;

const GO_ARCH: Record<string, string> = {
  x64: "amd64",
  arm64: "arm64",
  arm: "arm",
  ia32: "386",
  ppc64: "ppc64le",
  s390x: "s390x",
  riscv64: "riscv64",
};

function run(cmd: string, args: string[], input?: string): void {
  const r = spawnSync(cmd, args, { encoding: "utf8", input });
  if (r.error || r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.error?.message ?? ""}${r.stderr}${r.stdout}`);
}

/**
 * Builds an OCI image archive (oci-layout, index.json, manifest, config, one uncompressed layer holding a static
 * /pause) named `ref` (the `io.containerd.image.name` annotation ctr import uses); returns the archive's path.
 */
export function buildPauseImage(dir: string, ref: string): string {
  const work = path.join(dir, "pause-image");
  const rootfs = path.join(work, "rootfs");
  const layout = path.join(work, "layout");
  const blobs = path.join(layout, "blobs/sha256");
  mkdirSync(rootfs, { recursive: true });
  mkdirSync(blobs, { recursive: true });
  writeFileSync(path.join(work, "pause.c"), PAUSE_C);
  run("gcc", ["-static", "-Os", "-s", "-o", path.join(rootfs, "pause"), path.join(work, "pause.c")]);
  const layerTar = path.join(work, "layer.tar");
  run("tar", ["--owner=0", "--group=0", "--numeric-owner", "-C", rootfs, "-cf", layerTar, "pause"]);

  const blob = (content: Buffer) => {
    const digest = `sha256:${createHash("sha256").update(content).digest("hex")}`;
    writeFileSync(path.join(blobs, digest.slice(7)), content);
    return { digest, size: content.length };
  };
  const layer = blob(readFileSync(layerTar));
  const platform = { architecture: GO_ARCH[process.arch] ?? process.arch, os: "linux" };
  const config = blob(
    Buffer.from(
      JSON.stringify({
        ...platform,
        config: { Entrypoint: ["/pause"] },
        rootfs: { type: "layers", diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
        layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", ...layer }],
      }),
    ),
  );
  writeFileSync(path.join(layout, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(
    path.join(layout, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          ...manifest,
          platform,
          annotations: { "io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref.split(":").pop() },
        },
      ],
    }),
  );
  const archive = path.join(dir, "pause-image.tar");
  run("tar", ["--owner=0", "--group=0", "--numeric-owner", "-C", layout, "-cf", archive, "oci-layout", "index.json", "blobs"]);
  return archive;
}

/**
 * A CNI plugin directory for containerd's single `bin_dir`: a link to every plugin of `pluginDir`, plus `extra`
 * (name -> executable path, replacing a plugin of the same name).
 */
export function linkPluginDir(dir: string, pluginDir: string, extra: Record<string, string> = {}): string {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(pluginDir)) {
    if (name in extra) continue;
    const target = path.join(pluginDir, name);
    if (statSync(target).isFile()) symlinkSync(target, path.join(dir, name));
  }
  for (const [name, target] of Object.entries(extra)) symlinkSync(target, path.join(dir, name));
  return dir;
}

export interface ContainerdOptions {
  /** Scratch dir for everything containerd keeps (config, root, state, sockets, log); the caller removes it. */
  base: string;
  /** The CRI plugin's CNI `bin_dir` and `conf_dir`. */
  cniBinDir: string;
  cniConfDir: string;
  /** The sandbox image reference and the OCI archive that provides it (see buildPauseImage). */
  sandboxImage: string;
  imageArchive: string;
  /** A network namespace to run containerd in (with sysfs remounted, the host's cgroups kept); else the current. */
  hostNetns?: string;
  /**
   * A pinned mount namespace to run containerd in (prepared like that, see testing/resident-host.ts) instead of a
   * private one of its own, with the environment containerd (and so every plugin it runs) gets.
   */
  pinned?: { mountNs: string; env: Record<string, string> };
  /** Milliseconds to wait for containerd, the image and CNI to be ready. */
  readyTimeoutMs?: number;
  /**
   * A directory containerd sees as /var/lib/cni (bind-mounted in its mount namespace), so its result cache is the
   * test's own; without it, go-cni caches in the host's /var/lib/cni.
   */
  cniCacheDir?: string;
  /** More environment for containerd and so for every plugin it runs (after `pinned`'s). */
  env?: Record<string, string>;
}

/** TOML string: JSON's quoting is TOML's basic string for the paths and names used here. */
const q = (s: string) => JSON.stringify(s);

function configToml(o: ContainerdOptions, dirs: { root: string; state: string; socket: string; opt: string }): string {
  const cri = '[plugins."io.containerd.grpc.v1.cri"';
  return [
    "version = 2",
    `root = ${q(dirs.root)}`,
    `state = ${q(dirs.state)}`,
    "oom_score = 0",
    // Not needed here, and some would touch the host (aufs/zfs/btrfs/devmapper probe the root's filesystem).
    'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",',
    '  "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]',
    "[grpc]",
    `  address = ${q(dirs.socket)}`,
    "[ttrpc]",
    `  address = ${q(`${dirs.socket}.ttrpc`)}`,
    "[debug]",
    '  level = "info"',
    '[plugins."io.containerd.internal.v1.opt"]',
    `  path = ${q(dirs.opt)}`,
    `${cri}]`,
    `  sandbox_image = ${q(o.sandboxImage)}`,
    "  disable_apparmor = true",
    // runc would lower the sandbox's oom_score_adj below containerd's, which needs CAP_SYS_RESOURCE over it.
    "  restrict_oom_score_adj = true",
    "  enable_selinux = false",
    "  netns_mounts_under_state_dir = true",
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    `${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `${cri}.containerd.runtimes.runc.options]`,
    "  SystemdCgroup = false",
    // The CNI table of docs/runtimes.md, as an operator copies it, with this containerd's directories.
    ...substitute(docSnippet("docs/runtimes.md", "containerd-config"), { '"/opt/cni/bin"': q(o.cniBinDir), '"/etc/cni/net.d"': q(o.cniConfDir) })
      .trimEnd()
      .split("\n")
      .filter((line) => line !== "version = 2"),
    "  max_conf_num = 1",
    "",
  ].join("\n");
}

/** What containerd's CRI tells about a sandbox's network namespace. */
export interface SandboxNetns {
  /** The netns mount containerd made (CNI_NETNS), visible only in containerd's mount namespace. */
  path: string;
  /** The sandbox's pause process; /proc/<pid>/ns/net is the same namespace, seen from anywhere. */
  pid: number;
}

export class PrivateContainerd {
  readonly socket: string;
  readonly root: string;
  readonly state: string;
  readonly log: string;
  /** The cgroup parent to give sandboxes (LinuxPodSandboxConfig.cgroup_parent), so leftovers can be found. */
  readonly cgroupParent: string;
  private child: ChildProcess | undefined;
  private exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private client: CriClient | undefined;
  private createdRunDir = false;

  private constructor(private readonly options: ContainerdOptions) {
    this.socket = path.join(options.base, "containerd.sock");
    this.root = path.join(options.base, "root");
    this.state = path.join(options.base, "state");
    this.log = path.join(options.base, "containerd.log");
    this.cgroupParent = `/tscni-ctrd-${createHash("sha256").update(options.base).digest("hex").slice(0, 12)}`;
  }

  /** Starts containerd, imports the sandbox image and waits until CRI reports the image and CNI ready. */
  static async start(options: ContainerdOptions): Promise<PrivateContainerd> {
    const ctrd = new PrivateContainerd(options);
    try {
      await ctrd.launch();
      return ctrd;
    } catch (err) {
      ctrd.kill();
      throw err;
    }
  }

  get pid(): number {
    return this.child?.pid ?? 0;
  }

  get cri(): CriClient {
    if (!this.client) throw new Error("containerd is not running");
    return this.client;
  }

  /** The CRI plugin's directory of netns mounts. */
  get netnsDir(): string {
    return path.join(this.state, CRI_STATE, "netns");
  }

  /** The last lines of containerd's log, for error messages. */
  logTail(lines = 15): string {
    try {
      return readFileSync(this.log, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }

  private async launch(): Promise<void> {
    const o = this.options;
    const opt = path.join(o.base, "opt");
    const config = path.join(o.base, "config.toml");
    writeFileSync(config, configToml(o, { root: this.root, state: this.state, socket: this.socket, opt }));
    this.createdRunDir = !existsSync("/run/containerd");
    const cgroups = path.join(o.base, "cgroup-keep");
    mkdirSync(cgroups, { recursive: true }); // (recursive: a restart on the same base finds it)
    const script = [
      "set -e",
      o.hostNetns ? 'mount --rbind /sys/fs/cgroup "$1"; mount -t sysfs sysfs /sys; mount --move "$1" /sys/fs/cgroup' : ":",
      "mkdir -p /run/containerd; mount -t tmpfs -o mode=0711 tmpfs /run/containerd",
      o.cniCacheDir ? 'mkdir -p /var/lib/cni; mount --bind "$TSCNI_CTRD_CNI_CACHE" /var/lib/cni' : ":",
      'shift; exec "$@"',
    ].join("\n");
    const command = o.pinned
      ? // The pinned namespace has its sysfs and cgroups already; /run/containerd is containerd's alone all the same.
        [
          "nsenter",
          `--mount=${o.pinned.mountNs}`,
          "sh",
          "-c",
          script.replace(/^.*mount --rbind.*$/m, ":"),
          "sh",
          cgroups,
          "containerd",
          "--config",
          config,
        ]
      : ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", cgroups, "containerd", "--config", config];
    const argv = o.hostNetns ? ["nsenter", `--net=${o.hostNetns}`, ...command] : command;
    const logFd = openSync(this.log, "a");
    try {
      // nsenter, unshare and sh all exec: the child's PID is containerd's.
      const env = { ...process.env, ...o.pinned?.env, ...o.env, ...(o.cniCacheDir ? { TSCNI_CTRD_CNI_CACHE: o.cniCacheDir } : {}) };
      this.child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", logFd, logFd], env });
    } finally {
      closeSync(logFd);
    }
    this.child.on("exit", (code, signal) => (this.exited = { code, signal }));
    this.child.on("error", () => (this.exited = { code: -1, signal: null }));

    const deadline = Date.now() + (o.readyTimeoutMs ?? 20_000);
    const notReady = (what: string) => new Error(`private containerd: ${what}\n--- ${this.log} ---\n${this.logTail()}`);
    const alive = () => {
      if (this.exited) throw notReady(`exited (code ${this.exited.code}, signal ${this.exited.signal}) before it was ready`);
      if (Date.now() > deadline) return false;
      return true;
    };
    while (!existsSync(this.socket)) {
      if (!alive()) throw notReady("its socket did not appear");
      await sleep(50);
    }
    this.client = new CriClient(this.socket);
    for (;;) {
      try {
        await this.client.version(2_000);
        break;
      } catch (err) {
        // UNIMPLEMENTED: containerd is up but its CRI plugin failed to load (the log says why).
        if (err instanceof CriError && err.code === grpcStatus.UNIMPLEMENTED) throw notReady(err.message);
        if (!alive()) throw notReady(`CRI did not answer: ${(err as Error).message}`);
        await sleep(100);
      }
    }
    const imported = await runCommand("ctr", ["-a", this.socket, "-n", "k8s.io", "images", "import", o.imageArchive]);
    if (imported.code !== 0) throw notReady(`ctr images import failed: ${imported.stderr}${imported.stdout}`);
    while (!(await this.client.imageStatus(o.sandboxImage))) {
      if (!alive()) throw notReady(`CRI does not see the imported image ${o.sandboxImage}`);
      await sleep(100);
    }
    for (;;) {
      const network = (await this.client.status()).find((c) => c.type === "NetworkReady");
      if (network?.status) break;
      if (!alive()) throw notReady(`CRI network not ready: ${network?.reason ?? ""} ${network?.message ?? ""}`);
      await sleep(100);
    }
  }

  /** Where a sandbox's network namespace is: containerd's netns mount and the pause process. */
  async sandboxNetns(podSandboxId: string): Promise<SandboxNetns> {
    const { info } = await this.cri.podSandboxStatus(podSandboxId);
    const ns = netnsOf(info);
    if (!ns) throw new Error(`no network namespace in the status of sandbox ${podSandboxId}: ${JSON.stringify(info).slice(0, 500)}`);
    return ns;
  }

  /**
   * The command prefix that runs a program in a sandbox's network namespace through the netns path containerd
   * gave the plugins (entering containerd's mount namespace, where that bind mount lives).
   */
  inSandbox(ns: SandboxNetns): string[] {
    return ["nsenter", `--mount=/proc/${this.pid}/ns/mnt`, "nsenter", `--net=${ns.path}`];
  }

  /** Stops and removes every sandbox (as kubelet would), then containerd (SIGTERM, then SIGKILL), then leftovers. */
  async stop(): Promise<void> {
    if (this.client && !this.exited) {
      try {
        const sandboxes = await this.client.listPodSandbox();
        await Promise.allSettled(
          sandboxes.map(async (s) => {
            await this.client!.stopPodSandbox(s.id);
            await this.client!.removePodSandbox(s.id);
          }),
        );
      } catch {
        /* containerd is going away anyway */
      }
    }
    this.client?.close();
    this.client = undefined;
    if (this.child && !this.exited) {
      this.child.kill("SIGTERM");
      for (let i = 0; i < 50 && !this.exited; i++) await sleep(100);
    }
    this.kill();
  }

  /** Synchronous last resort (also after stop()): SIGKILL containerd, its shims and sandboxes; drop its cgroups. */
  kill(): void {
    this.client?.close();
    this.client = undefined;
    if (this.child?.pid && !this.exited) {
      try {
        process.kill(this.child.pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
    // Shims name containerd's socket on their command line; sandboxes sit under this instance's cgroup parent.
    for (const pid of listPids()) {
      const cmdline = readProc(pid, "cmdline").split("\0");
      if (cmdline[0]?.includes("containerd-shim") && cmdline.includes(this.socket)) killPid(pid);
    }
    const cgroupDirs = cgroupRoots()
      .map((r) => path.join(r, this.cgroupParent))
      .filter((d) => existsSync(d));
    for (const dir of cgroupDirs) for (const pid of cgroupPids(dir)) killPid(pid);
    for (const dir of cgroupDirs) removeCgroupTree(dir);
    if (this.createdRunDir) {
      try {
        rmdirSync("/run/containerd");
      } catch {
        /* still a mount point of another private containerd, or not empty */
      }
    }
    // Its mount namespace dies with its last process; nothing of it is mounted in ours, but be sure.
    for (const mountPoint of mountsUnder(this.options.base).reverse()) spawnSync("umount", ["-l", mountPoint]);
  }
}

/** The netns path from the sandbox's runtime spec and the pause PID, from containerd's verbose info. */
export function netnsOf(info: ContainerdSandboxInfo): SandboxNetns | undefined {
  const nsPath = info.runtimeSpec?.linux?.namespaces?.find((n) => n.type === "network")?.path;
  return nsPath && info.pid ? { path: nsPath, pid: info.pid } : undefined;
}

function listPids(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

function readProc(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return "";
  }
}

function killPid(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    /* gone */
  }
}

/** Every cgroup hierarchy root: /sys/fs/cgroup itself (v2) and its v1 controller mounts. */
function cgroupRoots(): string[] {
  const base = "/sys/fs/cgroup";
  if (!existsSync(base)) return [];
  return [
    base,
    ...readdirSync(base)
      .map((d) => path.join(base, d))
      .filter((d) => existsSync(path.join(d, "cgroup.procs"))),
  ];
}

function cgroupPids(dir: string): number[] {
  const pids: number[] = [];
  const walk = (d: string) => {
    try {
      pids.push(...readFileSync(path.join(d, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number));
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
    } catch {
      /* raced with removal */
    }
  };
  walk(dir);
  return pids;
}

function removeCgroupTree(dir: string): void {
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeCgroupTree(path.join(dir, e.name));
    rmdirSync(dir);
  } catch {
    /* busy or gone */
  }
}

/** Mount points in this mount namespace at or under `dir`. */
function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}
