import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { parseIP } from "#ip/ip.js";
import { IPAllocator, RangeIterator } from "./allocator.js";
import { freeInRangeSet, parseRangeSet, type RangeSet } from "./config.js";
import { DiskStore } from "./store.js";

const set = (...ranges: object[]): RangeSet => parseRangeSet(ranges, "ipam.ranges[0]");

function walk(s: RangeSet, after?: string): string[] {
  const iter = new RangeIterator(s, after ? parseIP(after) : undefined);
  const out: string[] = [];
  for (let c = iter.next(); c; c = iter.next()) out.push(c.ip.text);
  return out;
}

describe("freeInRangeSet (what STATUS counts)", () => {
  const ips = (...texts: string[]) => texts.map(parseIP);
  test("every range of the set without its gateway, less the taken addresses inside; others are ignored", () => {
    const s = set(
      { subnet: "10.0.0.0/29" }, // 10.0.0.1-6, gateway .1: 5
      { subnet: "10.0.1.0/24", rangeStart: "10.0.1.10", rangeEnd: "10.0.1.11" }, // gateway .1 outside: 2
    );
    assert.equal(freeInRangeSet(s, []), 7n);
    assert.equal(freeInRangeSet(s, ips("10.0.0.2", "10.0.1.11", "10.0.9.9", "10.0.1.1", "fd00::2")), 5n);
    assert.equal(freeInRangeSet(s, ips("10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.1.10", "10.0.1.11")), 0n);
  });
  test("IPv6 ranges of any size", () => {
    assert.equal(freeInRangeSet(set({ subnet: "fd00::/64" }), ips("fd00::2")), 2n ** 64n - 3n);
    assert.equal(freeInRangeSet(set({ subnet: "fd00::/126" }), ips("fd00::2", "fd00::3")), 0n);
  });
});

describe("RangeIterator", () => {
  test("walks a range once from rangeStart, skipping the gateway", () => {
    assert.deepEqual(walk(set({ subnet: "10.0.0.0/29" })), ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]);
  });
  test("starts after the last reserved IP and wraps across the ranges of the set", () => {
    const s = set(
      { subnet: "10.0.0.0/24", rangeStart: "10.0.0.10", rangeEnd: "10.0.0.12" },
      { subnet: "10.0.1.0/24", rangeStart: "10.0.1.10", rangeEnd: "10.0.1.11" },
    );
    assert.deepEqual(walk(s, "10.0.0.11"), ["10.0.0.12", "10.0.1.10", "10.0.1.11", "10.0.0.10", "10.0.0.11"]);
    assert.deepEqual(walk(s, "10.0.1.11"), ["10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.1.10", "10.0.1.11"]);
  });
  test("a last reserved IP outside the set restarts at rangeStart", () => {
    assert.deepEqual(walk(set({ subnet: "10.0.0.0/30" }), "192.168.0.1"), ["10.0.0.2"]);
  });
  test("a gateway at rangeStart or inside the range is skipped; IPv6 works the same", () => {
    assert.deepEqual(walk(set({ subnet: "10.0.0.0/29", gateway: "10.0.0.4" })), ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.5", "10.0.0.6"]);
    assert.deepEqual(walk(set({ subnet: "fd00::/126" })), ["fd00::2", "fd00::3"]);
  });
});

describe("IPAllocator with a disk store", () => {
  let dataDir: string;
  let store: DiskStore;
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), "tscni-alloc-"));
    store = DiskStore.open({ network: "net", dataDir });
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  const file = (name: string) => path.join(dataDir, "net", name);

  test("allocates in order and records the last reserved IP", async () => {
    const a = new IPAllocator(set({ subnet: "10.0.0.0/24" }), store, 0);
    assert.deepEqual(await a.get("c1", "eth0"), { address: "10.0.0.2/24", gateway: "10.0.0.1" });
    assert.deepEqual(await a.get("c2", "eth0"), { address: "10.0.0.3/24", gateway: "10.0.0.1" });
    assert.equal(readFileSync(file("last_reserved_ip.0"), "utf8"), "10.0.0.3");
    assert.equal(readFileSync(file("10.0.0.2"), "utf8"), "c1\r\neth0");
  });
  test("round robin: a released address is not reused until the range has been walked", async () => {
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 0);
    assert.equal((await a.get("c1", "eth0")).address, "10.0.0.2/29");
    await a.release("c1", "eth0");
    assert.equal((await a.get("c2", "eth0")).address, "10.0.0.3/29");
    for (const id of ["c3", "c4", "c5"]) await a.get(id, "eth0"); // .4 .5 .6
    assert.equal((await a.get("c6", "eth0")).address, "10.0.0.2/29", "wraps to the freed address");
  });
  test("exhaustion names the range set", async () => {
    const a = new IPAllocator(set({ subnet: "10.0.0.0/30" }), store, 0);
    await a.get("c1", "eth0");
    await assert.rejects(a.get("c2", "eth0"), { code: 999, msg: "no IP addresses available in range set: 10.0.0.1-10.0.0.2" });
  });
  test("the same attachment cannot allocate twice from one set", async () => {
    const a = new IPAllocator(set({ subnet: "10.0.0.0/24" }), store, 0);
    await a.get("c1", "eth0");
    await assert.rejects(a.get("c1", "eth0"), { msg: "10.0.0.2 has been allocated to c1, duplicate allocation is not allowed" });
    assert.equal((await a.get("c1", "eth1")).address, "10.0.0.3/24", "another interface is another attachment");
  });
  test("requested IPs: taken, gateway, and no duplicate check (as Go)", async () => {
    const a = new IPAllocator(set({ subnet: "10.0.0.0/24" }), store, 0);
    assert.equal((await a.get("c1", "eth0", parseIP("10.0.0.50"))).address, "10.0.0.50/24");
    await assert.rejects(a.get("c2", "eth0", parseIP("10.0.0.50")), {
      msg: "requested IP address 10.0.0.50 is not available in range set 10.0.0.1-10.0.0.254",
    });
    await assert.rejects(a.get("c2", "eth0", parseIP("10.0.0.1")), { msg: "requested ip 10.0.0.1 is subnet's gateway" });
    assert.equal((await a.get("c1", "eth0", parseIP("10.0.0.51"))).address, "10.0.0.51/24");
    assert.equal(readFileSync(file("last_reserved_ip.0"), "utf8"), "10.0.0.51");
  });
  test("release frees (id, ifname) only, then falls back to old id-only files", async () => {
    const a = new IPAllocator(set({ subnet: "10.0.0.0/24" }), store, 0);
    await a.get("c1", "eth0");
    await a.get("c1", "eth1");
    writeFileSync(file("10.0.0.99"), "c1"); // written by a pre-0.7 plugin
    await a.release("c1", "eth0");
    assert.ok(!existsSync(file("10.0.0.2")));
    assert.ok(existsSync(file("10.0.0.3")));
    assert.ok(existsSync(file("10.0.0.99")), "id-only files stay while (id, ifname) files matched");
    await a.release("c1", "eth2");
    assert.ok(!existsSync(file("10.0.0.99")));
    assert.ok(existsSync(file("10.0.0.3")));
    await a.release("c1", "eth2"); // idempotent
  });
  test("last_reserved_ip is per range set index", async () => {
    const v4 = new IPAllocator(set({ subnet: "10.0.0.0/24" }), store, 0);
    const v6 = new IPAllocator(parseRangeSet([{ subnet: "fd00::/64" }], "x"), store, 1);
    await v4.get("c1", "eth0");
    await v6.get("c1", "eth0");
    assert.equal(readFileSync(file("last_reserved_ip.0"), "utf8"), "10.0.0.2");
    assert.equal(readFileSync(file("last_reserved_ip.1"), "utf8"), "fd00::2");
    assert.equal(readFileSync(file("fd00::2"), "utf8"), "c1\r\neth0");
  });
  test("a garbled last_reserved_ip restarts at rangeStart", async () => {
    writeFileSync(file("last_reserved_ip.0"), "10.0.0.7\n"); // Go does not trim either
    const a = new IPAllocator(set({ subnet: "10.0.0.0/24" }), store, 0);
    assert.equal((await a.get("c1", "eth0")).address, "10.0.0.2/24");
  });
});
