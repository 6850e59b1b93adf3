/**
 * The DHCP wire format against real packets: a DISCOVER this client sent to dnsmasq 2.90 (Debian's
 * dnsmasq-base) in a test namespace, and dnsmasq's OFFER and ACK to it (captured from the daemon's packet
 * socket), plus round trips, every option kind the client reads, and malformed input, which must raise
 * DhcpFormatError and nothing else.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MessageType, Option } from "./option-codes.js";
import {
  DhcpFormatError,
  decodeIpUdp,
  decodeMessage,
  encodeClasslessRoutes,
  encodeDomainSearch,
  encodeIpUdp,
  encodeMessage,
  ipv4Bytes,
  maskPrefix,
  messageType,
  newRequest,
  parseClasslessRoutes,
  parseDomainSearch,
  parseStaticRoutes,
  readAddresses,
  readText,
  readU32,
} from "./packet.js";

/** A captured message: its first bytes, zeros up to the 236-byte header, then the cookie and options. */
const captured = (head: string, options: string): Uint8Array => Buffer.from(head.padEnd(236 * 2, "0") + options, "hex");

const MAC = Uint8Array.from([0x0e, 0x77, 0x0d, 0x0b, 0x0e, 0x73]);
const DISCOVER = captured(
  "010106001234567800000000000000000000000000000000000000000e770d0b0e73",
  "638253633501013d0e00637472312f6e65742f6574683037060103060f7779ff" + "00".repeat(32),
);
const DNSMASQ_OPTIONS =
  "36040aed00013304000000783a04000000053b04000000690104ffffff001c040aed00ff7716057473636e69047465737400076578616d706c65c006790c100a630aed0001000aed00010f0a7473636e692e7465737406040aed003503040aed0001ff";
const OFFER = captured("020106001234567800000000000000000aed00430aed0001000000000e770d0b0e73", `63825363350102${DNSMASQ_OPTIONS}`);
const ACK = captured("020106001234567800000000000000000aed00430aed0001000000000e770d0b0e73", `63825363350105${DNSMASQ_OPTIONS}`);

describe("DHCP messages", () => {
  test("the DISCOVER dnsmasq answered is exactly what the encoder makes", () => {
    const m = newRequest({ xid: 0x12345678, chaddr: MAC });
    m.options.set(Option.MessageType, Uint8Array.of(MessageType.Discover));
    m.options.set(Option.ClientID, Uint8Array.from([0, ...Buffer.from("ctr1/net/eth0")]));
    m.options.set(Option.ParameterRequestList, Uint8Array.of(1, 3, 6, 15, 119, 121));
    assert.deepEqual(Buffer.from(encodeMessage(m)).toString("hex"), Buffer.from(DISCOVER).toString("hex"));
    assert.equal(DISCOVER.length, 300, "padded to the BOOTP minimum");
  });

  test("dnsmasq's OFFER and ACK decode", () => {
    const offer = decodeMessage(OFFER);
    assert.equal(messageType(offer), MessageType.Offer);
    assert.equal(offer.xid, 0x12345678);
    assert.equal(offer.yiaddr, "10.237.0.67");
    assert.equal(offer.siaddr, "10.237.0.1");
    assert.deepEqual(offer.chaddr, MAC);
    const ack = decodeMessage(ACK);
    assert.equal(messageType(ack), MessageType.Ack);
    assert.deepEqual(readAddresses(ack.options.get(Option.ServerID)), ["10.237.0.1"]);
    assert.equal(readU32(ack.options.get(Option.LeaseTime)), 120);
    assert.equal(readU32(ack.options.get(Option.RenewalTime)), 5);
    assert.equal(readU32(ack.options.get(Option.RebindingTime)), 105);
    assert.equal(maskPrefix(ack.options.get(Option.SubnetMask)!), 24);
    assert.deepEqual(readAddresses(ack.options.get(Option.Router)), ["10.237.0.1"]);
    assert.deepEqual(readAddresses(ack.options.get(Option.DomainNameServer)), ["10.237.0.53"]);
    assert.equal(readText(ack.options.get(Option.DomainName)), "tscni.test");
    // dnsmasq compresses the search list: "example.test" points back at "test".
    assert.deepEqual(parseDomainSearch(ack.options.get(Option.DomainSearch)!), ["tscni.test", "example.test"]);
    assert.deepEqual(parseClasslessRoutes(ack.options.get(Option.ClasslessStaticRoutes)!), [
      { dst: "10.99.0.0/16", router: "10.237.0.1" },
      { dst: "0.0.0.0/0", router: "10.237.0.1" },
    ]);
  });

  test("encode and decode are inverses, header fields and option order included", () => {
    const m = newRequest({ xid: 0xdeadbeef, chaddr: MAC, flags: 0x8000, secs: 7, ciaddr: "10.1.2.3" });
    m.sname = "server";
    m.file = "boot/file";
    m.options.set(Option.MessageType, Uint8Array.of(MessageType.Request));
    m.options.set(Option.ClientID, Uint8Array.of(0, 0x61));
    m.options.set(Option.HostName, Uint8Array.from(Buffer.from("pod-a")));
    m.options.set(224, new Uint8Array(0));
    assert.deepEqual(decodeMessage(encodeMessage(m)), m);
    // The message type goes first on the wire wherever it was set.
    const late = newRequest({ xid: 1, chaddr: MAC });
    late.options.set(Option.ClientID, Uint8Array.of(0, 0x61));
    late.options.set(Option.MessageType, Uint8Array.of(MessageType.Request));
    assert.deepEqual([...decodeMessage(encodeMessage(late)).options.keys()], [Option.MessageType, Option.ClientID]);
  });

  test("options over 255 bytes are split on the wire and joined again (RFC 3396)", () => {
    const m = newRequest({ xid: 1, chaddr: MAC });
    const long = Uint8Array.from({ length: 600 }, (_, i) => i & 0xff);
    m.options.set(Option.MessageType, Uint8Array.of(1));
    m.options.set(Option.ClasslessStaticRoutes, long);
    const wire = encodeMessage(m);
    assert.deepEqual([wire[243], wire[244]], [Option.ClasslessStaticRoutes, 255]);
    assert.deepEqual(decodeMessage(wire).options.get(Option.ClasslessStaticRoutes), long);
  });

  test("option overload: options in the file and sname fields are read", () => {
    const bytes = encodeMessage(
      Object.assign(newRequest({ xid: 2, chaddr: MAC }), {
        options: new Map([
          [Option.MessageType, Uint8Array.of(2)],
          [Option.Overload, Uint8Array.of(3)],
        ]),
      }),
    );
    bytes.set([Option.DomainName, 3, 0x61, 0x62, 0x63, Option.End], 108); // file
    bytes.set([Option.HostName, 1, 0x68, Option.End], 44); // sname
    const m = decodeMessage(bytes);
    assert.equal(readText(m.options.get(Option.DomainName)), "abc");
    assert.equal(readText(m.options.get(Option.HostName)), "h");
    assert.equal(m.file, "");
    assert.equal(m.sname, "");
  });

  test("malformed messages are DhcpFormatErrors", () => {
    const bad = (bytes: Uint8Array, what: RegExp) =>
      assert.throws(
        () => decodeMessage(bytes),
        (e: Error) => e instanceof DhcpFormatError && what.test(e.message),
      );
    bad(ACK.subarray(0, 239), /at least 240 bytes/);
    const cookie = Uint8Array.from(ACK);
    cookie[236] = 0;
    bad(cookie, /magic cookie/);
    const op = Uint8Array.from(ACK);
    op[0] = 9;
    bad(op, /op 9/);
    const hlen = Uint8Array.from(ACK);
    hlen[2] = 17;
    bad(hlen, /length 17/);
    bad(captured("0201060000000001", "63825363350102" + "3308000000"), /runs past/);
    bad(captured("0201060000000001", "6382536335"), /no length/);
  });

  test("random bytes never throw anything but DhcpFormatError", () => {
    let seed = 42;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff;
    for (let i = 0; i < 2000; i++) {
      const buf = Uint8Array.from(ACK);
      for (let k = 0; k < 8; k++) buf[240 + (rnd() % (buf.length - 240))] = rnd();
      const cut = i % 3 === 0 ? buf.subarray(0, 240 + (rnd() % 60)) : buf;
      try {
        decodeMessage(cut);
      } catch (e) {
        assert.ok(e instanceof DhcpFormatError, String(e));
      }
      const opt = cut.subarray(240);
      for (const parse of [parseClasslessRoutes, parseDomainSearch, parseStaticRoutes]) {
        try {
          parse(opt);
        } catch (e) {
          assert.ok(e instanceof DhcpFormatError, String(e));
        }
      }
    }
  });
});

describe("option values", () => {
  test("classless static routes (121): widths 0 to 32 and the significant octets only", () => {
    const routes = [
      { dst: "0.0.0.0/0", router: "10.0.0.1" },
      { dst: "10.0.0.0/8", router: "10.0.0.2" },
      { dst: "10.17.0.0/17", router: "0.0.0.0" },
      { dst: "192.168.1.7/32", router: "10.0.0.3" },
    ];
    const bytes = encodeClasslessRoutes(routes);
    assert.deepEqual([...bytes.subarray(0, 5)], [0, 10, 0, 0, 1]);
    assert.deepEqual(parseClasslessRoutes(bytes), routes);
    assert.throws(() => parseClasslessRoutes(Uint8Array.of(33, 1, 2, 3, 4, 5, 6, 7, 8)), /width 33/);
    assert.throws(() => parseClasslessRoutes(Uint8Array.of(24, 10, 0, 0, 10, 0)), /cut short/);
  });

  test("static routes (33) take classful prefixes and skip class D and E", () => {
    assert.deepEqual(
      parseStaticRoutes(Uint8Array.of(10, 1, 0, 0, 10, 0, 0, 1, 172, 16, 0, 0, 10, 0, 0, 2, 192, 168, 5, 0, 10, 0, 0, 3, 224, 0, 0, 0, 10, 0, 0, 4)),
      [
        { dst: "10.1.0.0/8", router: "10.0.0.1" },
        { dst: "172.16.0.0/16", router: "10.0.0.2" },
        { dst: "192.168.5.0/24", router: "10.0.0.3" },
      ],
    );
  });

  test("domain search (119): plain names, pointers, and pointers that loop or point forward", () => {
    assert.deepEqual(parseDomainSearch(encodeDomainSearch(["a.example", "b.test"])), ["a.example", "b.test"]);
    assert.throws(() => parseDomainSearch(Uint8Array.of(1, 0x61, 0xc0, 0x00)), /points forward|loop/);
    assert.throws(() => parseDomainSearch(Uint8Array.of(5, 0x61)), /runs past/);
  });

  test("netmasks: contiguous ones give a prefix, others none", () => {
    assert.equal(maskPrefix(ipv4Bytes("255.255.255.0")), 24);
    assert.equal(maskPrefix(ipv4Bytes("255.255.255.255")), 32);
    assert.equal(maskPrefix(ipv4Bytes("0.0.0.0")), 0);
    assert.equal(maskPrefix(ipv4Bytes("255.255.128.0")), 17);
    assert.equal(maskPrefix(ipv4Bytes("255.0.255.0")), undefined);
  });

  test("text and address options", () => {
    assert.equal(readText(Uint8Array.from(Buffer.from("name\0\0"))), "name");
    assert.equal(readAddresses(Uint8Array.of(1, 2, 3)), undefined);
    assert.equal(readU32(Uint8Array.of(1, 2)), undefined);
    assert.throws(() => ipv4Bytes("10.0.0.256"), DhcpFormatError);
  });
});

describe("IPv4/UDP framing", () => {
  test("a datagram round-trips and its header checksum verifies", () => {
    const payload = Uint8Array.from(DISCOVER);
    const packet = encodeIpUdp(payload, "0.0.0.0", "255.255.255.255", 68, 67);
    assert.equal(packet.length, 20 + 8 + payload.length);
    const d = decodeIpUdp(packet);
    assert.deepEqual(d, { src: "0.0.0.0", dst: "255.255.255.255", srcPort: 68, dstPort: 67, payload });
    const broken = Uint8Array.from(packet);
    broken[8] = 1; // TTL changed, checksum not
    assert.throws(() => decodeIpUdp(broken), /checksum/);
  });

  test("what is not one whole UDP datagram is rejected", () => {
    const packet = encodeIpUdp(Uint8Array.of(1, 2, 3), "10.0.0.1", "10.0.0.2", 67, 68);
    assert.throws(() => decodeIpUdp(packet.subarray(0, 20)), /too short/);
    const fragment = Uint8Array.from(packet);
    fragment[6] = 0x20; // more fragments (the checksum does not matter: it is checked first, so fix it up)
    const view = new DataView(fragment.buffer);
    view.setUint16(10, 0);
    let sum = 0;
    for (let i = 0; i < 20; i += 2) sum += view.getUint16(i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
    view.setUint16(10, ~sum & 0xffff);
    assert.throws(() => decodeIpUdp(fragment), /fragment/);
    const tcp = Uint8Array.from(packet);
    tcp[9] = 6;
    assert.throws(() => decodeIpUdp(tcp), /checksum|not UDP/);
  });
});
