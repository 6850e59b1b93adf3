import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { NetNS } from "./netns.js";
import { probeSysctls } from "./sysctl.js";

describe("probeSysctls", () => {
  test("whole values (not dash's first byte), missing and write-only files", async () => {
    const somaxconn = readFileSync("/proc/sys/net/core/somaxconn", "utf8").trim();
    assert.ok(somaxconn.length > 1, "a multi-digit value");
    const [value, missing, writeOnly] = await probeSysctls(NetNS.host, [
      "/proc/sys/net/core/somaxconn",
      "/proc/sys/net/no/such/key",
      "/proc/sys/net/ipv4/route/flush",
    ]);
    assert.deepEqual(value, { exists: true, value: somaxconn });
    assert.deepEqual(missing, { exists: false });
    assert.deepEqual(writeOnly, { exists: true });
    assert.deepEqual(await probeSysctls(NetNS.host, []), []);
  });
});

test("readSysctls and writeSysctls see whole multi-digit values in another namespace", {
  skip: process.getuid?.() === 0 ? undefined : "needs root",
}, async () => {
  const { execFileSync } = await import("node:child_process");
  const { NetNS } = await import("./netns.js");
  const { readSysctls, writeSysctls, sysctlPath } = await import("./sysctl.js");
  const name = `tscni-sysctl-${process.pid}`;
  execFileSync("ip", ["netns", "add", name]);
  try {
    const ns = await NetNS.open(`/run/netns/${name}`);
    const path = sysctlPath("net", "ipv4", "ip_local_port_range");
    await writeSysctls(ns, [[sysctlPath("net", "core", "somaxconn"), "4096"]]);
    const [somaxconn, range] = await readSysctls(ns, [sysctlPath("net", "core", "somaxconn"), path]);
    assert.equal(somaxconn, "4096");
    assert.match(range ?? "", /^\d+\s+\d+$/);
    // A value whose first character matches the current one is still written.
    await writeSysctls(ns, [[sysctlPath("net", "core", "somaxconn"), "4"]]);
    assert.equal((await readSysctls(ns, [sysctlPath("net", "core", "somaxconn")]))[0], "4");
  } finally {
    execFileSync("ip", ["netns", "delete", name]);
  }
});
