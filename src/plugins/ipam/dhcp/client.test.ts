/**
 * The client's timers and messages: T1/T2/expiry from the server's options (and the defaults when they are
 * missing or inconsistent), the resend backoff, Go-style durations in messages, and what each message type
 * carries (a RELEASE only names the lease; a provided client id replaces the generated one).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FakeClock, FakeDhcpServer, FakeSockets } from "#testing/fake-dhcp.js";
import { type Binding, backoffDelay, bindingTimes, buildMessage, extend, formatDuration, release, type SendSpec } from "./client.js";
import { MessageType, Option } from "./option-codes.js";
import { decodeMessage, INFINITE_TIME, newRequest, u32Option } from "./packet.js";

const ack = (options: Record<number, number>) => {
  const m = newRequest({ xid: 1, chaddr: Uint8Array.of(1, 2, 3, 4, 5, 6) });
  for (const [code, v] of Object.entries(options)) m.options.set(Number(code), u32Option(v));
  return m;
};
const SPEC: SendSpec = { clientIdOption: Uint8Array.from([0, ...Buffer.from("c/n/eth0")]), options: new Map(), requestList: [1, 3] };

describe("lease times", () => {
  const now = 1_000_000;
  test("from options 51, 58 and 59", () => {
    assert.deepEqual(bindingTimes(ack({ 51: 600, 58: 100, 59: 500 }), now), {
      boundAt: now,
      renewAt: now + 100_000,
      rebindAt: now + 500_000,
      expiresAt: now + 600_000,
    });
  });
  test("defaults: 60 min, T1 half, T2 85% (upstream's)", () => {
    assert.deepEqual(bindingTimes(ack({}), now), { boundAt: now, renewAt: now + 1_800_000, rebindAt: now + 3_060_000, expiresAt: now + 3_600_000 });
    assert.deepEqual(bindingTimes(ack({ 51: 200 }), now).renewAt, now + 100_000);
  });
  test("inconsistent T1/T2 fall back to the defaults; T1 never after T2", () => {
    assert.equal(bindingTimes(ack({ 51: 100, 58: 150, 59: 200 }), now).rebindAt, now + 85_000);
    assert.equal(bindingTimes(ack({ 51: 100, 58: 150, 59: 200 }), now).renewAt, now + 50_000);
    assert.equal(bindingTimes(ack({ 51: 100, 59: 20 }), now).renewAt, now + 20_000);
  });
  test("an infinite lease never renews", () => {
    const t = bindingTimes(ack({ 51: INFINITE_TIME }), now);
    assert.equal(t.renewAt, Infinity);
    assert.equal(t.expiresAt, Infinity);
  });
});

describe("resend backoff", () => {
  test("four quick resends of 2 s, then 4 s doubling up to -resendmax, each ±1 s", () => {
    const mid = () => 0.5;
    assert.deepEqual(
      Array.from({ length: 9 }, (_, i) => backoffDelay(i, 62_000, mid)),
      [2000, 2000, 2000, 2000, 4000, 8000, 16000, 32000, 62000],
    );
    assert.equal(
      backoffDelay(0, 62_000, () => 0),
      1000,
    );
    assert.ok(Math.abs(backoffDelay(5, 62_000, () => 0.9999999) - 8999.9998) < 1e-6);
    assert.equal(backoffDelay(100, 10_000, mid), 10_000);
  });
  test("durations print as Go prints them", () => {
    assert.equal(formatDuration(10_000), "10s");
    assert.equal(formatDuration(62_000), "1m2s");
    assert.equal(formatDuration(208_000), "3m28s");
    assert.equal(formatDuration(1500), "1.5s");
    assert.equal(formatDuration(3_600_000), "1h0m0s");
  });
});

describe("messages", () => {
  const mac = Uint8Array.of(2, 0, 0, 0, 0, 1);
  test("a REQUEST carries the client id, the config's options, max message size and the request list last", () => {
    const spec: SendSpec = {
      ...SPEC,
      options: new Map([
        [Option.HostName, Uint8Array.from(Buffer.from("pod"))],
        [Option.VendorClassID, Uint8Array.from(Buffer.from("v"))],
      ]),
    };
    const m = decodeMessage(buildMessage(MessageType.Request, { xid: 9, mac, requestedIP: "10.0.0.5", serverID: "10.0.0.1", broadcast: true }, spec));
    assert.deepEqual(
      [...m.options.keys()],
      [
        Option.MessageType,
        Option.ClientID,
        Option.RequestedIP,
        Option.ServerID,
        Option.MaxMessageSize,
        Option.HostName,
        Option.VendorClassID,
        Option.ParameterRequestList,
      ],
    );
    assert.equal(m.flags, 0x8000);
    assert.deepEqual(m.chaddr, mac);
  });
  test("a provided client id (option 61) replaces the generated one, in every message", () => {
    const spec: SendSpec = { ...SPEC, options: new Map([[Option.ClientID, Uint8Array.from(Buffer.from("mine"))]]) };
    for (const type of [MessageType.Discover, MessageType.Release]) {
      assert.deepEqual(decodeMessage(buildMessage(type, { xid: 1, mac }, spec)).options.get(Option.ClientID), Uint8Array.from(Buffer.from("mine")));
    }
  });
  test("a RELEASE names the address, the server and the client, nothing else", () => {
    const m = decodeMessage(
      buildMessage(
        MessageType.Release,
        { xid: 1, mac, ciaddr: "10.0.0.5", serverID: "10.0.0.1" },
        { ...SPEC, options: new Map([[12, Uint8Array.of(0x61)]]) },
      ),
    );
    assert.equal(m.ciaddr, "10.0.0.5");
    assert.deepEqual([...m.options.keys()], [Option.MessageType, Option.ClientID, Option.ServerID]);
  });
});

describe("renew and release paths", () => {
  const clock = new FakeClock();
  const server = new FakeDhcpServer();
  const binding: Binding = {
    ack: new Uint8Array(),
    address: "10.9.0.10",
    server: server.ip,
    mac: Uint8Array.of(2, 0, 0, 0, 0, 1),
    boundAt: 0,
    renewAt: 0,
    rebindAt: 0,
    expiresAt: 0,
  };
  const settings = { timeoutMs: 1000, resendMaxMs: 62_000, resendTimeoutMs: 10_000, broadcast: false };
  const sockets = () => Promise.resolve(new FakeSockets(server, clock, "/run/netns/x", "eth0", binding.mac));

  test("rebinding broadcasts from the leased address", async () => {
    server.received = [];
    const out = await extend(sockets, binding, "rebind", SPEC, settings, clock);
    assert.ok("binding" in out);
    assert.deepEqual(
      server.received.map((r) => r.how),
      ["broadcast"],
    );
  });
  test("a release the container cannot route is broadcast on its interface", async () => {
    server.received = [];
    const how = await release(sockets, { ...binding, server: "10.200.0.1" }, SPEC, clock);
    assert.match(how, /broadcast/);
    assert.equal(server.received[0]!.type, MessageType.Release);
  });
  test("an interface without the lease's address renews and releases by broadcast (a unicast would be lost)", async () => {
    const unconfigured = async () => Object.assign(await sockets(), { configured: false });
    server.received = [];
    assert.ok("binding" in (await extend(unconfigured, binding, "renew", SPEC, settings, clock)));
    assert.match(await release(unconfigured, binding, SPEC, clock), /broadcast \(10\.9\.0\.10 is not on eth0/);
    assert.deepEqual(
      server.received.map((r) => r.how),
      ["broadcast", "broadcast"],
    );
  });
});
