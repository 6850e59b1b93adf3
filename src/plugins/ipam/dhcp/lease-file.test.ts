/**
 * Lease files: a record of either family survives the round trip through its file (infinite times, bytes, the
 * options map, the DUID), a DHCPv4 file is written as before DHCPv6 existed (no family), an attachment's two
 * leases have two files, saves replace atomically (no temp file stays), files that do not decode are reported and
 * left alone, and a file whose name does not match its lease is refused.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { hexOf } from "#sys/bytes.js";
import { useTempDirs } from "#testing/temp.js";
import { decodeLeaseRecord, encodeLeaseRecord, type LeaseRecord, type LeaseRecord6, LeaseStore, leaseFileName } from "./lease-file.js";

const tempDir = useTempDirs("tscni-dhcp-leasefile-");

const record = (id = "ctr/net/eth0", expiresAt = 1_900_000_000_000): LeaseRecord => ({
  family: "ipv4",
  clientID: id,
  containerID: "ctr",
  network: "net",
  ifName: "eth0",
  netns: "/run/netns/ctr",
  send: {
    clientIdOption: Uint8Array.from([0, ...Buffer.from(id)]),
    options: new Map([
      [12, Uint8Array.from(Buffer.from("pod"))],
      [224, new Uint8Array()],
    ]),
    requestList: [1, 3, 121],
  },
  binding: {
    ack: Uint8Array.of(2, 1, 6, 0, 255),
    address: "10.9.0.10",
    server: "10.9.0.1",
    mac: Uint8Array.of(2, 0, 0, 0, 0, 1),
    boundAt: 1_800_000_000_000,
    renewAt: 1_800_000_030_000,
    rebindAt: 1_800_000_090_000,
    expiresAt,
  },
});

const serverId = Uint8Array.of(0, 1, 0, 1, 0x32, 0x9a, 0xab, 0x57, 2, 0, 0, 0, 0, 0xfe);
const record6 = (id = "ctr/net/eth0", fqdn = true): LeaseRecord6 => ({
  family: "ipv6",
  clientID: id,
  containerID: "ctr",
  network: "net",
  ifName: "eth0",
  netns: "/run/netns/ctr",
  send: {
    duid: Uint8Array.of(0, 3, 0, 1, 2, 0, 0, 0, 0, 1),
    iaid: 0xf2bb_5a52,
    oro: [23, 24],
    ...(fqdn ? { fqdn: Uint8Array.of(0, 3, 0x70, 0x6f, 0x64) } : {}),
  },
  binding: {
    reply: Uint8Array.of(7, 1, 2, 3),
    address: "fd00:9::10",
    serverId,
    server: hexOf(serverId, ":"),
    boundAt: 1_800_000_000_000,
    renewAt: 1_800_000_030_000,
    rebindAt: Infinity,
    expiresAt: Infinity,
  },
});

describe("lease files", () => {
  test("a record round-trips, infinite times as null", () => {
    for (const r of [record(), record("a/b/c", Infinity), record6(), record6("x/y/z", false)]) {
      const text = encodeLeaseRecord(r);
      assert.deepEqual(decodeLeaseRecord(text), r);
    }
    assert.match(encodeLeaseRecord(record("x", Infinity)), /"expiresAt": null/);
  });

  test("a DHCPv4 record names no family (a daemon without DHCPv6 reads it); a DHCPv6 record does, with its DUID", () => {
    const v4 = JSON.parse(encodeLeaseRecord(record())) as Record<string, unknown>;
    assert.deepEqual(Object.keys(v4), ["format", "clientID", "containerID", "network", "ifName", "netns", "send", "binding"]);
    const v6 = JSON.parse(encodeLeaseRecord(record6())) as Record<string, any>;
    assert.equal(v6["family"], "ipv6");
    assert.deepEqual(v6["send"], { duid: "AAMAAQIAAAAAAQ==", iaid: 0xf2bb_5a52, oro: [23, 24], fqdn: "AANwb2Q=" });
    assert.deepEqual(Object.keys(v6["binding"]), ["address", "serverId", "reply", "boundAt", "renewAt", "rebindAt", "expiresAt"]);
  });

  test("an attachment's DHCPv4 and DHCPv6 leases have a file each; removing one leaves the other", async () => {
    const dir = tempDir();
    const store = new LeaseStore(dir);
    await store.save(record());
    await store.save(record6());
    assert.deepEqual(readdirSync(dir).sort(), [leaseFileName("ctr/net/eth0"), leaseFileName("ctr/net/eth0", "ipv6")].sort());
    assert.match(leaseFileName("ctr/net/eth0", "ipv6"), /^lease6-[0-9a-f]{32}\.json$/);
    const { records } = await store.loadAll();
    assert.deepEqual(records.map((r) => r.family).sort(), ["ipv4", "ipv6"]);
    await store.remove("ctr/net/eth0", "ipv4");
    assert.deepEqual(readdirSync(dir), [leaseFileName("ctr/net/eth0", "ipv6")]);
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
    assert.deepEqual(records.map((r) => [r.clientID, r.netns]).sort(), [
      ["one/net/eth0", "/run/netns/ctr"],
      ["two/net/eth0", "/run/netns/changed"],
    ]);
    await store.remove("one/net/eth0");
    await store.remove("never/saved/x");
    assert.deepEqual(readdirSync(dir), [leaseFileName("two/net/eth0")]);
  });

  test("files that do not decode are reported; torn or empty ones (what a crash leaves) are removed, others left; other files are ignored", async () => {
    const dir = tempDir();
    const store = new LeaseStore(dir);
    await store.save(record());
    const bad = path.join(dir, leaseFileName("bad/net/eth0"));
    writeFileSync(bad, "{not json");
    const wrong = path.join(dir, leaseFileName("elsewhere/net/eth0"));
    writeFileSync(wrong, encodeLeaseRecord(record("moved/net/eth0")));
    const future = path.join(dir, leaseFileName("future/net/eth0"));
    writeFileSync(future, JSON.stringify({ format: 2 }));
    const empty = path.join(dir, leaseFileName("empty/net/eth0", "ipv6"));
    writeFileSync(empty, "");
    writeFileSync(path.join(dir, "lock"), "");
    const { records, problems } = await store.loadAll();
    assert.deepEqual(
      records.map((r) => r.clientID),
      ["ctr/net/eth0"],
    );
    assert.equal(problems.length, 4);
    assert.ok(problems.some((p) => p.startsWith(bad) && /torn .*JSON.*: removed$/.test(p)));
    assert.ok(problems.includes(`${empty}: empty: removed`));
    assert.ok(problems.some((p) => p.startsWith(wrong) && /holds the ipv4 lease of moved\/net\/eth0/.test(p)));
    assert.ok(problems.some((p) => p.startsWith(future) && /format 2 is not 1/.test(p)));
    assert.ok(!existsSync(bad) && !existsSync(empty), "nobody can read them: removed");
    assert.ok(readFileSync(future, "utf8") && readFileSync(wrong, "utf8"), "well-formed ones left alone");
  });

  test("fields of the wrong kind are named", () => {
    const text = JSON.parse(encodeLeaseRecord(record())) as Record<string, any>;
    text["binding"]["renewAt"] = "soon";
    assert.throws(() => decodeLeaseRecord(JSON.stringify(text)), /binding\.renewAt is not a time/);
    text["binding"]["renewAt"] = 1;
    text["send"]["requestList"] = [1, 300];
    assert.throws(() => decodeLeaseRecord(JSON.stringify(text)), /send\.requestList/);
    const six = JSON.parse(encodeLeaseRecord(record6())) as Record<string, any>;
    six["send"]["iaid"] = -1;
    assert.throws(() => decodeLeaseRecord(JSON.stringify(six)), /send\.iaid is not a 32-bit IAID/);
    six["send"]["iaid"] = 1;
    six["family"] = "ipv5";
    assert.throws(() => decodeLeaseRecord(JSON.stringify(six)), /family "ipv5" is neither/);
  });
});
