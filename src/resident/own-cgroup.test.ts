import assert from "node:assert/strict";
import { test } from "node:test";
import { hierarchies, ownCgroupName, transientScopeCall } from "./own-cgroup.js";

test("ownCgroupName: the node's socket by name, another by a hash launcher.c computes alike (FNV-1a)", () => {
  assert.equal(ownCgroupName("/run/tscni/plugins.sock"), "tscni-resident");
  assert.equal(ownCgroupName("/tmp/a"), "tscni-resident-f2746ce7");
  assert.match(ownCgroupName("/run/other/plugins.sock"), /^tscni-resident-[0-9a-f]{8}$/);
});

test("hierarchies: every hierarchy this process is in, mounted from its top, v1 by its controllers and v2", () => {
  const cgroup = ["12:pids:/a", "4:memory:/process_api/x", "3:cpu,cpuacct:/", "1:name=systemd:/init.scope", "0::/", "7:blkio:/b"].join("\n");
  const mountinfo = [
    "25 1 0:22 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs ro,mode=755",
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw",
    "27 25 0:24 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd",
    "28 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
    "29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct",
    "30 25 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids",
    "31 25 0:28 /sub /mnt/blkio rw - cgroup cgroup rw,blkio",
  ].join("\n");
  assert.deepEqual(
    hierarchies(cgroup, mountinfo),
    [
      { mount: "/sys/fs/cgroup/pids", kind: "pids", current: "/a" },
      { mount: "/sys/fs/cgroup/memory", kind: "memory", current: "/process_api/x" },
      { mount: "/sys/fs/cgroup/cpu,cpuacct", kind: "cpu,cpuacct", current: "/" },
      { mount: "/sys/fs/cgroup/systemd", kind: "name=systemd", current: "/init.scope" },
      { mount: "/sys/fs/cgroup/unified", kind: "cgroup2", current: "/" },
    ],
    "blkio is mounted from a subtree only: left out",
  );
});

test("transientScopeCall: StartTransientUnit of a scope holding the server's pid, in system.slice, collected when it ends", () => {
  assert.deepEqual(transientScopeCall("tscni-resident-7.scope", 7, "tscni resident server (/run/tscni/plugins.sock)"), [
    "call",
    "org.freedesktop.systemd1",
    "/org/freedesktop/systemd1",
    "org.freedesktop.systemd1.Manager",
    "StartTransientUnit",
    "ssa(sv)a(sa(sv))",
    "tscni-resident-7.scope",
    "fail",
    "4",
    "PIDs",
    "au",
    "1",
    "7",
    "Description",
    "s",
    "tscni resident server (/run/tscni/plugins.sock)",
    "Slice",
    "s",
    "system.slice",
    "CollectMode",
    "s",
    "inactive-or-failed",
    "0",
  ]);
});
