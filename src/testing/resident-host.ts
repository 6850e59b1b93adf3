/**
 * The integration suite's resident pass (scripts/run-tests.sh runs every integration test a second time with
 * TSCNI_TEST_RESIDENT=1): each test "host" namespace gets its own `cnitool daemon`, and the calls made through
 * that host go to it. The server serves only callers in its own network and mount namespaces, and `ip netns
 * exec` makes a fresh mount namespace for every command, so a host in this pass has one persistent mount
 * namespace (a copy of the test's, receiving its later mounts such as new /run/netns entries, with /sys
 * remounted for the host's network namespace as `ip netns exec` does), and its commands run through
 * `nsenter --net --mount` into both. The drop-in tests run podman and containerd in such a namespace too, so the
 * plugin calls they make are served. Each server's count of served calls is appended to TSCNI_TEST_RESIDENT_LOG.
 * @module
 */
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Whether this is the resident pass. */
export const RESIDENT_PASS = process.env["TSCNI_TEST_RESIDENT"] === "1";

/** Where the hosts' mount namespaces are pinned: a private mount, as pinning one needs. */
const MOUNT_DIR = "/run/tscni-test-mnt";

function ensureMountDir(): void {
  mkdirSync(MOUNT_DIR, { recursive: true });
  const mounted = readFileSync("/proc/self/mountinfo", "utf8").split("\n").some((l) => l.split(" ")[4] === MOUNT_DIR);
  if (!mounted) {
    execFileSync("mount", ["--bind", MOUNT_DIR, MOUNT_DIR]);
    execFileSync("mount", ["--make-private", MOUNT_DIR]);
  }
}

/** A host namespace's pinned mount namespace and its resident server. */
export interface ResidentHost {
  /** The pinned mount namespace (for nsenter --mount). */
  mountNs: string;
  /** The server's socket (TSCNI_RESIDENT_SOCKET of the host's calls). */
  socket: string;
  /** Stops the server (SIGTERM: in-flight calls finish), logs what it served, unpins the mount namespace. */
  stop(): void;
}

/** Pins a mount namespace for the network namespace `netnsName` and starts a server in both; `dir` holds its socket. */
export function startResidentHost(netnsName: string, dir: string, cnitool: string): ResidentHost {
  ensureMountDir();
  const mountNs = path.join(MOUNT_DIR, netnsName);
  writeFileSync(mountNs, "");
  // A new mount namespace, pinned at mountNs, slave to the test's (its later mounts reach it, none of its own go
  // back); inside it, /sys is remounted from within the host's network namespace, so it shows that namespace,
  // and the cgroup mounts are kept (podman's and containerd's runc need them).
  const keep = path.join(dir, "cgroup-keep");
  mkdirSync(keep, { recursive: true });
  const pin = spawnSync("unshare", [`--mount=${mountNs}`, "--propagation", "slave", "nsenter", `--net=/run/netns/${netnsName}`, "--",
    "sh", "-c", 'mount --rbind /sys/fs/cgroup "$1" && mount -t sysfs sysfs /sys && mount --move "$1" /sys/fs/cgroup', "sh", keep],
  { encoding: "utf8" });
  if (pin.status !== 0) throw new Error(`cannot pin a mount namespace for ${netnsName}: ${pin.stderr}`);
  const socket = path.join(dir, "plugins.sock");
  const log = path.join(dir, "daemon.log");
  // Started through a shell that exits at once: the server is nobody's child here (this process, blocked in a
  // synchronous cleanup, could not reap it).
  const started = spawnSync("sh", ["-c", 'nsenter --net="$1" --mount="$2" -- "$3" daemon --warm-up 20 --socket "$4" </dev/null >>"$5" 2>&1 & echo $!', "sh",
    `/run/netns/${netnsName}`, mountNs, cnitool, socket, log], { encoding: "utf8" });
  const pid = Number(started.stdout.trim());
  // Calls before it listens would only fall back to exec, but the pass is meant to be served.
  spawnSync("sh", ["-c", 'for i in $(seq 200); do [ -S "$1" ] && exit 0; sleep 0.01; done; exit 1', "sh", socket]);
  let stopped = false;
  return {
    mountNs,
    socket,
    stop() {
      if (stopped) return;
      stopped = true;
      const status = spawnSync("nsenter", [`--net=/run/netns/${netnsName}`, `--mount=${mountNs}`, "--", cnitool, "daemon", "status", "--socket", socket],
        { encoding: "utf8" });
      const served = status.status === 0 ? (JSON.parse(status.stdout) as { served: number }).served : -1;
      try {
        process.kill(pid, "SIGTERM");
        // Its socket goes when the calls under way have finished (waiting for the pid would wait for init to reap it).
        spawnSync("sh", ["-c", 'for i in $(seq 3000); do [ -S "$1" ] || exit 0; sleep 0.01; done', "sh", socket]);
      } catch { /* already gone */ }
      // A server that could not be asked, or that caught an error no request should leak, is reported as failed.
      const text = readLog(log);
      const failed = served < 0 || /uncaught|unhandled/.test(text);
      const summary = process.env["TSCNI_TEST_RESIDENT_LOG"];
      if (summary) appendFileSync(summary, `${netnsName} ${failed ? -1 : served}${failed ? ` ${text}` : ""}\n`);
      spawnSync("umount", [mountNs]);
      rmSync(mountNs, { force: true });
    },
  };
}

const readLog = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").replace(/\s+/g, " ").slice(-300) : "");
