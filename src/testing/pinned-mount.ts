/**
 * A persistent mount namespace for a test "host" network namespace. `ip netns exec` makes a fresh mount
 * namespace for every command, so two commands run through it never share one; servers that serve only callers
 * in their own network and mount namespaces (the resident server, the dhcp daemon) and their callers are run
 * through `nsenter --net --mount` into the host's network namespace and a mount namespace pinned here instead.
 * The pinned namespace is a copy of the test's, slave to it (its later mounts, such as new /run/netns entries,
 * reach it; none of its own go back), with /sys remounted from within the host's network namespace, as
 * `ip netns exec` does, and the cgroup mounts kept (podman's and containerd's runc need them).
 * @module
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Where the hosts' mount namespaces are pinned: a private mount, as pinning one needs. */
const MOUNT_DIR = "/run/tscni-test-mnt";

function ensureMountDir(): void {
  mkdirSync(MOUNT_DIR, { recursive: true });
  const mounted = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((l) => l.split(" ")[4] === MOUNT_DIR);
  if (!mounted) {
    execFileSync("mount", ["--bind", MOUNT_DIR, MOUNT_DIR]);
    execFileSync("mount", ["--make-private", MOUNT_DIR]);
  }
}

/** A pinned mount namespace: its path (for nsenter --mount) and its removal. */
export interface PinnedMount {
  mountNs: string;
  unpin(): void;
}

/** Pins a mount namespace for the network namespace `netnsName` (see the module comment); `dir` is scratch space. */
export function pinMountNamespace(netnsName: string, dir: string): PinnedMount {
  ensureMountDir();
  const mountNs = path.join(MOUNT_DIR, netnsName);
  writeFileSync(mountNs, "");
  const keep = path.join(dir, "cgroup-keep");
  mkdirSync(keep, { recursive: true });
  const pin = spawnSync(
    "unshare",
    [
      `--mount=${mountNs}`,
      "--propagation",
      "slave",
      "nsenter",
      `--net=/run/netns/${netnsName}`,
      "--",
      "sh",
      "-c",
      'mount --rbind /sys/fs/cgroup "$1" && mount -t sysfs sysfs /sys && mount --move "$1" /sys/fs/cgroup',
      "sh",
      keep,
    ],
    { encoding: "utf8" },
  );
  if (pin.status !== 0) {
    rmSync(mountNs, { force: true });
    throw new Error(`cannot pin a mount namespace for ${netnsName}: ${pin.stderr}`);
  }
  return {
    mountNs,
    unpin() {
      spawnSync("umount", [mountNs]);
      rmSync(mountNs, { force: true });
    },
  };
}
