import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { splitMessages } from "#net/netlink/rtnetlink.js";
import {
  decodeFilterRedirects,
  decodeQdisc,
  deleteQdiscRequest,
  dumpIngressFiltersRequest,
  dumpQdiscsRequest,
  ingressQdiscRequest,
  ingressRedirectRequest,
  rootTbfRequest,
} from "#net/netlink/rtnetlink-messages.js";
import { acceptedTbfBuffers, goUint32, kernelBufferForBurst, parsePsched, tbfParams, tbfTcWords, tcBurstFor } from "./tc.js";

/** This machine's (and every current kernel's) /proc/net/psched. */
const clock = parsePsched("000003e8 00000040 000f4240 3b9aca00\n");

describe("tbf arithmetic", () => {
  test("the scheduler clock", () => {
    assert.equal(clock.tickInUsec, 15.625);
    // Old kernels with a 1 GHz clock resolution: t2us is taken from us2t.
    assert.equal(parsePsched("00000001 00000040 3b9aca00 000003e8").tickInUsec, 1000);
    assert.throws(() => parsePsched("garbage"), /unexpected \/proc\/net\/psched/);
  });

  test("the Go plugin's numbers (observed: 1 Mbit, 80000 bits -> rate 1Mbit burst 10000b lat 25ms)", () => {
    assert.deepEqual(tbfParams(1_000_000, 80_000, clock), { rate: 125000, limit: 13125, buffer: 1_250_000, burst: 10000 });
    assert.deepEqual(tbfParams(2_000_000, 160_000, clock), { rate: 250000, limit: 26250, buffer: 1_250_000, burst: 20000 });
  });

  test("uint32 truncations happen where Go has them", () => {
    // 10001 bytes at 125001 B/s: 80007.35 us -> 80007 us -> 1250109.375 ticks -> 1250109.
    assert.equal(tbfParams(125001 * 8, 10001 * 8, clock).buffer, 1250109);
    // Odd bit counts round down to whole bytes.
    assert.deepEqual(tbfParams(1_000_007, 80_007, clock), tbfParams(1_000_000, 80_000, clock));
    // Kubernetes' "unlimited" burst (MaxInt32 bits) at 10 Mbit: the microseconds overflow nothing, the ticks fit.
    assert.equal(tbfParams(10_000_000, 2 ** 31 - 1, clock).buffer, 3355443187);
    // A huge burst at a tiny rate wraps as Go's conversion does (low 32 bits).
    assert.equal(tbfParams(8, 8 * 4_000_000_000, clock).buffer, goUint32(goUint32(4e15) * 15.625));
  });

  test("goUint32 matches Go on amd64", () => {
    assert.equal(goUint32(4294967296 + 5.9), 5);
    assert.equal(goUint32(-1), 4294967295);
    assert.equal(goUint32(Infinity), 0);
    assert.equal(goUint32(2 ** 64), 0);
  });
});

describe("tc fallback", () => {
  test("the kernel's own buffer for a byte burst (verified against this kernel)", () => {
    assert.equal(kernelBufferForBurst(125001, 10001), 1250114);
    assert.equal(kernelBufferForBurst(1250000, 268435455), 3355443187);
    assert.equal(kernelBufferForBurst(7, 3), 6696428);
    assert.equal(kernelBufferForBurst(999999, 77777), 1215266);
    assert.equal(kernelBufferForBurst(5_000_000_000, 123456789), 385802);
  });

  test("the burst given to tc lands on Go's buffer when whole bytes allow it", () => {
    const even = tbfParams(1_000_000, 80_000, clock);
    assert.equal(tcBurstFor(even, clock), 10000);
    assert.deepEqual(acceptedTbfBuffers(even, clock), [1_250_000]);
    const fast = tbfParams(1_000_000_000, 1_000_001 * 8, clock); // above ~125 Mbit a byte is less than a tick
    assert.equal(kernelBufferForBurst(fast.rate, tcBurstFor(fast, clock)), fast.buffer);
    const slow = tbfParams(125001 * 8, 10001 * 8, clock); // 1250109 cannot be hit at this rate
    const accepted = acceptedTbfBuffers(slow, clock);
    assert.equal(accepted[0], 1250109);
    assert.equal(accepted.length, 2);
    assert.ok(Math.abs(accepted[1]! - 1250109) <= 125);
  });

  test("tc words", () => {
    assert.deepEqual(tbfTcWords("veth0", tbfParams(1_000_000, 80_000, clock), clock), [
      "qdisc",
      "add",
      "dev",
      "veth0",
      "root",
      "handle",
      "1:",
      "tbf",
      "rate",
      "125000bps",
      "burst",
      "10000",
      "limit",
      "13125",
    ]);
  });
});

describe("tbf netlink request", () => {
  test("layout as Go's netlink library sends it", () => {
    const body = rootTbfRequest(7, tbfParams(1_000_000, 80_000, clock)).body;
    const v = new DataView(body.buffer);
    assert.equal(v.getInt32(4, true), 7, "ifindex");
    assert.equal(v.getUint32(8, true), 0x10000, "handle 1:");
    assert.equal(v.getUint32(12, true), 0xffffffff, "parent root");
    assert.deepEqual([...body.subarray(20, 28)], [8, 0, 1, 0, 0x74, 0x62, 0x66, 0], "TCA_KIND tbf");
    assert.equal(v.getUint16(28, true), 4 + 4 + 36, "TCA_OPTIONS length");
    assert.equal(v.getUint16(30, true), 2, "TCA_OPTIONS, not flagged nested");
    assert.equal(v.getUint16(34, true), 1, "TCA_TBF_PARMS");
    const qopt = 36;
    assert.equal(v.getUint8(qopt + 1), 0, "link layer unspecified");
    assert.equal(v.getUint32(qopt + 8, true), 125000, "rate");
    assert.equal(v.getUint32(qopt + 24, true), 13125, "limit");
    assert.equal(v.getUint32(qopt + 28, true), 1_250_000, "buffer");
    assert.equal(body.length, qopt + 36);
  });

  test("rates of 2^32 bytes/s and more add a 64-bit rate", () => {
    const body = rootTbfRequest(3, tbfParams(8 * 5_000_000_000, 8 * 1_000_000, clock)).body;
    const v = new DataView(body.buffer);
    assert.equal(v.getUint32(36 + 8, true), 5_000_000_000 % 2 ** 32);
    assert.equal(v.getUint16(72, true), 12, "TCA_TBF_RATE64 length");
    assert.equal(v.getUint16(74, true), 4, "TCA_TBF_RATE64");
    assert.equal(v.getBigUint64(76, true), 5_000_000_000n);
  });
});

/** Bytes from a hex dump (spaces ignored), as scripts/capture-rtnetlink.sh prints them. */
const hex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text.replace(/\s+/g, ""), "hex"));
/** A request as `tc` sent it: type, flags without NLM_F_REQUEST/NLM_F_ACK, and the body after the 16-byte header. */
const sent = (capture: string) => {
  const [m] = splitMessages(hex(capture));
  return { type: m!.type, flags: m!.flags & ~0x5, body: [...m!.payload] };
};
const asSent = (req: { type: number; flags: number; body: Uint8Array }) => ({ type: req.type, flags: req.flags, body: [...req.body] });

describe("traffic control over netlink: what tc (iproute2 6.1) sends, and reading what the kernel dumps", () => {
  // Captured with `CAPTURE_TOOL=tc scripts/capture-rtnetlink.sh <ns> ...` (veth wttcd0 = 3, ifb wttcb0 = 4).
  test("tc qdisc add dev <3> handle ffff: ingress; tc qdisc del dev <3> ingress", () => {
    const add =
      "30 00 00 00 24 00 05 06 00 00 00 00 00 00 00 00 00 00 00 00 03 00 00 00 00 00 ff ff f1 ff ff ff 00 00 00 00 0c 00 01 00 69 6e 67 72 65 73 73 00";
    const del =
      "30 00 00 00 25 00 05 00 00 00 00 00 00 00 00 00 00 00 00 00 03 00 00 00 00 00 ff ff f1 ff ff ff 00 00 00 00 0c 00 01 00 69 6e 67 72 65 73 73 00";
    assert.deepEqual(asSent(ingressQdiscRequest(3)), sent(add));
    assert.deepEqual(asSent(deleteQdiscRequest(3, "ingress")), sent(del));
  });

  test("tc qdisc del dev <4> root", () => {
    const del = "24 00 00 00 25 00 05 00 00 00 00 00 00 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00 ff ff ff ff 00 00 00 00";
    assert.deepEqual(asSent(deleteQdiscRequest(4, "root")), sent(del));
  });

  test("tc filter add dev <3> parent ffff: protocol all prio 1 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev <4>", () => {
    const add =
      "94 00 00 00 2c 00 05 06 00 00 00 00 00 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 00 00 ff ff 00 03 01 00 08 00 01 00 75 33 32 00 " +
      "68 00 02 00 08 00 01 00 01 00 01 00 38 00 07 00 34 00 01 00 0b 00 01 00 6d 69 72 72 65 64 00 00 24 00 02 80 20 00 02 00 00 00 00 00 " +
      "00 00 00 00 04 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 04 00 00 00 24 00 05 00 01 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 " +
      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00";
    assert.deepEqual(asSent(ingressRedirectRequest(3, 4)), sent(add));
  });

  test("tc qdisc show dev <3>; tc filter show dev <3> ingress (dumps)", () => {
    const qdiscs = "24 00 00 00 26 00 01 03 00 00 00 00 00 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00";
    const filters = "24 00 00 00 2e 00 01 03 00 00 00 00 00 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 f2 ff ff ff 00 00 00 00";
    assert.deepEqual(asSent(dumpQdiscsRequest(3)), sent(qdiscs));
    assert.deepEqual(asSent(dumpIngressFiltersRequest(3)), sent(filters));
  });

  // Kernel 6.18's RTM_NEWQDISC / RTM_NEWTFILTER payloads (after the header), as `tc -json -raw` showed them.
  test("qdiscs: a tbf with a 64-bit rate, the default root qdisc, an ingress qdisc", () => {
    // {"kind":"tbf","handle":"1:","root":true,"options":{"rate":5000000000,"burst_raw":"c34","limit":100000}}
    const tbf = hex(
      "000000000200000000000100ffffffff03000000080001007462660038000200280001000001000000000000ffffffff000000000000000000000000" +
        "a0860100340c0000000000000c00040000f2052a0100000005000c00000000003000070014000100000000000000000000000000000000001800" +
        "030000000000000000000000000000000000000000002c0003000000000000000000000000000000000000000000000000000000000000000000" +
        "0000000000000000",
    );
    assert.deepEqual(decodeQdisc(tbf), {
      index: 2,
      qdisc: { kind: "tbf", handle: "1:", root: true, tbf: { rate: 5_000_000_000, limit: 100000, buffer: 0xc34 } },
    });
    // {"kind":"noqueue","handle":"0:","root":true}
    const noqueue = hex(
      "000000000300000000000000ffffffff020000000c0001006e6f71756575650005000c000000000030000700140001000000000000000000000000" +
        "00000000001800030000000000000000000000000000000000000000002c000300000000000000000000000000000000000000000000000000" +
        "00000000000000000000000000000000",
    );
    assert.deepEqual(decodeQdisc(noqueue), { index: 3, qdisc: { kind: "noqueue", handle: "0:", root: true } });
    // {"kind":"ingress","handle":"ffff:","parent":"ffff:fff1"}
    const ingress = hex(
      "00000000030000000000fffff1ffffff010000000c000100696e6772657373000400020005000c0000000000300007001400010000000000000000" +
        "0000000000000000001800030000000000000000000000000000000000000000002c0003000000000000000000000000000000000000000000" +
        "0000000000000000000000000000000000000000",
    );
    assert.deepEqual(decodeQdisc(ingress), { index: 3, qdisc: { kind: "ingress", handle: "ffff:", parent: "ffff:fff1", root: false } });
  });

  test("filters: the u32 redirect's target; the u32 chain and hash table entries have none", () => {
    const chain = hex("0000000003000000000000000000ffff00030100080001007533320008000b0000000000");
    const table = hex("0000000003000000000000800000ffff00030100080001007533320008000b00000000000c0002000800040001000000");
    const redirect = hex(
      "0000000003000000000800800000ffff00030100080001007533320008000b0000000000e80002002400050001000100000000000000000000000000" +
        "000000000000000000000000000000000800020000000080080001000100010008000b0008000000a8000700a40001000b0001006d6972726564" +
        "0000440004001400010000000000000000000000000000000000140007000000000000000000000000000000000018000300000000000000000000" +
        "000000000000000000000008000a000000000048000200200002000100000000000000040000000100000001000000010000000400000024000100" +
        "b64e000000000000b64e00000000000000000000000000000000000000000000",
    );
    assert.deepEqual(decodeFilterRedirects(chain), { index: 3, targets: [] });
    assert.deepEqual(decodeFilterRedirects(table), { index: 3, targets: [] });
    assert.deepEqual(decodeFilterRedirects(redirect), { index: 3, targets: [4] });
    // What we send reads back the same way (the kernel echoes the action as it was given, with its counters).
    const ours = ingressRedirectRequest(3, 9).body;
    assert.deepEqual(decodeFilterRedirects(ours), { index: 3, targets: [9] });
  });
});
