/**
 * DHCPv6 leases in the daemon, alone and beside DHCPv4 ones, against in-memory servers and a fake clock
 * (src/testing/fake-dhcp.ts): the result of each and of both, the DUID and the client's name, a dual-stack ADD that
 * half succeeds rolled back in either direction, renewal at T1 and rebinding at T2, expiry and refusal removing the
 * address (not setting the link down), DEL and GC releasing both families, CHECK acquiring a missing family, and a
 * restart that takes up both records from disk.
 */

import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { describe, test } from "node:test";
import { FakeWorld, settle } from "#testing/fake-dhcp.js";
import { useTempDirs } from "#testing/temp.js";
import { type LeaseRecord6, LeaseStore } from "./lease-file.js";
import { LeaseManager } from "./leases.js";
import { MessageType } from "./option-codes.js";
import { DuidType, decodeIaNa, firstOption, Message6, Option6 } from "./packet6.js";
import type { WireArgs } from "./protocol.js";

const tempDir = useTempDirs("tscni-dhcp-leases6-");
const config = (ipam: Record<string, unknown> = {}, name = "net1") =>
  Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name, type: "dhcp", ipam: { type: "dhcp", families: ["ipv4", "ipv6"], ...ipam } }));

function attachment(world: FakeWorld, ctr: string, opts: { cniArgs?: string; ipam?: Record<string, unknown>; name?: string } = {}): WireArgs {
  const netns = `/run/netns/${ctr}`;
  world.addLink(netns, "eth0");
  return { containerID: ctr, netns, ifName: "eth0", args: opts.cniArgs ?? "", path: "/opt/cni/bin", stdinData: config(opts.ipam, opts.name) };
}

/** A world whose DHCPv6 server answers at once (preference 255), so acquisitions take no fake time. */
function world6(store?: LeaseStore): FakeWorld {
  const world = new FakeWorld(store);
  world.server6.preference = 255;
  return world;
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => assert.fail("expected a failure"),
    (e: unknown) => e as { code: number; msg: string },
  );

describe("acquiring", () => {
  test("IPv6 alone: the address as /128, no routes, DNS from options 23 and 24; the DUID-LL of the interface", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    const result = await leases.add(attachment(world, "c1", { ipam: { families: ["ipv6"] }, cniArgs: "K8S_POD_NAME=web-0" }));
    assert.deepEqual(result, {
      cniVersion: "1.1.0",
      ips: [{ address: "fd00:9::10/128" }],
      routes: [],
      dns: { nameservers: ["fd00:9::53", "fd00:9::54"], search: ["tscni.test"] },
    });
    assert.equal(world.server.received.length, 0, "no DHCPv4");
    const [solicit, request] = world.server6.received;
    assert.deepEqual([solicit!.type, request!.type], [Message6.Solicit, Message6.Request]);
    assert.deepEqual(firstOption(solicit!.msg.options, Option6.ClientID), Uint8Array.of(0, 3, 0, 1, 2, 0, 0, 0, 0, 0), "DUID-LL of eth0's MAC");
    assert.deepEqual(
      firstOption(solicit!.msg.options, Option6.ClientFQDN),
      Uint8Array.from([0, 5, ...Buffer.from("web-0")]),
      "the pod name as the client's name",
    );
    const saved = world.saved.get("ipv6 c1/net1/eth0") as LeaseRecord6;
    assert.equal(saved.binding.address, "fd00:9::10");
    assert.equal(saved.send.iaid, decodeIaNa(firstOption(request!.msg.options, Option6.IANA)!).iaid);
    assert.ok(world.opened6.every((s) => s.closed));
    await leases.shutdown();
  });

  test("both families: one result, IPv4 first; a lease file each", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    const result = await leases.add(attachment(world, "c1"));
    assert.deepEqual(result, {
      cniVersion: "1.1.0",
      ips: [{ address: "10.9.0.10/24", gateway: "10.9.0.1" }, { address: "fd00:9::10/128" }],
      routes: [
        { dst: "10.99.0.0/16", gw: "10.9.0.1" },
        { dst: "0.0.0.0/0", gw: "10.9.0.1" },
      ],
      dns: { nameservers: ["10.9.0.53", "10.9.0.54", "fd00:9::53", "fd00:9::54"], search: ["tscni.test"] },
    });
    assert.deepEqual([...world.saved.keys()].sort(), ["c1/net1/eth0", "ipv6 c1/net1/eth0"]);
    const again = await leases.add(attachment(world, "c1"));
    assert.deepEqual(again, result, "ADD again gives the held leases");
    assert.equal(world.server6.got(Message6.Solicit).length, 1);
    await leases.shutdown();
  });

  test("duidType uuid: DUID-UUID of the attachment, the same for the same attachment; llt: DUID-LLT", async () => {
    const duidOf = async (ipam: Record<string, unknown>, ctr: string) => {
      const world = world6();
      const leases = new LeaseManager(world);
      await leases.add(attachment(world, ctr, { ipam: { families: ["ipv6"], ...ipam } }));
      await leases.shutdown();
      return firstOption(world.server6.received[0]!.msg.options, Option6.ClientID)!;
    };
    const uuid = await duidOf({ duidType: "uuid" }, "c1");
    assert.equal((uuid[0]! << 8) | uuid[1]!, DuidType.UUID);
    assert.equal(uuid.length, 18);
    assert.equal(uuid[8]! >> 4, 8, "a version 8 UUID");
    assert.deepEqual(await duidOf({ duidType: "uuid" }, "c1"), uuid);
    assert.notDeepEqual(await duidOf({ duidType: "uuid" }, "c2"), uuid);
    const llt = await duidOf({ duidType: "llt" }, "c1");
    assert.equal((llt[0]! << 8) | llt[1]!, DuidType.LLT);
  });

  test("DHCPv6 fails, DHCPv4 got a lease: it is released, nothing is kept, the error says both", async () => {
    const world = world6();
    world.server6.silent = true;
    world.settings = { ...world.settings, resendTimeoutMs: 3000 };
    const leases = new LeaseManager(world);
    const pending = failure(leases.add(attachment(world, "c1")));
    await world.clock.advance(5000);
    const err = await pending;
    assert.equal(err.code, 11);
    assert.equal(
      err.msg,
      "no DHCPv6 lease for eth0 in /run/netns/c1: no ADVERTISE within 3s (2 SOLICITs) (the DHCPv4 lease of 10.9.0.10 acquired meanwhile was released)",
    );
    assert.equal(world.server.got(MessageType.Release).length, 1);
    assert.equal(world.server.bindings.size, 0, "the DHCPv4 server has no binding left");
    assert.deepEqual(leases.records(), []);
    assert.equal(world.saved.size, 0);
  });

  test("DHCPv4 fails, DHCPv6 got a lease: it is released, nothing is kept", async () => {
    const world = world6();
    world.server.silent = true;
    world.settings = { ...world.settings, resendTimeoutMs: 3000 };
    const leases = new LeaseManager(world);
    const pending = failure(leases.add(attachment(world, "c1")));
    await world.clock.advance(5000);
    const err = await pending;
    assert.equal(err.code, 11);
    assert.match(
      err.msg,
      /^no DHCP lease for eth0 in \/run\/netns\/c1: no DHCPOFFER within 3s \(1 try\) \(the DHCPv6 lease of fd00:9::10 acquired meanwhile was released\)$/,
    );
    assert.equal(world.server6.got(Message6.Release).length, 1);
    assert.equal(world.server6.bindings.size, 0);
    assert.deepEqual(leases.records(), []);
    assert.equal(world.saved.size, 0);
  });

  test("both fail: each says why, nothing kept", async () => {
    const world = world6();
    world.server.silent = true;
    world.server6.silent = true;
    world.settings = { ...world.settings, resendTimeoutMs: 3000 };
    const leases = new LeaseManager(world);
    const pending = failure(leases.add(attachment(world, "c1")));
    await world.clock.advance(5000);
    assert.match((await pending).msg, /^no DHCP lease for eth0 .*; no DHCPv6 lease for eth0 in \/run\/netns\/c1: no ADVERTISE within 3s/);
    assert.equal(world.saved.size, 0);
  });

  test("CHECK acquires the family the config now asks for and the daemon does not hold", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1", { ipam: { families: ["ipv4"] } });
    await leases.add(a);
    await leases.check({ ...a, stdinData: config() });
    assert.deepEqual(
      leases.records().map((r) => r.family),
      ["ipv4", "ipv6"],
    );
    await leases.check({ ...a, stdinData: config() });
    assert.equal(world.server6.got(Message6.Solicit).length, 1);
    await leases.shutdown();
  });
});

describe("upkeep", () => {
  test("RENEW at T1 to the server, REBIND at T2 when it is silent; the record follows", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1", { ipam: { families: ["ipv6"] } }));
    const bound = world.clock.now();
    await world.clock.advance(30_000);
    assert.equal(world.server6.got(Message6.Renew).length, 1);
    assert.equal((world.saved.get("ipv6 c1/net1/eth0") as LeaseRecord6).binding.renewAt, bound + 60_000);
    assert.match(world.lines.join("\n"), /c1\/net1\/eth0: renewed fd00:9::10 with 00:03:00:01:02:00:00:00:00:fe/);
    world.server6.silent = true;
    await world.clock.advance(90_000);
    world.server6.silent = false;
    await world.clock.advance(20_000);
    assert.ok(world.server6.got(Message6.Rebind).length >= 1);
    assert.match(world.lines.join("\n"), /rebound fd00:9::10/);
    assert.deepEqual(world.removed6, []);
    await leases.shutdown();
  });

  test("expiry removes the address from the interface and leaves the link (and the IPv4 lease) alone", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    world.server6.silent = true;
    world.server.leaseSeconds = 3600;
    world.server.t1Seconds = 1800;
    world.server.t2Seconds = 3000;
    await world.clock.advance(121_000);
    await settle();
    assert.deepEqual(world.removed6, ["/run/netns/c1/eth0 fd00:9::10"]);
    assert.deepEqual(world.down, [], "the link stays up");
    assert.deepEqual(
      leases.records().map((r) => r.family),
      ["ipv4"],
    );
    assert.deepEqual([...world.saved.keys()], ["c1/net1/eth0"]);
    assert.match(world.lines.join("\n"), /lease of fd00:9::10 expired at .*; removing it from eth0/);
    await leases.shutdown();
  });

  test("a REPLY ending the address is a refusal: the address is removed, the lease forgotten", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1", { ipam: { families: ["ipv6"] } }));
    world.server6.endNext = true;
    await world.clock.advance(30_000);
    await settle();
    assert.deepEqual(world.removed6, ["/run/netns/c1/eth0 fd00:9::10"]);
    assert.deepEqual(leases.records(), []);
    assert.match(
      world.lines.join("\n"),
      /the server refused fd00:9::10 \(REPLY from .* ends fd00:9::10 \(valid lifetime 0\)\); removing it from eth0/,
    );
  });
});

describe("releasing", () => {
  test("DEL releases both families and forgets them; DEL again succeeds", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    await leases.add(a);
    await leases.del(a);
    assert.equal(world.server.got(MessageType.Release).length, 1);
    const [rel] = world.server6.got(Message6.Release);
    assert.ok(rel && firstOption(rel.msg.options, Option6.ServerID), "the RELEASE names the server");
    assert.equal(world.server6.bindings.size, 0);
    assert.equal(world.saved.size, 0);
    assert.match(world.lines.join("\n"), /released fd00:9::10 \(DEL\): confirmed by 00:03:00:01:02:00:00:00:00:fe \(Success \(released\)\)/);
    await leases.del(a);
    assert.equal(world.server6.got(Message6.Release).length, 1);
  });

  test("DEL after the interface is gone sends nothing and forgets both leases", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    world.addLink(a.netns, "eth1");
    await leases.add(a);
    world.removeLink(a.netns, "eth0");
    await leases.del(a);
    assert.equal(world.server6.got(Message6.Release).length, 0);
    assert.equal(world.saved.size, 0);
    assert.ok(world.lines.includes("c1/net1/eth0: dropped fd00:9::10 without a RELEASE (DEL): interface eth0 does not exist in /run/netns/c1"));
  });

  test("GC releases both leases of a stale attachment and counts attachments", async () => {
    const world = world6();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "keep"));
    await leases.add(attachment(world, "stale"));
    const gc = {
      containerID: "",
      netns: "",
      ifName: "",
      args: "",
      path: "",
      stdinData: Buffer.from(
        JSON.stringify({
          cniVersion: "1.1.0",
          name: "net1",
          type: "dhcp",
          ipam: { type: "dhcp" },
          "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }],
        }),
      ),
    };
    assert.equal(await leases.gc(gc), 1);
    assert.deepEqual(
      leases.records().map((r) => `${r.family} ${r.clientID}`),
      ["ipv4 keep/net1/eth0", "ipv6 keep/net1/eth0"],
    );
    assert.equal(world.server6.got(Message6.Release).length, 1);
    await leases.shutdown();
  });
});

describe("restarting", () => {
  test("a new daemon takes up both records: renews the DHCPv6 lease past T1 with the stored DUID, and DEL releases both", async () => {
    const dir = tempDir();
    const store = new LeaseStore(dir);
    await store.init();
    const first = world6(store);
    const before = new LeaseManager(first);
    const a = attachment(first, "c1");
    await before.add(a);
    assert.equal(readdirSync(dir).filter((f) => f.startsWith("lease")).length, 2);
    const duid = firstOption(first.server6.received[0]!.msg.options, Option6.ClientID);
    await before.shutdown(); // SIGKILL runs no code: the upkeep just stops

    const second = world6(store);
    second.clock.t = first.clock.t + 40_000;
    second.addLink(a.netns, "eth9"); // eth0's index, so its MAC and a DUID-LL made now, differ from the first daemon's
    second.addLink(a.netns, "eth0");
    const after = new LeaseManager(second);
    const { records, problems } = await store.loadAll();
    assert.deepEqual(problems, []);
    await after.resume(records);
    await settle();
    const [renew] = second.server6.got(Message6.Renew);
    assert.ok(renew, "T1 (30 s) passed while the daemon was down: renewed at once");
    assert.deepEqual(firstOption(renew.msg.options, Option6.ClientID), duid, "with the DUID stored with the lease");
    await after.del(a);
    assert.equal(second.server6.got(Message6.Release).length, 1);
    assert.equal(second.server.got(MessageType.Release).length, 1);
    assert.deepEqual(readdirSync(dir), [], "no lease file, no temp file");
  });
});
