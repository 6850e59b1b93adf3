import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { rootTbfRequest } from "#net/rtnetlink-messages.js";
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
