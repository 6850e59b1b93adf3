/**
 * Lease files: a record survives the round trip through its file (infinite times, bytes, the options map),
 * saves replace atomically (no temp file stays), files that do not decode are reported and left alone, and
 * a file whose name does not match its lease is refused.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { useTempDirs } from "../../../testing/temp.js";
import { decodeLeaseRecord, encodeLeaseRecord, leaseFileName, LeaseStore, type LeaseRecord } from "./lease-file.js";

const tempDir = useTempDirs("tscni-dhcp-leasefile-");

const record = (id = "ctr/net/eth0", expiresAt = 1_900_000_000_000): LeaseRecord => ({
  clientID: id, containerID: "ctr", network: "net", ifName: "eth0", netns: "/run/netns/ctr",
  send: { clientIdOption: Uint8Array.from([0, ...Buffer.from(id)]), options: new Map([[12, Uint8Array.from(Buffer.from("pod"))], [224, new Uint8Array()]]), requestList: [1, 3, 121] },
  binding: {
    ack: Uint8Array.of(2, 1, 6, 0, 255), address: "10.9.0.10", server: "10.9.0.1", mac: Uint8Array.of(2, 0, 0, 0, 0, 1),
    boundAt: 1_800_000_000_000, renewAt: 1_800_000_030_000, rebindAt: 1_800_000_090_000, expiresAt,
  },
});

describe("lease files", () => {
  test("a record round-trips, infinite times as null", () => {
    for (const r of [record(), record("a/b/c", Infinity)]) {
      const text = encodeLeaseRecord(r);
      assert.deepEqual(decodeLeaseRecord(text), r);
    }
    assert.match(encodeLeaseRecord(record("x", Infinity)), /"expiresAt": null/);
  });

  test("save writes one 0600 file per lease, atomically; remove deletes it; loadAll reads them back", async () => {
    const dir = path.join(tempDir(), "leases");
    const store = new LeaseStore(dir);
    await store.init();
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    await store.save(record("one/net/eth0"));
    await store.save(record("two/net/eth0"));
    await store.save({ ...record("two/net/eth0"), netns: "/run/netns/changed" });
    assert.deepEqual(readdirSync(dir).sort(), [leaseFileName("one/net/eth0"), leaseFileName("two/net/eth0")].sort(), "no temp files left");
    assert.equal(statSync(store.fileOf("one/net/eth0")).mode & 0o777, 0o600);
    const { records, problems } = await store.loadAll();
    assert.deepEqual(problems, []);
    assert.deepEqual(records.map((r) => [r.clientID, r.netns]).sort(), [["one/net/eth0", "/run/netns/ctr"], ["two/net/eth0", "/run/netns/changed"]]);
    await store.remove("one/net/eth0");
    await store.remove("never/saved/x");
    assert.deepEqual(readdirSync(dir), [leaseFileName("two/net/eth0")]);
  });

  test("files that do not decode are reported, not removed; other files are ignored", async () => {
    const dir = tempDir();
    const store = new LeaseStore(dir);
    await store.save(record());
    const bad = path.join(dir, leaseFileName("bad/net/eth0"));
    writeFileSync(bad, "{not json");
    const wrong = path.join(dir, leaseFileName("elsewhere/net/eth0"));
    writeFileSync(wrong, encodeLeaseRecord(record("moved/net/eth0")));
    const future = path.join(dir, leaseFileName("future/net/eth0"));
    writeFileSync(future, JSON.stringify({ format: 2 }));
    writeFileSync(path.join(dir, "lock"), "");
    const { records, problems } = await store.loadAll();
    assert.deepEqual(records.map((r) => r.clientID), ["ctr/net/eth0"]);
    assert.equal(problems.length, 3);
    assert.ok(problems.some((p) => p.startsWith(bad) && /JSON/.test(p)));
    assert.ok(problems.some((p) => p.startsWith(wrong) && /holds the lease of moved\/net\/eth0/.test(p)));
    assert.ok(problems.some((p) => p.startsWith(future) && /format 2 is not 1/.test(p)));
    assert.ok(readFileSync(bad, "utf8"), "left alone");
  });

  test("fields of the wrong kind are named", () => {
    const text = JSON.parse(encodeLeaseRecord(record())) as Record<string, any>;
    text["binding"]["renewAt"] = "soon";
    assert.throws(() => decodeLeaseRecord(JSON.stringify(text)), /binding\.renewAt is not a time/);
    text["binding"]["renewAt"] = 1;
    text["send"]["requestList"] = [1, 300];
    assert.throws(() => decodeLeaseRecord(JSON.stringify(text)), /send\.requestList/);
  });
});
