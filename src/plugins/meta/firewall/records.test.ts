import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { listRecords, readRecord, recordedNetworks, removeRecord, writeRecord } from "./records.js";

describe("firewall attachment records", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-fwrec-"));
  test.after(() => rmSync(dir, { recursive: true, force: true }));

  test("write, read, list, remove; one file per attachment named <containerID>:<ifName>", () => {
    const a = { containerID: "ctr-a", ifName: "eth0", backend: "iptables" as const, addresses: ["10.0.0.2/24"] };
    const b = { containerID: "ctr-a", ifName: "eth1", backend: "iptables" as const, addresses: ["10.0.1.2/24"] };
    writeRecord(dir, "net1", a);
    writeRecord(dir, "net1", b);
    writeRecord(dir, "net1", { ...a, addresses: ["10.0.0.3/24"] });
    assert.deepEqual(readdirSync(path.join(dir, "net1")).sort(), ["ctr-a:eth0", "ctr-a:eth1"]);
    assert.deepEqual(readRecord(dir, "net1", "ctr-a", "eth0")!.addresses, ["10.0.0.3/24"]);
    assert.equal(readRecord(dir, "net1", "ctr-b", "eth0"), undefined);
    writeFileSync(path.join(dir, "net1", "junk:x"), "not json");
    assert.deepEqual(
      listRecords(dir, "net1")
        .map((r) => r.ifName)
        .sort(),
      ["eth0", "eth1"],
    );
    assert.deepEqual(recordedNetworks(dir), ["net1"]);
    removeRecord(dir, "net1", "ctr-a", "eth0");
    removeRecord(dir, "net1", "ctr-a", "eth0");
    assert.deepEqual(
      listRecords(dir, "net1").map((r) => r.ifName),
      ["eth1"],
    );
    assert.deepEqual(listRecords(dir, "nonet"), []);
    assert.deepEqual(recordedNetworks(path.join(dir, "missing")), []);
    rmSync(path.join(dir, "net1", "junk:x"));
    removeRecord(dir, "net1", "ctr-a", "eth1");
    assert.equal(existsSync(path.join(dir, "net1")), false, "the network's directory goes with its last record");
    writeRecord(dir, "net1", a);
    assert.deepEqual(
      listRecords(dir, "net1").map((r) => r.ifName),
      ["eth0"],
    );
  });
});
