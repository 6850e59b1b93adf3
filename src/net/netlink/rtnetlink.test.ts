import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { nlAttr, nlMessage, parseAck } from "./rtnetlink.js";

describe("rtnetlink messages", () => {
  test("attributes are padded to 4 bytes, lengths exclude the padding", () => {
    assert.deepEqual([...nlAttr(1, Uint8Array.of(0x61))], [5, 0, 1, 0, 0x61, 0, 0, 0]);
    const msg = nlMessage(36, 0x605, 9, Uint8Array.of(1, 2, 3, 4));
    assert.deepEqual([...msg.subarray(0, 10)], [20, 0, 0, 0, 36, 0, 0x05, 0x06, 9, 0]);
  });

  test("acknowledgements", () => {
    const ack = (seq: number, error: number, extra: number[] = [], flags = 0) => {
      const b = new Uint8Array(36 + extra.length);
      const v = new DataView(b.buffer);
      v.setUint32(0, b.length, true);
      v.setUint16(4, 2, true);
      v.setUint16(6, flags, true);
      v.setUint32(8, seq, true);
      v.setInt32(16, error, true);
      v.setUint32(20, 16, true); // the echoed request: a bare header
      b.set(extra, 36);
      return b;
    };
    assert.deepEqual(parseAck(ack(5, 0), 5), { kind: "ok" });
    assert.deepEqual(parseAck(ack(4, 0), 5), { kind: "none" });
    assert.deepEqual(parseAck(ack(5, -17), 5), { kind: "error", errno: 17, reason: "File exists" });
    const text = [...new TextEncoder().encode("Exclusivity flag on\0")];
    const tlv = [4 + text.length, 0, 1, 0, ...text];
    while (tlv.length % 4) tlv.push(0);
    assert.deepEqual(parseAck(ack(5, -17, tlv, 0x300), 5), {
      kind: "error",
      errno: 17,
      reason: "Exclusivity flag on (File exists)",
      message: "Exclusivity flag on",
    });
  });
});
