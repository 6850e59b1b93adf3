/**
 * The DHCPv6 client: every message it sends, byte for byte against RFC 8415 §18.2 (what each type carries), the
 * retransmission timeouts of §15, T1/T2/expiry from a REPLY (and the client's own when the server leaves them 0),
 * and its exchanges against in-memory servers: the choice among ADVERTISEs, giving up when none answers, the
 * NoBinding and ended-address answers to a renewal, and the RELEASE.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { hexOf } from "#sys/bytes.js";
import { FakeClock, FakeDhcp6Server, FakeSockets6 } from "#testing/fake-dhcp.js";
import { acquire6, type Binding6, bindingTimes6, buildMessage6, extend6, release6, retransmissionTimeout, type SendSpec6 } from "./client6.js";
import { duidLL, INFINITY6, Message6 } from "./packet6.js";

const hex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text.replace(/\s+/g, ""), "hex"));
const CLIENT_DUID = "0003 0001 020000000001";
const SERVER_DUID = "0003 0001 0200000000fe";
const ADDRESS = "fd00 0009 0000 0000 0000 0000 0000 0010";
const IA_WITH_ADDRESS = `0003 0028 f2bb5a52 00000000 00000000  0005 0018 ${ADDRESS} 00000000 00000000`;
const SPEC: SendSpec6 = { duid: hex(CLIENT_DUID), iaid: 0xf2bb5a52, oro: [23, 24], fqdn: hex("00 03 706f64") };
const settings = { timeoutMs: 1000, resendMaxMs: 62_000, resendTimeoutMs: 6000, broadcast: false };

describe("messages as sent (RFC 8415 §18.2)", () => {
  const server = hex(SERVER_DUID);
  test("SOLICIT: client id, an empty IA_NA, elapsed time, the request list, the name", () => {
    assert.deepEqual(
      buildMessage6(Message6.Solicit, { xid: 0x123456, elapsedMs: 0 }, SPEC),
      hex(`
      01 123456
      0001 000a ${CLIENT_DUID}
      0003 000c f2bb5a52 00000000 00000000
      0008 0002 0000
      0006 0004 0017 0018
      0027 0005 00 03 706f64`),
    );
  });
  test("REQUEST and RENEW: the server named, the address in the IA with lifetimes 0", () => {
    for (const type of [Message6.Request, Message6.Renew]) {
      assert.deepEqual(
        buildMessage6(type, { xid: 0xabcdef, elapsedMs: 1000, serverId: server, address: "fd00:9::10" }, SPEC),
        hex(`
        0${type} abcdef
        0001 000a ${CLIENT_DUID}
        0002 000a ${SERVER_DUID}
        ${IA_WITH_ADDRESS}
        0008 0002 0064
        0006 0004 0017 0018
        0027 0005 00 03 706f64`),
      );
    }
  });
  test("REBIND: no server named", () => {
    assert.deepEqual(
      buildMessage6(Message6.Rebind, { xid: 1, elapsedMs: 0, address: "fd00:9::10" }, { ...SPEC, fqdn: undefined }),
      hex(`
      06 000001
      0001 000a ${CLIENT_DUID}
      ${IA_WITH_ADDRESS}
      0008 0002 0000
      0006 0004 0017 0018`),
    );
  });
  test("RELEASE: client, server, the address; no request list nor name", () => {
    assert.deepEqual(
      buildMessage6(Message6.Release, { xid: 2, elapsedMs: 0, serverId: server, address: "fd00:9::10" }, SPEC),
      hex(`
      08 000002
      0001 000a ${CLIENT_DUID}
      0002 000a ${SERVER_DUID}
      ${IA_WITH_ADDRESS}
      0008 0002 0000`),
    );
  });
});

describe("timers", () => {
  test("retransmission: IRT ±10% (above IRT for the first SOLICIT), doubling ±10%, MRT ±10%", () => {
    const mid = () => 0.5;
    assert.equal(retransmissionTimeout(undefined, 1000, 0, mid), 1000);
    assert.equal(retransmissionTimeout(undefined, 1000, 0, mid, true), 1050);
    assert.ok(retransmissionTimeout(undefined, 1000, 0, () => 0.9999999, true) > 1000, "strictly above IRT");
    assert.equal(
      retransmissionTimeout(undefined, 1000, 0, () => 0),
      900,
    );
    assert.equal(retransmissionTimeout(1000, 1000, 0, mid), 2000);
    assert.equal(
      retransmissionTimeout(1000, 1000, 0, () => 0),
      1900,
    );
    assert.equal(retransmissionTimeout(20_000, 1000, 30_000, mid), 30_000);
    assert.equal(
      retransmissionTimeout(20_000, 1000, 30_000, () => 0),
      27_000,
    );
  });

  const ia = (t1: number, t2: number) => ({ iaid: 1, t1, t2, options: [] });
  const addr = (preferred: number, valid: number) => ({ address: "fd00:9::10", preferred, valid, options: [] });
  const now = 1_000_000;
  test("T1 and T2 from the IA_NA, expiry at the valid lifetime", () => {
    assert.deepEqual(bindingTimes6(ia(60, 105), addr(120, 180), now), {
      boundAt: now,
      renewAt: now + 60_000,
      rebindAt: now + 105_000,
      expiresAt: now + 180_000,
    });
  });
  test("T1 or T2 0: half and 80% of the preferred lifetime (the valid one when that is 0)", () => {
    assert.deepEqual(bindingTimes6(ia(0, 0), addr(100, 200), now), {
      boundAt: now,
      renewAt: now + 50_000,
      rebindAt: now + 80_000,
      expiresAt: now + 200_000,
    });
    assert.equal(bindingTimes6(ia(60, 0), addr(0, 200), now).renewAt, now + 100_000);
  });
  test("infinite lifetimes and times never come; none falls after expiry", () => {
    const forever = bindingTimes6(ia(INFINITY6, INFINITY6), addr(INFINITY6, INFINITY6), now);
    assert.deepEqual([forever.renewAt, forever.rebindAt, forever.expiresAt], [Infinity, Infinity, Infinity]);
    assert.deepEqual(bindingTimes6(ia(300, 400), addr(100, 200), now), {
      boundAt: now,
      renewAt: now + 200_000,
      rebindAt: now + 200_000,
      expiresAt: now + 200_000,
    });
  });
});

describe("exchanges", () => {
  const mac = Uint8Array.of(2, 0, 0, 0, 0, 1);
  const opener = (servers: FakeDhcp6Server[], clock: FakeClock) => {
    const opened: FakeSockets6[] = [];
    const open = async () => {
      const s = new FakeSockets6(servers, clock, "/run/netns/x", "eth0", mac);
      opened.push(s);
      return s;
    };
    return { open, opened };
  };
  const base = { iaid: 7, oro: [23, 24], duid: ({ hwType, mac: m }: { hwType: number; mac: Uint8Array }) => duidLL(hwType, m) };

  test("SOLICIT/ADVERTISE/REQUEST/REPLY: the DUID made from the interface, the binding from the REPLY", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    server.preference = 255;
    const { open, opened } = opener([server], clock);
    const { binding, spec } = await acquire6(open, base, settings, clock);
    assert.deepEqual(spec.duid, hex(CLIENT_DUID));
    assert.equal(binding.address, "fd00:9::10");
    assert.equal(binding.server, hexOf(server.serverId, ":"));
    assert.deepEqual(
      [binding.renewAt, binding.rebindAt, binding.expiresAt].map((t) => t - clock.now()),
      [30_000, 90_000, 120_000],
    );
    assert.deepEqual(
      server.received.map((r) => r.type),
      [Message6.Solicit, Message6.Request],
    );
    assert.equal(clock.now() - Date.UTC(2030, 0, 1), 0, "preference 255: no waiting for other servers");
    assert.ok(opened.every((s) => s.closed));
  });

  test("ADVERTISEs are collected for the first timeout and the most preferred server is asked", async () => {
    const clock = new FakeClock();
    const low = new FakeDhcp6Server(duidLL(1, Uint8Array.of(2, 0, 0, 0, 0, 0xa1)), 0x10);
    const high = new FakeDhcp6Server(duidLL(1, Uint8Array.of(2, 0, 0, 0, 0, 0xa2)), 0x20);
    high.preference = 10;
    const { open } = opener([low, high], clock);
    const pending = acquire6(open, base, settings, clock);
    await clock.advance(1050);
    const { binding } = await pending;
    assert.equal(binding.address, "fd00:9::20");
    assert.equal(binding.server, hexOf(high.serverId, ":"));
    const [req] = high.got(Message6.Request);
    assert.deepEqual(req!.msg.options.find((o) => o.code === 2)?.value, high.serverId, "the REQUEST names the preferred server");
  });

  test("no server: code 11 within -resendtimeout, SOLICITs at 0, 1.05 s and 3.15 s", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    server.silent = true;
    const { open, opened } = opener([server], clock);
    const pending = acquire6(open, base, settings, clock).then(
      () => undefined,
      (e: unknown) => e,
    );
    await clock.advance(7000);
    const err = (await pending) as { code: number; msg: string };
    assert.deepEqual(
      { code: err.code, msg: err.msg },
      { code: 11, msg: "no DHCPv6 lease for eth0 in /run/netns/x: no ADVERTISE within 6s (3 SOLICITs)" },
    );
    assert.equal(server.got(Message6.Solicit).length, 3);
    assert.ok(opened.every((s) => s.closed));
  });

  test("an ADVERTISE without addresses is ignored (RFC 8415 §18.2.9), and said when nothing better comes", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    server.exhausted = true;
    const { open } = opener([server], clock);
    const pending = acquire6(open, base, settings, clock).then(
      () => undefined,
      (e: unknown) => e,
    );
    await clock.advance(7000);
    assert.match(((await pending) as Error).message, /: ADVERTISE from 00:03:00:01:02:00:00:00:00:fe: NoAddrsAvail \(no addresses\) within 6s/);
    assert.equal(server.got(Message6.Request).length, 0);
  });

  const bound = (server: FakeDhcp6Server): Binding6 => ({
    reply: new Uint8Array(),
    address: "fd00:9::10",
    serverId: server.serverId,
    server: hexOf(server.serverId, ":"),
    boundAt: 0,
    renewAt: 0,
    rebindAt: 0,
    expiresAt: 0,
  });
  const spec: SendSpec6 = { duid: hex(CLIENT_DUID), iaid: 7, oro: [23, 24] };

  test("RENEW names the server; REBIND does not; both get the address's new times", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    const { open } = opener([server], clock);
    for (const mode of ["renew", "rebind"] as const) {
      const out = await extend6(open, bound(server), mode, spec, settings, clock);
      assert.ok("binding" in out && out.binding.expiresAt === clock.now() + 120_000, JSON.stringify(out));
    }
    const [renew, rebind] = server.received;
    assert.deepEqual([renew!.type, rebind!.type], [Message6.Renew, Message6.Rebind]);
    assert.ok(renew!.msg.options.some((o) => o.code === 2) && !rebind!.msg.options.some((o) => o.code === 2));
  });

  test("a NoBinding answer to a RENEW is followed by a REQUEST for the same address", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    server.forgetBindings = true;
    const { open } = opener([server], clock);
    const out = await extend6(open, bound(server), "renew", spec, settings, clock);
    assert.ok("binding" in out && out.binding.address === "fd00:9::10");
    assert.deepEqual(
      server.received.map((r) => r.type),
      [Message6.Renew, Message6.Request],
    );
  });

  test("a REPLY that ends the address (valid lifetime 0) is a refusal; silence is a problem", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    server.endNext = true;
    const { open } = opener([server], clock);
    assert.deepEqual(await extend6(open, bound(server), "renew", spec, settings, clock), {
      nak: "REPLY from 00:03:00:01:02:00:00:00:00:fe ends fd00:9::10 (valid lifetime 0)",
    });
    server.silent = true;
    const pending = extend6(open, bound(server), "rebind", spec, settings, clock);
    await clock.advance(1000);
    assert.deepEqual(await pending, { problem: "no REPLY to a REBIND" });
  });

  test("RELEASE: confirmed by the server's REPLY; retransmitted, then given up, when none comes", async () => {
    const clock = new FakeClock();
    const server = new FakeDhcp6Server();
    const { open } = opener([server], clock);
    server.bindings.set(`${hexOf(spec.duid, ":")}/7`, "fd00:9::10");
    assert.equal(await release6(open, bound(server), spec, clock), "confirmed by 00:03:00:01:02:00:00:00:00:fe (Success (released))");
    assert.equal(server.bindings.size, 0);
    server.silent = true;
    const pending = release6(open, bound(server), spec, clock);
    await clock.advance(5000);
    assert.equal(await pending, "sent 2 times, no REPLY within 3s");
    assert.equal(server.got(Message6.Release).length, 3);
  });
});
