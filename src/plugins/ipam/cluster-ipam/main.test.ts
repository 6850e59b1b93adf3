import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatBlocksHint, parseBlocksHint } from "./main.js";

describe("cluster-ipam's blocks hint", () => {
  test("blocks with the mask of their used addresses round-trip; a block without one stays without", () => {
    const memory = [
      { block: "10.22.0.64-26", used: new Set([0x0a160040n + 2n, 0x0a160040n + 3n, 0x0a160040n + 63n]) },
      { block: "10.22.1.0-26" },
      { block: "fd00::40-122", used: new Set<bigint>() },
    ];
    const text = formatBlocksHint(memory);
    assert.equal(text, "10.22.0.64-26 800000000000000c\n10.22.1.0-26\nfd00::40-122 0\n");
    assert.deepEqual(parseBlocksHint(text), memory);
  });

  test("lines that do not parse are left out: torn, another version's, the liveness line", () => {
    const parsed = parseBlocksHint("10.22.0.64-26 c\nalive 1764000000000\n10.22.1.0-2\n10.22.2.0-26 zz\nnonsense\n10.22.3.0-26 1");
    // ("10.22.1.0-2", a line cut short, names no block an address of which is 10.22.1.0 aligned to: left out too.)
    assert.deepEqual(
      parsed.map((m) => m.block),
      ["10.22.0.64-26", "10.22.3.0-26"],
    );
    assert.deepEqual(parsed[1]!.used, new Set([0x0a160300n]));
  });
});
