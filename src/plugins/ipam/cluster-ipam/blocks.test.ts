import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCIDR, parseIP, tryParseIP } from "#ip/ip.js";
import { ipFromBigInt, ipToBigInt } from "#ip/ip-math.js";
import { parseRangeSet } from "../ranges.js";
import {
  addressKey,
  addressOfKey,
  type Block,
  BlockPool,
  blockAddressKeyRange,
  blockContaining,
  blockKey,
  excludedFrom,
  nodeHash,
  parseBlockKey,
} from "./blocks.js";

const pool = (ranges: Array<Record<string, string>>, blockSize: number, exclude: string[] = []) =>
  new BlockPool(
    parseRangeSet(ranges, "ipam.ranges[0]"),
    blockSize,
    excludedFrom(
      exclude.map((t, i) => ({
        cidr: t.includes("/") ? parseCIDR(t) : { ip: parseIP(t), prefix: parseIP(t).family === 4 ? 32 : 128, text: t },
        source: `ipam.exclude[${i}]`,
      })),
    ),
  );
const texts = (p: BlockPool, b: Block) => p.addresses(b).map((n) => ipFromBigInt(n, p.family)!.text);
const blocks = (p: BlockPool) => [...p.blocksFrom(0n)].map((b) => b.cidr.text);

describe("blocks of a pool", () => {
  test("an IPv4 /24 in /26 blocks: four blocks; the gateway and broadcast are never handed out", () => {
    const p = pool([{ subnet: "10.1.0.0/24" }], 26);
    assert.equal(p.blockCount, 4n);
    assert.deepEqual(blocks(p), ["10.1.0.0/26", "10.1.0.64/26", "10.1.0.128/26", "10.1.0.192/26"]);
    const first = texts(p, p.blockAt(0n));
    assert.equal(first[0], "10.1.0.2"); // .0 is the network (before rangeStart), .1 the gateway
    assert.equal(first.length, 62);
    const last = texts(p, p.blockAt(3n));
    assert.equal(last.at(-1), "10.1.0.254"); // .255 is broadcast (after rangeEnd)
    assert.equal(last.length, 63);
    assert.equal(p.size(), 253n); // .1-.254 minus the gateway
  });

  test("rangeStart and rangeEnd inside blocks: only the blocks they touch, only their addresses", () => {
    const p = pool([{ subnet: "10.2.0.0/24", rangeStart: "10.2.0.70", rangeEnd: "10.2.0.130" }], 26);
    assert.deepEqual(blocks(p), ["10.2.0.64/26", "10.2.0.128/26"]);
    const a = texts(p, p.blockAt(0n));
    assert.deepEqual([a[0], a.at(-1), a.length], ["10.2.0.70", "10.2.0.127", 58]);
    assert.deepEqual(texts(p, p.blockAt(1n)), ["10.2.0.128", "10.2.0.129", "10.2.0.130"]);
    assert.equal(p.size(), 61n);
  });

  test("exclusions (CIDRs and single addresses) are left out of blocks, the size and requests", () => {
    const p = pool([{ subnet: "10.3.0.0/24" }], 26, ["10.3.0.0/28", "10.3.0.20", "10.3.0.8/29"]);
    const a = texts(p, p.blockAt(0n));
    assert.equal(a[0], "10.3.0.16");
    assert.ok(!a.includes("10.3.0.20"));
    // .1-.254, minus .1-.15 (the /28 inside the range; the /29 and the gateway .1 lie in it, counted once) and .20
    assert.equal(p.size(), 254n - 15n - 1n);
    assert.equal(p.refusal(parseIP("10.3.0.20")), "10.3.0.20 is excluded (ipam.exclude[1])");
    assert.equal(p.refusal(parseIP("10.3.0.1")), "10.3.0.1 is excluded (ipam.exclude[0])");
    assert.equal(pool([{ subnet: "10.3.0.0/24" }], 26).refusal(parseIP("10.3.0.1")), "10.3.0.1 is excluded (the gateway of ipam.ranges[0][0])");
    assert.equal(p.refusal(parseIP("10.4.0.1")), "10.4.0.1 is not in range set 10.3.0.1-10.3.0.254");
    assert.equal(p.refusal(parseIP("fd00::1")), "fd00::1 is not an IPv4 address");
    assert.equal(p.refusal(parseIP("10.3.0.99")), undefined);
  });

  test("a subnet smaller than the block size is one block (a block never spans beyond its subnet)", () => {
    const p = pool([{ subnet: "10.4.0.16/28" }], 24);
    assert.deepEqual(blocks(p), ["10.4.0.16/28"]);
    assert.equal(p.blockOf(parseIP("10.4.0.20"))!.cidr.text, "10.4.0.16/28");
  });

  test("several ranges: blocks range by range, a block two ranges share counted once", () => {
    const p = pool(
      [
        { subnet: "10.5.0.0/24", rangeStart: "10.5.0.10", rangeEnd: "10.5.0.20" },
        { subnet: "10.5.0.0/24", rangeStart: "10.5.0.30", rangeEnd: "10.5.0.70", gateway: "10.5.0.1" },
      ],
      26,
    );
    assert.deepEqual(blocks(p), ["10.5.0.0/26", "10.5.0.64/26"]);
    const a = texts(p, p.blockAt(0n));
    assert.equal(a.length, 11 + 34); // .10-.20 and .30-.63
    assert.ok(!a.includes("10.5.0.25"));
  });

  test("IPv6: /122 blocks of a /64 (2^58 of them, walked lazily from any start)", () => {
    const p = pool([{ subnet: "fd00:1::/64" }], 122);
    assert.equal(p.blockCount, 2n ** 58n);
    const start = nodeHash("node-a") % p.blockCount;
    const walk = p.blocksFrom(start);
    const b = walk.next().value as Block;
    assert.equal(b.cidr.prefix, 122);
    assert.equal(b.first, ipToBigInt(parseIP("fd00:1::")) + start * 64n);
    assert.equal(p.addresses(b).length, start === 0n ? 63 : 64); // the first block holds the gateway fd00:1::1
    assert.equal(texts(p, p.blockAt(0n))[0], "fd00:1::2"); // ::0 is a valid IPv6 address, but before rangeStart (::1, the gateway)
    assert.equal(p.blockOf(parseIP("fd00:1::1:0:0:7f"))!.cidr.text, "fd00:1::1:0:0:40/122");
  });

  test("the walk wraps around and yields every block once", () => {
    const p = pool([{ subnet: "10.6.0.0/24" }], 26);
    assert.deepEqual(
      [...p.blocksFrom(2n)].map((b) => b.cidr.text),
      ["10.6.0.128/26", "10.6.0.192/26", "10.6.0.0/26", "10.6.0.64/26"],
    );
  });

  test("hasBlock: a block of this pool at its prefix", () => {
    const p = pool([{ subnet: "10.7.0.0/24" }], 26);
    assert.ok(p.hasBlock(blockContaining(parseIP("10.7.0.70"), 26)));
    assert.ok(!p.hasBlock(blockContaining(parseIP("10.7.0.70"), 27)));
    assert.ok(!p.hasBlock(blockContaining(parseIP("10.8.0.70"), 26)));
  });
});

describe("keys", () => {
  test("address keys are fixed-width hex per family, and read back", () => {
    assert.equal(addressKey(parseIP("10.22.0.5")), "v4/0a160005");
    assert.equal(addressKey(parseIP("fd00::1")), "v6/fd000000000000000000000000000001");
    assert.equal(addressOfKey("v4/0a160005")!.text, "10.22.0.5");
    assert.equal(addressOfKey("v6/fd000000000000000000000000000001")!.text, "fd00::1");
    assert.equal(addressOfKey("v4/0a1600051"), undefined);
    assert.equal(addressOfKey("v4/zz"), undefined);
  });

  test("a block's addresses are one key range, which sorts exactly its keys", () => {
    const b = blockContaining(parseIP("10.22.0.70"), 26);
    const r = blockAddressKeyRange(b);
    assert.deepEqual(r, { start: "v4/0a160040", end: "v4/0a16007f\u0000" });
    const inside = (k: string) => k >= r.start && k < r.end;
    assert.ok(inside(addressKey(parseIP("10.22.0.64"))) && inside(addressKey(parseIP("10.22.0.127"))));
    assert.ok(!inside(addressKey(parseIP("10.22.0.63"))) && !inside(addressKey(parseIP("10.22.0.128"))));
    const v6 = blockAddressKeyRange(blockContaining(parseIP("fd00::ffff"), 122));
    assert.ok(!(addressKey(parseIP("fd00::ffff")) < v6.start) && addressKey(parseIP("fd00::ffff")) < v6.end);
  });

  test("block keys name the CIDR and parse back only when aligned", () => {
    const b = blockContaining(parseIP("fd00::7f"), 122);
    assert.equal(blockKey(b), "fd00::40-122");
    assert.equal(parseBlockKey("fd00::40-122", tryParseIP)!.cidr.text, "fd00::40/122");
    assert.equal(parseBlockKey("10.0.0.64-26", tryParseIP)!.last, ipToBigInt(parseIP("10.0.0.127")));
    assert.equal(parseBlockKey("10.0.0.65-26", tryParseIP), undefined);
    assert.equal(parseBlockKey("10.0.0.64-33", tryParseIP), undefined);
    assert.equal(parseBlockKey("nonsense", tryParseIP), undefined);
  });

  test("node hashes are stable and differ between nodes", () => {
    assert.equal(nodeHash("node-a"), nodeHash("node-a"));
    assert.notEqual(nodeHash("node-a"), nodeHash("node-b"));
    assert.equal(nodeHash(""), 0x811c9dc5n);
  });
});
