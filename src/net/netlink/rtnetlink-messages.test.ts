import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { concatBytes } from "#sys/bytes.js";
import { linkAddWords, opWords } from "../link/ip-ops.js";
import { NetNS } from "../netns.js";
import type { NewLink } from "../types.js";
import { nlAttr, nlString, nlU32, parseAttrs } from "./rtnetlink.js";
import {
  addressRequest,
  bridgePortRequest,
  bridgeSettingsRequest,
  decodeAddress,
  decodeLink,
  deleteGroupRequest,
  deleteLinkRequest,
  dumpLinksRequest,
  getLinkRequest,
  ipText,
  moveLinkRequest,
  newLinkRequest,
  renameLinkRequest,
  routeRequest,
  setGroupRequest,
  setLinkRequest,
} from "./rtnetlink-messages.js";

/** Bytes from strace's `-xx` rendering of what `ip` sent (the message body after the 16-byte header). */
const bytes = (escaped: string): number[] => [...escaped.matchAll(/\\x([0-9a-f]{2})/g)].map((m) => parseInt(m[1]!, 16));
const body = (req: { body: Uint8Array } | undefined): number[] => [...req!.body];

describe("route-netlink requests (byte for byte what iproute2 sends)", () => {
  test("ip link add name e0 mtu 1400 address 02:00:00:00:00:01 txqueuelen 0 type veth peer name e1 mtu 1400 txqueuelen 0 netns <fd 4>", () => {
    const req = newLinkRequest(
      { name: "e0", kind: "veth", mtu: 1400, mac: "02:00:00:00:00:01", txqlen: 0, peer: { name: "e1", mtu: 1400, txqlen: 0, ns: NetNS.host } },
      { peerNsFd: 4 },
    );
    assert.equal(req.type, 16);
    assert.equal(req.flags, 0x600);
    assert.deepEqual(
      body(req),
      bytes(
        "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x04\\x00\\x78\\x05\\x00\\x00\\x0a\\x00\\x01\\x00\\x02\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x08\\x00\\x0d\\x00\\x00\\x00\\x00\\x00\\x07\\x00\\x03\\x00\\x65\\x30\\x00\\x00\\x44\\x00\\x12\\x00\\x08\\x00\\x01\\x00\\x76\\x65\\x74\\x68\\x38\\x00\\x02\\x00\\x34\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x04\\x00\\x78\\x05\\x00\\x00\\x08\\x00\\x0d\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x1c\\x00\\x04\\x00\\x00\\x00\\x07\\x00\\x03\\x00\\x65\\x31\\x00\\x00",
      ),
    );
  });

  test("ip link add name br1 mtu 1400 promisc on address 02:00:00:00:00:02 up type bridge vlan_filtering 1", () => {
    const req = newLinkRequest({ name: "br1", kind: "bridge", mtu: 1400, promisc: true, mac: "02:00:00:00:00:02", up: true, vlanFiltering: true });
    assert.deepEqual(
      body(req),
      bytes(
        "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x01\\x00\\x00\\x01\\x01\\x00\\x00\\x08\\x00\\x04\\x00\\x78\\x05\\x00\\x00\\x0a\\x00\\x01\\x00\\x02\\x00\\x00\\x00\\x00\\x02\\x00\\x00\\x08\\x00\\x03\\x00\\x62\\x72\\x31\\x00\\x1c\\x00\\x12\\x00\\x0a\\x00\\x01\\x00\\x62\\x72\\x69\\x64\\x67\\x65\\x00\\x00\\x0c\\x00\\x02\\x00\\x05\\x00\\x07\\x00\\x01\\x00\\x00\\x00",
      ),
    );
  });

  test("ip link set dev <4> mtu 1400 alias hello up; nomaster down; link del", () => {
    const req = setLinkRequest(4, { mtu: 1400, alias: "hello", up: true });
    assert.deepEqual([req.type, req.flags], [16, 0]);
    assert.deepEqual(
      body(req),
      bytes(
        "\\x00\\x00\\x00\\x00\\x04\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x08\\x00\\x04\\x00\\x78\\x05\\x00\\x00\\x09\\x00\\x14\\x00\\x68\\x65\\x6c\\x6c\\x6f\\x00\\x00\\x00",
      ),
    );
    assert.deepEqual(
      body(setLinkRequest(5, { master: null, up: false })),
      bytes("\\x00\\x00\\x00\\x00\\x05\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x08\\x00\\x0a\\x00\\x00\\x00\\x00\\x00"),
    );
    const del = deleteLinkRequest(5);
    assert.deepEqual([del.type, del.flags], [17, 0]);
    assert.deepEqual(body(del), bytes("\\x00\\x00\\x00\\x00\\x05\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"));
  });

  test("ip link set dev <3> group 7; ip link delete group 7", () => {
    const set = setGroupRequest(3, 7);
    assert.deepEqual([set.type, set.flags], [16, 0]);
    assert.deepEqual(
      body(set),
      bytes("\\x00\\x00\\x00\\x00\\x03\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x1b\\x00\\x07\\x00\\x00\\x00"),
    );
    const del = deleteGroupRequest(7);
    assert.deepEqual([del.type, del.flags], [17, 0]);
    assert.deepEqual(
      body(del),
      bytes("\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x1b\\x00\\x07\\x00\\x00\\x00"),
    );
  });

  test("a master, MAC and promisc/allmulti flags in one message", () => {
    const req = setLinkRequest(7, { master: "br0", mac: "02:aa:bb:cc:dd:ee", promisc: true, allmulti: false, txqlen: 5 }, 3);
    const v = new DataView(req.body.buffer);
    assert.deepEqual([v.getUint32(8, true), v.getUint32(12, true)], [0x100, 0x300]);
    const a = parseAttrs(req.body.subarray(16));
    assert.deepEqual([...a.get(10)!], [3, 0, 0, 0]);
    assert.deepEqual([...a.get(1)!], [2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee]);
    assert.deepEqual([...a.get(13)!], [5, 0, 0, 0]);
  });

  test("bridge-port flags go in IFLA_INFO_SLAVE_DATA (hairpin is IFLA_BRPORT_MODE)", () => {
    const req = bridgePortRequest(4, { hairpin: true, isolated: false });
    const info = parseAttrs(parseAttrs(req.body.subarray(16)).get(18)!);
    const port = parseAttrs(info.get(5)!);
    assert.deepEqual([port.get(4)?.[0], port.get(33)?.[0]], [1, 0]);
  });

  test("ip link set dev <2> type bridge group_fwd_mask 16392", () => {
    const req = bridgeSettingsRequest(2, { groupFwdMask: 0x4008 });
    assert.deepEqual([req.type, req.flags], [16, 0]);
    assert.deepEqual(
      body(req),
      bytes(
        "\\x00\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x1c\\x00\\x12\\x00\\x0a\\x00\\x01\\x00\\x62\\x72\\x69\\x64\\x67\\x65\\x00\\x00\\x0c\\x00\\x02\\x00\\x06\\x00\\x09\\x00\\x08\\x40\\x00\\x00",
      ),
    );
    assert.deepEqual(opWords({ kind: "bridge-set", name: "br0", settings: { groupFwdMask: 16392 } }), [
      "link",
      "set",
      "dev",
      "br0",
      "type",
      "bridge",
      "group_fwd_mask",
      "16392",
    ]);
  });

  test("ip addr add CIDR brd + dev <4>: local and address, a broadcast only up to /30, host scope for 127/8", () => {
    const add = addressRequest("add", 4, "10.1.2.3/24");
    assert.deepEqual([add!.type, add!.flags], [20, 0x600]);
    assert.deepEqual(
      body(add),
      bytes(
        "\\x02\\x18\\x00\\x00\\x04\\x00\\x00\\x00\\x08\\x00\\x02\\x00\\x0a\\x01\\x02\\x03\\x08\\x00\\x01\\x00\\x0a\\x01\\x02\\x03\\x08\\x00\\x04\\x00\\x0a\\x01\\x02\\xff",
      ),
    );
    assert.deepEqual(
      body(addressRequest("add", 4, "10.1.2.4/31")),
      bytes("\\x02\\x1f\\x00\\x00\\x04\\x00\\x00\\x00\\x08\\x00\\x02\\x00\\x0a\\x01\\x02\\x04\\x08\\x00\\x01\\x00\\x0a\\x01\\x02\\x04"),
    );
    assert.deepEqual(
      body(addressRequest("add", 4, "127.0.0.5/8")),
      bytes(
        "\\x02\\x08\\x00\\xfe\\x04\\x00\\x00\\x00\\x08\\x00\\x02\\x00\\x7f\\x00\\x00\\x05\\x08\\x00\\x01\\x00\\x7f\\x00\\x00\\x05\\x08\\x00\\x04\\x00\\x7f\\xff\\xff\\xff",
      ),
    );
    const del = addressRequest("del", 4, "10.1.2.3/24");
    assert.deepEqual([del!.type, del!.flags], [21, 0]);
    assert.deepEqual(
      body(del),
      bytes("\\x02\\x18\\x00\\x00\\x04\\x00\\x00\\x00\\x08\\x00\\x02\\x00\\x0a\\x01\\x02\\x03\\x08\\x00\\x01\\x00\\x0a\\x01\\x02\\x03"),
    );
    assert.equal(addressRequest("replace", 4, "10.1.2.3/24")!.flags, 0x500);
    const v6 = addressRequest("add", 2, "fd00::1/64")!;
    assert.deepEqual([...v6.body.subarray(0, 4)], [10, 64, 0, 0]);
    assert.equal(parseAttrs(v6.body.subarray(8)).has(4), false);
    assert.equal(addressRequest("add", 2, "10.1.2.300/24"), undefined);
  });

  test("ip route append|add|del|replace", () => {
    const full = routeRequest(
      "append",
      { dst: "10.5.0.0/16", gw: "10.1.2.1", dev: "v0", src: "10.1.2.3", table: 100, metric: 5, mtu: 1400, advmss: 1300 },
      4,
    );
    assert.deepEqual([full!.type, full!.flags], [24, 0xc00]);
    assert.deepEqual(
      body(full),
      bytes(
        "\\x02\\x10\\x00\\x00\\x64\\x03\\x00\\x01\\x00\\x00\\x00\\x00\\x08\\x00\\x01\\x00\\x0a\\x05\\x00\\x00\\x08\\x00\\x05\\x00\\x0a\\x01\\x02\\x01\\x08\\x00\\x07\\x00\\x0a\\x01\\x02\\x03\\x08\\x00\\x06\\x00\\x05\\x00\\x00\\x00\\x08\\x00\\x04\\x00\\x04\\x00\\x00\\x00\\x14\\x00\\x08\\x00\\x08\\x00\\x02\\x00\\x78\\x05\\x00\\x00\\x08\\x00\\x08\\x00\\x14\\x05\\x00\\x00",
      ),
    );
    const linkScope = bytes(
      "\\x02\\x10\\x00\\x00\\xfe\\x03\\xfd\\x01\\x00\\x00\\x00\\x00\\x08\\x00\\x01\\x00\\x0a\\x06\\x00\\x00\\x08\\x00\\x04\\x00\\x04\\x00\\x00\\x00",
    );
    assert.deepEqual(body(routeRequest("add", { dst: "10.6.0.0/16", dev: "v0", scope: "link" }, 4)), linkScope);
    assert.equal(routeRequest("add", { dst: "10.6.0.0/16", dev: "v0" }, 4)!.flags, 0x600);
    assert.deepEqual(body(routeRequest("append", { dst: "10.6.0.0/16", dev: "v0" }, 4)), linkScope, "no gateway: link scope");
    assert.deepEqual(
      body(routeRequest("append", { dst: "0.0.0.0/0", gw: "10.1.2.1" })),
      bytes(
        "\\x02\\x00\\x00\\x00\\xfe\\x03\\x00\\x01\\x00\\x00\\x00\\x00\\x08\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x05\\x00\\x0a\\x01\\x02\\x01",
      ),
    );
    const del = routeRequest("del", { dst: "10.7.0.0/16", dev: "v0" }, 4);
    assert.deepEqual([del!.type, del!.flags], [25, 0]);
    assert.deepEqual(
      body(del),
      bytes(
        "\\x02\\x10\\x00\\x00\\xfe\\x00\\xff\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x01\\x00\\x0a\\x07\\x00\\x00\\x08\\x00\\x04\\x00\\x04\\x00\\x00\\x00",
      ),
    );
    const replace = routeRequest("replace", { dst: "10.8.0.0/16", dev: "v0", table: 1000 }, 4);
    assert.equal(replace!.flags, 0x500);
    assert.deepEqual(
      body(replace),
      bytes(
        "\\x02\\x10\\x00\\x00\\x00\\x03\\xfd\\x01\\x00\\x00\\x00\\x00\\x08\\x00\\x01\\x00\\x0a\\x08\\x00\\x00\\x08\\x00\\x0f\\x00\\xe8\\x03\\x00\\x00\\x08\\x00\\x04\\x00\\x04\\x00\\x00\\x00",
      ),
    );
    assert.deepEqual(
      [...routeRequest("append", { dst: "fd00::/64", dev: "eth0" }, 2)!.body.subarray(0, 8)],
      [10, 64, 0, 0, 254, 3, 0, 1],
      "IPv6: universe scope",
    );
    assert.equal(routeRequest("add", { dst: "fd00::/64", gw: "10.0.0.1" }), undefined, "mixed families are left to ip");
    assert.equal(routeRequest("add", { dst: "10.0.0.0/8", scope: "nonsense" }), undefined);
  });

  test("a dump of one master's ports: the dump of every link and IFLA_MASTER (10), as `ip link show master X` sends", () => {
    assert.deepEqual(body(dumpLinksRequest(7)), [...body(dumpLinksRequest()), ...nlU32(10, 7)]);
    assert.equal(dumpLinksRequest(7).flags, dumpLinksRequest().flags);
  });

  test("a link looked up by name", () => {
    assert.deepEqual(
      body(getLinkRequest("v0")),
      bytes(
        "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x08\\x00\\x1d\\x00\\x09\\x00\\x00\\x00\\x07\\x00\\x03\\x00\\x76\\x30\\x00\\x00",
      ),
    );
  });
});

/**
 * Whole messages as scripts/capture-rtnetlink.sh prints them (hex words of what `ip` sent, header included),
 * captured on iproute2 6.1 in a namespace holding a veth `vp0` (index 3), with the target namespace opened by
 * `ip` as fd 4 (the numbers the builders are given below). The kernel here has no ipvlan, vlan or dummy: it
 * refused those requests ("Unknown device type"), after `ip` had sent them. Split into what a request is made
 * of (the sequence number and port left out).
 */
function captured(hex: string): { type: number; flags: number; body: number[] } {
  const b = hex
    .trim()
    .split(/\s+/)
    .map((h) => parseInt(h, 16));
  const v = new DataView(Uint8Array.from(b).buffer);
  assert.equal(v.getUint32(0, true), b.length, "a whole message");
  // NLM_F_REQUEST | NLM_F_ACK are the socket's to add; the rest are the request's.
  return { type: v.getUint16(4, true), flags: v.getUint16(6, true) & ~0x5, body: b.slice(16) };
}

describe("link creation, rename and move (byte for byte what iproute2 sends)", () => {
  const container = { path: "/run/netns/capB" } as NetNS; // only its path is read (for the words)
  const vectors: Array<{ link: NewLink; words: string; hex: string; refs: { netnsFd?: number; parentIndex?: number } }> = [
    {
      link: {
        kind: "macvlan",
        name: "vethab12cd34",
        parent: "vp0",
        mtu: 1400,
        mac: "02:00:00:00:00:07",
        netns: container,
        macvlanMode: "private",
        bcqueuelen: 500,
      },
      words: "link add link vp0 name vethab12cd34 mtu 1400 address 02:00:00:00:00:07 netns /run/netns/capB type macvlan mode private bcqueuelen 500",
      hex: "7c 00 00 00 10 00 05 06 fd b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 04 00 78 05 00 00 0a 00 01 00 02 00 00 00 00 07 00 00 08 00 1c 00 04 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 24 00 12 00 0b 00 01 00 6d 61 63 76 6c 61 6e 00 14 00 02 00 08 00 07 00 f4 01 00 00 08 00 01 00 01 00 00 00",
      refs: { netnsFd: 4, parentIndex: 3 },
    },
    {
      link: { kind: "macvlan", name: "vethab12cd34", parent: "vp0", netns: container, macvlanMode: "bridge" },
      words: "link add link vp0 name vethab12cd34 netns /run/netns/capB type macvlan mode bridge",
      hex: "60 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 1c 00 04 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 1c 00 12 00 0b 00 01 00 6d 61 63 76 6c 61 6e 00 0c 00 02 00 08 00 01 00 04 00 00 00",
      refs: { netnsFd: 4, parentIndex: 3 },
    },
    ...(["vepa", "passthru", "source"] as const).map((mode, i) => ({
      link: { kind: "macvlan", name: "vethab12cd34", parent: "vp0", macvlanMode: mode } as NewLink,
      words: `link add link vp0 name vethab12cd34 type macvlan mode ${mode}`,
      hex: `58 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 1c 00 12 00 0b 00 01 00 6d 61 63 76 6c 61 6e 00 0c 00 02 00 08 00 01 00 ${["02", "08", "10"][i]} 00 00 00`,
      refs: { parentIndex: 3 },
    })),
    {
      link: { kind: "ipvlan", name: "vethab12cd34", parent: "vp0", mtu: 1400, netns: container, ipvlanMode: "l3s" },
      words: "link add link vp0 name vethab12cd34 mtu 1400 netns /run/netns/capB type ipvlan mode l3s",
      hex: "70 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 04 00 78 05 00 00 08 00 1c 00 04 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 24 00 12 00 0a 00 01 00 69 70 76 6c 61 6e 00 00 14 00 02 00 06 00 01 00 02 00 00 00 06 00 02 00 00 00 00 00",
      refs: { netnsFd: 4, parentIndex: 3 },
    },
    {
      link: { kind: "ipvlan", name: "vethab12cd34", parent: "vp0", netns: container, ipvlanMode: "l2" },
      words: "link add link vp0 name vethab12cd34 netns /run/netns/capB type ipvlan mode l2",
      hex: "68 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 1c 00 04 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 24 00 12 00 0a 00 01 00 69 70 76 6c 61 6e 00 00 14 00 02 00 06 00 01 00 00 00 00 00 06 00 02 00 00 00 00 00",
      refs: { netnsFd: 4, parentIndex: 3 },
    },
    {
      link: { kind: "ipvlan", name: "vethab12cd34", parent: "vp0", ipvlanMode: "l3" },
      words: "link add link vp0 name vethab12cd34 type ipvlan mode l3",
      hex: "60 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 24 00 12 00 0a 00 01 00 69 70 76 6c 61 6e 00 00 14 00 02 00 06 00 01 00 01 00 00 00 06 00 02 00 00 00 00 00",
      refs: { parentIndex: 3 },
    },
    {
      link: { kind: "vlan", name: "vethab12cd34", parent: "vp0", mtu: 1400, netns: container, vlanId: 100 },
      words: "link add link vp0 name vethab12cd34 mtu 1400 netns /run/netns/capB type vlan id 100",
      hex: "64 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 04 00 78 05 00 00 08 00 1c 00 04 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 18 00 12 00 08 00 01 00 76 6c 61 6e 0c 00 02 00 06 00 01 00 64 00 00 00",
      refs: { netnsFd: 4, parentIndex: 3 },
    },
    {
      link: { kind: "vlan", name: "vethab12cd34", parent: "vp0", vlanId: 0 },
      words: "link add link vp0 name vethab12cd34 type vlan id 0",
      hex: "54 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 05 00 03 00 00 00 11 00 03 00 76 65 74 68 61 62 31 32 63 64 33 34 00 00 00 00 18 00 12 00 08 00 01 00 76 6c 61 6e 0c 00 02 00 06 00 01 00 00 00 00 00",
      refs: { parentIndex: 3 },
    },
    {
      link: { kind: "dummy", name: "eth0" },
      words: "link add name eth0 type dummy",
      hex: "3c 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 09 00 03 00 65 74 68 30 00 00 00 00 10 00 12 00 09 00 01 00 64 75 6d 6d 79 00 00 00",
      refs: {},
    },
    {
      link: { kind: "dummy", name: "eth0", mtu: 1400 },
      words: "link add name eth0 mtu 1400 type dummy",
      hex: "44 00 00 00 10 00 05 06 fe b3 04 6b 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 08 00 04 00 78 05 00 00 09 00 03 00 65 74 68 30 00 00 00 00 10 00 12 00 09 00 01 00 64 75 6d 6d 79 00 00 00",
      refs: {},
    },
  ];
  for (const v of vectors) {
    test(`ip ${v.words}`, () => {
      assert.equal(linkAddWords(v.link).join(" "), v.words, "the iproute2 backend runs these very words");
      const req = newLinkRequest(v.link, v.refs);
      assert.deepEqual({ type: req.type, flags: req.flags, body: [...req.body] }, captured(v.hex));
    });
  }

  test("ip link set dev vethab12cd34 name eth0 (index 10)", () => {
    assert.equal(opWords({ kind: "link-rename", name: "vethab12cd34", newName: "eth0" }).join(" "), "link set dev vethab12cd34 name eth0");
    const req = renameLinkRequest(10, "eth0");
    assert.deepEqual(
      { type: req.type, flags: req.flags, body: [...req.body] },
      captured("2c 00 00 00 10 00 05 00 fe b3 04 6b 00 00 00 00 00 00 00 00 0a 00 00 00 00 00 00 00 00 00 00 00 09 00 03 00 65 74 68 30 00 00 00 00"),
    );
  });

  test("ip link set dev eth0 netns /run/netns/capB (index 10, the namespace as fd 4)", () => {
    assert.equal(opWords({ kind: "link-move", name: "eth0", to: container }).join(" "), "link set dev eth0 netns /run/netns/capB");
    const req = moveLinkRequest(10, 4);
    assert.deepEqual(
      { type: req.type, flags: req.flags, body: [...req.body] },
      captured("28 00 00 00 10 00 05 00 fe b3 04 6b 00 00 00 00 00 00 00 00 0a 00 00 00 00 00 00 00 00 00 00 00 08 00 1c 00 04 00 00 00"),
    );
  });
});

describe("reading RTM_NEWLINK and RTM_NEWADDR", () => {
  const ifinfo = (index: number, flags: number, type = 1) => {
    const b = new Uint8Array(16);
    const v = new DataView(b.buffer);
    v.setUint16(2, type, true);
    v.setInt32(4, index, true);
    v.setUint32(8, flags, true);
    return b;
  };
  test("a veth bridge port whose peer is in another namespace", () => {
    const payload = concatBytes(
      ifinfo(5, 0x1 | 0x2 | 0x1000 | 0x10000 | 0x200),
      nlString(3, "veth1"),
      nlU32(13, 0),
      nlU32(4, 1400),
      nlAttr(1, Uint8Array.of(2, 0, 0, 0, 0, 5)),
      nlAttr(16, Uint8Array.of(6)),
      nlU32(10, 3),
      nlU32(5, 2),
      nlU32(37, 0),
      nlString(20, "hi"),
      nlAttr(
        18,
        concatBytes(nlString(1, "veth"), nlString(4, "bridge"), nlAttr(5, concatBytes(nlAttr(4, Uint8Array.of(1)), nlAttr(33, Uint8Array.of(0))))),
      ),
    );
    assert.deepEqual(decodeLink(payload), {
      link: {
        index: 5,
        name: "veth1",
        mtu: 1400,
        mac: "02:00:00:00:00:05",
        up: true,
        operstate: "UP",
        promisc: false,
        allmulti: true,
        txqlen: 0,
        kind: "veth",
        peerIndex: 2,
        alias: "hi",
        bridgePort: { hairpin: true, isolated: false },
      },
      masterIndex: 3,
      peerNetnsId: 0,
    });
  });
  test("a veth whose peer is in the same namespace has no peerIndex (ip names the peer instead); a vrf its table", () => {
    const veth = decodeLink(concatBytes(ifinfo(6, 0x100), nlString(3, "a"), nlU32(5, 7)));
    assert.equal(veth.link.peerIndex, undefined);
    assert.equal(veth.link.promisc, true);
    assert.equal(veth.link.operstate, "UNKNOWN");
    const vrf = decodeLink(concatBytes(ifinfo(8, 0), nlString(3, "red"), nlAttr(18, concatBytes(nlString(1, "vrf"), nlAttr(2, nlU32(1, 100))))));
    assert.deepEqual(vrf.link.info, { table: 100 });
  });
  test("a macvlan on a parent here, and one whose parent is in another namespace; kind data as ip -json -d names it", () => {
    const data = (kind: string, ...attrs: Uint8Array[]) =>
      nlAttr(18, concatBytes(nlAttr(1, new TextEncoder().encode(kind)), nlAttr(2, concatBytes(...attrs))));
    const here = decodeLink(concatBytes(ifinfo(9, 0), nlString(3, "eth0"), nlU32(5, 3), data("macvlan", nlU32(1, 4), nlU32(7, 500))));
    assert.deepEqual([here.link.peerIndex, here.peerLinkIndex, here.link.info], [undefined, 3, { mode: "bridge", bcqueuelen: 500 }]);
    const there = decodeLink(concatBytes(ifinfo(2, 0), nlString(3, "eth0"), nlU32(5, 3), nlU32(37, 0), data("macvlan", nlU32(1, 16))));
    assert.deepEqual([there.link.peerIndex, there.peerLinkIndex, there.link.info], [3, undefined, { mode: "source" }]);
    const u16 = (type: number, v: number) => nlAttr(type, Uint8Array.of(v & 0xff, v >> 8));
    assert.deepEqual(decodeLink(concatBytes(ifinfo(2, 0), data("ipvlan", u16(1, 2), u16(2, 0)))).link.info, { mode: "l3s" });
    assert.deepEqual(decodeLink(concatBytes(ifinfo(2, 0), data("vlan", u16(1, 4094)))).link.info, { id: 4094 });
    const tap = decodeLink(
      concatBytes(
        ifinfo(2, 0),
        data(
          "tun",
          nlU32(1, 1000),
          nlU32(2, 100),
          nlAttr(3, Uint8Array.of(2)),
          nlAttr(4, Uint8Array.of(0)),
          nlAttr(5, Uint8Array.of(1)),
          nlAttr(6, Uint8Array.of(1)),
          nlAttr(7, Uint8Array.of(1)),
        ),
      ),
    );
    assert.deepEqual(tap.link.info, { type: "tap", pi: false, vnet_hdr: true, multi_queue: true, persist: true, user: 1000, group: 100 });
    const ownerless = decodeLink(concatBytes(ifinfo(2, 0), data("tun", nlAttr(3, Uint8Array.of(2)), nlAttr(6, Uint8Array.of(1)))));
    assert.deepEqual(ownerless.link.info, { type: "tap", pi: false, vnet_hdr: false, multi_queue: false, persist: true });
  });
  test("addresses: IFA_LOCAL over IFA_ADDRESS, IFA_FLAGS over the header's flags, scope names", () => {
    const ifaddr = (family: number, prefix: number, flags: number, scope: number, index: number) => {
      const b = Uint8Array.of(family, prefix, flags, scope, 0, 0, 0, 0);
      new DataView(b.buffer).setUint32(4, index, true);
      return b;
    };
    assert.deepEqual(
      decodeAddress(concatBytes(ifaddr(2, 24, 0x80, 0, 3), nlAttr(1, Uint8Array.of(10, 0, 0, 9)), nlAttr(2, Uint8Array.of(10, 0, 0, 2)))),
      { index: 3, address: { cidr: "10.0.0.2/24", family: 4, scope: "global", tentative: false, dadFailed: false } },
    );
    const v6 = Uint8Array.of(0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2);
    assert.deepEqual(decodeAddress(concatBytes(ifaddr(10, 64, 0, 253, 3), nlAttr(1, v6), nlU32(8, 0x48))).address, {
      cidr: "fd00::2/64",
      family: 6,
      scope: "link",
      tentative: true,
      dadFailed: true,
    });
    assert.equal(ipText(Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4)), "::ffff:1.2.3.4");
  });
});
