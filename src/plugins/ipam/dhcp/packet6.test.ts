/**
 * The DHCPv6 codec against bytes written by hand from RFC 8415's formats (§8 the message, §21 the options, §11 the
 * DUIDs), RFC 3646 (DNS servers, domain list), RFC 4704 (the client's name) and RFC 6355 (DUID-UUID): every option
 * and message the client sends or reads, and what a malformed packet is refused for.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DhcpFormatError, encodeDomainSearch, parseDomainSearch } from "./packet.js";
import {
  allOptions,
  clientFqdn,
  decodeIaAddress,
  decodeIaNa,
  decodeMessage6,
  decodeOptions,
  decodeOro,
  decodeStatus,
  duidLL,
  duidLLT,
  duidUUID,
  elapsedTime,
  encodeIaAddress,
  encodeIaNa,
  encodeMessage6,
  encodeOro,
  encodeStatus,
  firstOption,
  Message6,
  Option6,
  readAddresses6,
  Status6,
  statusOf,
} from "./packet6.js";

/** Bytes from hex, spaces and line breaks ignored. */
const hex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text.replace(/\s+/g, ""), "hex"));

const CLIENT_DUID = "0003 0001 020000000001"; // DUID-LL, Ethernet, 02:00:00:00:00:01
const SERVER_DUID = "0001 0001 329aab57 0200000000fe"; // DUID-LLT, Ethernet, a time, 02:00:00:00:00:fe
const ADDRESS = "fd00 0009 0000 0000 0000 0000 0000 0010"; // fd00:9::10

describe("DUIDs", () => {
  const mac = hex("020000000001");
  test("DUID-LL: type 3, hardware type, address", () => {
    assert.deepEqual(duidLL(1, mac), hex(CLIENT_DUID));
  });
  test("DUID-LLT: type 1, hardware type, seconds since 2000-01-01 UTC, address", () => {
    assert.deepEqual(duidLLT(1, mac, Date.UTC(2000, 0, 1, 0, 0, 10)), hex("0001 0001 0000000a 020000000001"));
    assert.deepEqual(
      duidLLT(1, mac, Date.UTC(2026, 10, 26)).subarray(4, 8),
      hex((Date.UTC(2026, 10, 26) / 1000 - 946_684_800).toString(16).padStart(8, "0")),
    );
  });
  test("DUID-UUID: type 4 and the UUID's 16 bytes", () => {
    const uuid = hex("0123456789abcdef0123456789abcdef");
    assert.deepEqual(duidUUID(uuid), hex("0004 0123456789abcdef0123456789abcdef"));
    assert.throws(() => duidUUID(uuid.subarray(1)), DhcpFormatError);
  });
});

describe("options", () => {
  test("IA_NA: IAID, T1, T2, then its options (an IA Address)", () => {
    const bytes = hex(`f2bb5a52 0000003c 00000069  0005 0018 ${ADDRESS} 00000078 000000b4`);
    const ia = decodeIaNa(bytes);
    assert.deepEqual({ iaid: ia.iaid, t1: ia.t1, t2: ia.t2 }, { iaid: 0xf2bb5a52, t1: 60, t2: 105 });
    assert.deepEqual(decodeIaAddress(firstOption(ia.options, Option6.IAAddr)!), { address: "fd00:9::10", preferred: 120, valid: 180, options: [] });
    assert.deepEqual(encodeIaNa(ia), bytes);
    assert.deepEqual(encodeIaNa({ iaid: 0xf2bb5a52, t1: 0, t2: 0, options: [] }), hex("f2bb5a52 00000000 00000000"));
  });

  test("IA Address: address, preferred and valid lifetimes, its own options (a status)", () => {
    const bytes = hex(`${ADDRESS} ffffffff ffffffff  000d 0006 0002 6e6f6e65`);
    const a = decodeIaAddress(bytes);
    assert.deepEqual(
      { address: a.address, preferred: a.preferred, valid: a.valid },
      { address: "fd00:9::10", preferred: 0xffffffff, valid: 0xffffffff },
    );
    assert.deepEqual(statusOf(a.options), { code: Status6.NoAddrsAvail, message: "none" });
    assert.deepEqual(encodeIaAddress(a), bytes);
  });

  test("Status Code: a 16-bit code and a UTF-8 message; Success when absent", () => {
    const bytes = hex("0000 73756363657373");
    assert.deepEqual(decodeStatus(bytes), { code: 0, message: "success" });
    assert.deepEqual(encodeStatus({ code: 3, message: "" }), hex("0003"));
    assert.deepEqual(statusOf([]), { code: Status6.Success, message: "" });
  });

  test("Option Request: 16-bit codes", () => {
    assert.deepEqual(encodeOro([23, 24]), hex("0017 0018"));
    assert.deepEqual(decodeOro(hex("0017 0018 0027")), [23, 24, 39]);
  });

  test("Elapsed Time: hundredths of a second, at most 0xffff", () => {
    assert.deepEqual(elapsedTime(0), hex("0000"));
    assert.deepEqual(elapsedTime(1234), hex("007b"));
    assert.deepEqual(elapsedTime(3_600_000), hex("ffff"));
  });

  test("DNS Recursive Name Server (23): 16-byte addresses; Domain Search List (24): uncompressed names", () => {
    assert.deepEqual(readAddresses6(hex(`fd00000900000000000000000000 0053 ${"fe80 0000 0000 0000 0000 0000 0000 0001"}`)), [
      "fd00:9::53",
      "fe80::1",
    ]);
    assert.equal(readAddresses6(hex("fd00")), undefined);
    const list = hex("05 7473636e69 04 74657374 00  03 6c6162 00");
    assert.deepEqual(parseDomainSearch(list), ["tscni.test", "lab"]);
    assert.deepEqual(encodeDomainSearch(["tscni.test", "lab"]), list);
  });

  test("Client FQDN (39): flags, then one label without its terminating zero (partial) or a whole name", () => {
    assert.deepEqual(clientFqdn("pod"), hex("00 03 706f64"));
    assert.deepEqual(clientFqdn("web.lab"), hex("00 03 776562 03 6c6162 00"));
    assert.deepEqual(clientFqdn("web.lab."), hex("00 03 776562 03 6c6162 00"));
    assert.equal(clientFqdn(""), undefined);
    assert.equal(clientFqdn("a..b"), undefined);
    assert.equal(clientFqdn("x".repeat(64)), undefined);
  });

  test("options repeat and keep their order", () => {
    const opts = decodeOptions(hex("0003 0000  0008 0002 0001  0003 0000"), "a test");
    assert.deepEqual(
      opts.map((o) => o.code),
      [3, 8, 3],
    );
    assert.equal(allOptions(opts, Option6.IANA).length, 2);
  });
});

describe("messages", () => {
  /** What the client sends, hand-written: a SOLICIT (RFC 8415 §18.2.1). */
  const solicit = hex(`
    01 123456
    0001 000a ${CLIENT_DUID}
    0003 000c f2bb5a52 00000000 00000000
    0008 0002 0000
    0006 0004 0017 0018
    0027 0005 00 03 706f64`);

  test("a SOLICIT: type, 24-bit transaction id, options in order", () => {
    const m = decodeMessage6(solicit);
    assert.equal(m.type, Message6.Solicit);
    assert.equal(m.xid, 0x123456);
    assert.deepEqual(
      m.options.map((o) => o.code),
      [Option6.ClientID, Option6.IANA, Option6.ElapsedTime, Option6.ORO, Option6.ClientFQDN],
    );
    assert.deepEqual(encodeMessage6(m), solicit);
  });

  test("an ADVERTISE as a server sends it: the offered address in the IA, preference, DNS, status", () => {
    const advertise = hex(`
      02 123456
      0001 000a ${CLIENT_DUID}
      0002 000e ${SERVER_DUID}
      0003 0028 f2bb5a52 0000003c 00000069  0005 0018 ${ADDRESS} 00000078 00000078
      000d 0009 0000 73756363657373
      0007 0001 ff
      0018 000c 05 7473636e69 04 74657374 00
      0017 0010 fd00 0009 0000 0000 0000 0000 0000 0053`);
    const m = decodeMessage6(advertise);
    assert.equal(m.type, Message6.Advertise);
    assert.deepEqual(firstOption(m.options, Option6.ServerID), hex(SERVER_DUID));
    assert.equal(firstOption(m.options, Option6.Preference)![0], 255);
    const ia = decodeIaNa(firstOption(m.options, Option6.IANA)!);
    assert.equal(decodeIaAddress(firstOption(ia.options, Option6.IAAddr)!).address, "fd00:9::10");
    assert.deepEqual(readAddresses6(firstOption(m.options, Option6.DNSServers)), ["fd00:9::53"]);
    assert.deepEqual(parseDomainSearch(firstOption(m.options, Option6.DomainList)!), ["tscni.test"]);
    assert.deepEqual(statusOf(m.options), { code: 0, message: "success" });
    assert.deepEqual(encodeMessage6(m), advertise);
  });

  test("a REPLY whose IA says NoAddrsAvail", () => {
    const reply = hex(`
      07 abcdef
      0001 000a ${CLIENT_DUID}
      0002 000e ${SERVER_DUID}
      0003 0016 f2bb5a52 00000000 00000000  000d 0006 0002 6e6f6e65`);
    const ia = decodeIaNa(firstOption(decodeMessage6(reply).options, Option6.IANA)!);
    assert.deepEqual(statusOf(ia.options), { code: Status6.NoAddrsAvail, message: "none" });
  });

  test("malformed packets are refused, saying why", () => {
    const refused: Array<[Uint8Array, RegExp]> = [
      [hex("01 1234"), /at least 4 bytes/],
      [hex("0c 000000"), /not a client\/server message/], // RELAY-FORW
      [hex("00 000000"), /not a client\/server message/],
      [hex("07 000001 0001 0010 0003"), /option 1 in the message runs past its end/],
      [hex("07 000001 0001 00"), /header in the message is cut short/],
    ];
    for (const [bytes, why] of refused)
      assert.throws(
        () => decodeMessage6(bytes),
        (e: Error) => e instanceof DhcpFormatError && why.test(e.message),
        why.source,
      );
    assert.throws(() => decodeIaNa(hex("00000001 00000000")), /at least 12 bytes/);
    assert.throws(() => decodeIaAddress(hex(ADDRESS)), /at least 24 bytes/);
    assert.throws(() => decodeStatus(hex("00")), /at least 2 bytes/);
    assert.throws(() => decodeOro(hex("001700")), /not a list of 16-bit codes/);
    assert.throws(() => decodeIaNa(hex("00000001 00000000 00000000 0005 0020 00")), /option 5 in an IA_NA runs past its end/);
  });

  test("what cannot be encoded is refused", () => {
    assert.throws(() => encodeMessage6({ type: Message6.Solicit, xid: 0x1000000, options: [] }), /24 bits/);
    assert.throws(() => encodeMessage6({ type: Message6.RelayForw, xid: 1, options: [] }), /not a client\/server message/);
    assert.throws(() => encodeIaAddress({ address: "10.0.0.1", preferred: 0, valid: 0, options: [] }), /not an IPv6 address/);
  });
});
