import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { NetNS } from "./netns.js";
import { probeSysctls } from "./sysctl-files.js";

describe("probeSysctls", () => {
  test("whole values (not dash's first byte), missing and write-only files", async () => {
    const somaxconn = readFileSync("/proc/sys/net/core/somaxconn", "utf8").trim();
    assert.ok(somaxconn.length > 1, "a multi-digit value");
    const [value, missing, writeOnly] = await probeSysctls(NetNS.host, [
      "/proc/sys/net/core/somaxconn", "/proc/sys/net/no/such/key", "/proc/sys/net/ipv4/route/flush",
    ]);
    assert.deepEqual(value, { exists: true, value: somaxconn });
    assert.deepEqual(missing, { exists: false });
    assert.deepEqual(writeOnly, { exists: true });
    assert.deepEqual(await probeSysctls(NetNS.host, []), []);
  });
});
