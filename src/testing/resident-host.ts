/**
 * The integration suite's resident pass (scripts/run-tests.sh runs every integration test a second time with
 * TSCNI_TEST_RESIDENT=1): each test "host" namespace gets its own `cnitool daemon`, and the calls made through
 * that host go to it. The server serves only callers in its own network and mount namespaces, so a host in this
 * pass has one persistent mount namespace (testing/pinned-mount.ts), and its commands run through
 * `nsenter --net --mount` into both. The drop-in tests run podman and containerd in such a namespace too, so the
 * plugin calls they make are served. Each server's count of served calls is appended to TSCNI_TEST_RESIDENT_LOG.
 * @module
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { pinMountNamespace } from "./pinned-mount.js";

/** Whether this is the resident pass. */
export const RESIDENT_PASS = process.env["TSCNI_TEST_RESIDENT"] === "1";

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
  const { mountNs, unpin } = pinMountNamespace(netnsName, dir);
  const socket = path.join(dir, "plugins.sock");
  const log = path.join(dir, "daemon.log");
  // Started through a shell that exits at once: the server is nobody's child here (this process, blocked in a
  // synchronous cleanup, could not reap it).
  const started = spawnSync(
    "sh",
    [
      "-c",
      'nsenter --net="$1" --mount="$2" -- "$3" daemon --warm-up 20 --socket "$4" </dev/null >>"$5" 2>&1 & echo $!',
      "sh",
      `/run/netns/${netnsName}`,
      mountNs,
      cnitool,
      socket,
      log,
    ],
    { encoding: "utf8" },
  );
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
      const status = spawnSync(
        "nsenter",
        [`--net=/run/netns/${netnsName}`, `--mount=${mountNs}`, "--", cnitool, "daemon", "status", "--socket", socket],
        { encoding: "utf8" },
      );
      const served = status.status === 0 ? (JSON.parse(status.stdout) as { served: number }).served : -1;
      try {
        process.kill(pid, "SIGTERM");
        // Its socket goes when the calls under way have finished (waiting for the pid would wait for init to reap it).
        spawnSync("sh", ["-c", 'for i in $(seq 3000); do [ -S "$1" ] || exit 0; sleep 0.01; done', "sh", socket]);
      } catch {
        /* already gone */
      }
      // A server that could not be asked, or that caught an error no request should leak, is reported as failed.
      const text = readLog(log);
      const failed = served < 0 || /uncaught|unhandled/.test(text);
      const summary = process.env["TSCNI_TEST_RESIDENT_LOG"];
      if (summary) appendFileSync(summary, `${netnsName} ${failed ? -1 : served}${failed ? ` ${text}` : ""}\n`);
      unpin();
    },
  };
}

const readLog = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").replace(/\s+/g, " ").slice(-300) : "");
