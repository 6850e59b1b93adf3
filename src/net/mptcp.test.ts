/** The MPTCP path manager's requests (byte for byte what `ip mptcp` sends) and what its answers and `ip`'s output read as. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { concatBytes } from "#sys/bytes.js";
import { addEndpointAttrs, decodeEndpoint, deleteEndpointAttrs, endpointFromJson, flagNames, limitsFromText, setLimitsAttrs } from "./mptcp.js";
import { nlAttr, parseAttrs } from "./netlink/rtnetlink.js";

/** Bytes from strace's `-xx` rendering of what `ip` sent, after the genlmsghdr. */
const bytes = (escaped: string): number[] => [...escaped.matchAll(/\\x([0-9a-f]{2})/g)].map((m) => parseInt(m[1]!, 16)).slice(4);
const joined = (attrs: Uint8Array[]): number[] => [...concatBytes(...attrs)];

describe("mptcp_pm requests (what iproute2 6.1 sends)", () => {
  test("ip mptcp endpoint add 10.9.0.1 dev <3> subflow backup", () => {
    assert.deepEqual(
      joined(addEndpointAttrs("10.9.0.1", 0x6, 3)),
      bytes(
        "\\x01\\x01\\x00\\x00\\x24\\x00\\x01\\x80\\x08\\x00\\x06\\x00\\x06\\x00\\x00\\x00\\x08\\x00\\x07\\x00\\x03\\x00\\x00\\x00\\x06\\x00\\x01\\x00\\x02\\x00\\x00\\x00\\x08\\x00\\x03\\x00\\x0a\\x09\\x00\\x01",
      ),
    );
  });

  test("ip mptcp endpoint add fd00::1 dev <3> signal", () => {
    assert.deepEqual(
      joined(addEndpointAttrs("fd00::1", 0x1, 3)),
      bytes(
        "\\x01\\x01\\x00\\x00\\x30\\x00\\x01\\x80\\x08\\x00\\x06\\x00\\x01\\x00\\x00\\x00\\x08\\x00\\x07\\x00\\x03\\x00\\x00\\x00\\x06\\x00\\x01\\x00\\x0a\\x00\\x00\\x00\\x14\\x00\\x04\\x00\\xfd\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01",
      ),
    );
  });

  test("ip mptcp limits set subflows 3 add_addr_accepted 2, and one limit alone", () => {
    assert.deepEqual(
      joined(setLimitsAttrs({ subflows: 3, addAddrAccepted: 2 })),
      bytes("\\x05\\x01\\x00\\x00\\x08\\x00\\x02\\x00\\x02\\x00\\x00\\x00\\x08\\x00\\x03\\x00\\x03\\x00\\x00\\x00"),
    );
    assert.deepEqual(joined(setLimitsAttrs({ subflows: 1 })), [8, 0, 3, 0, 1, 0, 0, 0]);
    assert.deepEqual(setLimitsAttrs({}), []);
  });

  test("ip mptcp endpoint delete id 1", () => {
    assert.deepEqual(joined(deleteEndpointAttrs(1)), bytes("\\x02\\x01\\x00\\x00\\x0c\\x00\\x01\\x80\\x05\\x00\\x02\\x00\\x01\\x00\\x00\\x00"));
  });
});

describe("mptcp_pm answers and ip's output", () => {
  test("an endpoint of a GET_ADDR dump", () => {
    const u32 = (type: number, v: number) => {
      const b = new Uint8Array(4);
      new DataView(b.buffer).setUint32(0, v, true);
      return nlAttr(type, b);
    };
    const addr = nlAttr(
      0x8001,
      concatBytes(nlAttr(1, Uint8Array.of(2, 0)), nlAttr(2, Uint8Array.of(4)), nlAttr(3, Uint8Array.of(10, 9, 0, 1)), u32(6, 0x12), u32(7, 3)),
    );
    assert.deepEqual(decodeEndpoint(parseAttrs(addr)), { id: 4, address: "10.9.0.1", flags: 0x12, ifIndex: 3 });
    const v6 = nlAttr(0x8001, concatBytes(nlAttr(2, Uint8Array.of(1)), nlAttr(4, Uint8Array.of(0xfd, ...new Array(14).fill(0), 1))));
    assert.deepEqual(decodeEndpoint(parseAttrs(v6)), { id: 1, address: "fd00::1", flags: 0 });
    assert.equal(decodeEndpoint(new Map()), undefined);
  });

  test("ip -json mptcp endpoint show, ip mptcp limits show", () => {
    assert.deepEqual(endpointFromJson({ address: "10.9.0.1", id: 1, subflow: true, backup: true, dev: "a0" }), {
      id: 1,
      address: "10.9.0.1",
      flags: 0x6,
      dev: "a0",
    });
    assert.deepEqual(endpointFromJson({ address: "10.9.0.3", id: 2, signal: true, implicit: true }), { id: 2, address: "10.9.0.3", flags: 0x1 });
    assert.deepEqual(limitsFromText("add_addr_accepted 8 subflows 2 \n"), { subflows: 2, addAddrAccepted: 8 });
  });

  test("flag names in ip's order", () => {
    assert.deepEqual(flagNames(0xf), ["signal", "subflow", "backup", "fullmesh"]);
    assert.deepEqual(flagNames(0x10), []);
  });
});
