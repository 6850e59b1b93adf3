/**
 * The daemon's leases over their whole life, against an in-memory DHCP server and a fake clock
 * (src/testing/fake-dhcp.ts): acquisition and its result, renewal at T1, the broadcast fallback, rebinding
 * at T2, expiry, refusal, the interface disappearing, release on DEL (nothing sent when the interface or its
 * namespace is gone), GC, CHECK, giving up when no server answers, and a restart that takes up the leases
 * left on disk.
 */

import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { describe, test } from "node:test";
import { FakeWorld, settle } from "#testing/fake-dhcp.js";
import { useTempDirs } from "#testing/temp.js";
import { LeaseStore } from "./lease-file.js";
import { LeaseManager, LINK_CHECK_MS } from "./leases.js";
import { MessageType, Option } from "./option-codes.js";
import { decodeMessage, messageType, readText } from "./packet.js";
import type { WireArgs } from "./protocol.js";

const tempDir = useTempDirs("tscni-dhcp-leases-");
/** The lease files in `dir` (a save under way shows a temp file beside them for a moment). */
const leaseFiles = (dir: string) => readdirSync(dir).filter((f) => /^lease-[0-9a-f]+\.json$/.test(f));

const config = (ipam: Record<string, unknown> = {}, name = "net1") =>
  Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name, type: "dhcp", ipam: { type: "dhcp", ...ipam } }));

function attachment(
  world: FakeWorld,
  ctr: string,
  opts: { ifName?: string; cniArgs?: string; ipam?: Record<string, unknown>; name?: string } = {},
): WireArgs {
  const ifName = opts.ifName ?? "eth0";
  const netns = `/run/netns/${ctr}`;
  world.addLink(netns, ifName);
  return { containerID: ctr, netns, ifName, args: opts.cniArgs ?? "", path: "/opt/cni/bin", stdinData: config(opts.ipam, opts.name) };
}

describe("acquiring", () => {
  test("ADD: DISCOVER and REQUEST broadcast with the client id, host name and request list; the result", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    const result = await leases.add(attachment(world, "c1", { cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=web-0" }));
    assert.deepEqual(result, {
      cniVersion: "1.1.0",
      ips: [{ address: "10.9.0.10/24", gateway: "10.9.0.1" }],
      routes: [
        { dst: "10.99.0.0/16", gw: "10.9.0.1" },
        { dst: "0.0.0.0/0", gw: "10.9.0.1" },
      ],
      dns: { nameservers: ["10.9.0.53", "10.9.0.54"] },
    });
    const [discover, request] = world.server.received;
    assert.equal(discover!.type, MessageType.Discover);
    assert.equal(request!.type, MessageType.Request);
    for (const r of [discover!, request!]) {
      assert.equal(r.how, "broadcast");
      assert.deepEqual(r.msg.options.get(Option.ClientID), Uint8Array.from([0, ...Buffer.from("c1/net1/eth0")]));
      assert.equal(readText(r.msg.options.get(Option.HostName)), "web-0");
      assert.deepEqual([...r.msg.options.get(Option.ParameterRequestList)!], [1, 3, 6, 15, 119, 121]);
    }
    assert.ok(request!.msg.options.has(Option.RequestedIP) && request!.msg.options.has(Option.ServerID), "REQUEST names the offer and its server");
    assert.ok(world.saved.has("c1/net1/eth0"), "the lease is saved before ADD answers");
    assert.ok(
      world.opened.every((s) => s.closed),
      "the exchange's sockets are closed",
    );
    await leases.shutdown();
  });

  test("-broadcast sets the BOOTP broadcast flag on the acquisition's messages (off by default)", async () => {
    for (const broadcast of [false, true]) {
      const world = new FakeWorld();
      world.settings = { ...world.settings, broadcast };
      const leases = new LeaseManager(world);
      await leases.add(attachment(world, "c1"));
      assert.deepEqual(
        world.server.received.map((r) => r.msg.flags),
        broadcast ? [0x8000, 0x8000] : [0, 0],
      );
      await leases.shutdown();
    }
  });

  test("ADD again returns the held lease without asking the server; priority sets route metrics", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    await leases.add(a);
    const before = world.server.received.length;
    const again = await leases.add({ ...a, stdinData: config({ priority: 77 }) });
    assert.equal(world.server.received.length, before);
    assert.deepEqual(
      again.routes!.map((r) => r.priority),
      [77, 77],
    );
    await leases.shutdown();
  });

  test("twenty attachments at once get twenty distinct addresses", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => leases.add(attachment(world, `c${i}`))));
    assert.equal(new Set(results.map((r) => r.ips![0]!.address)).size, 20);
    assert.equal(leases.records().length, 20);
    await leases.shutdown();
  });

  test("no server: code 11 naming the interface, within -resendtimeout, nothing kept", async () => {
    const world = new FakeWorld();
    world.server.silent = true;
    world.settings = { ...world.settings, timeoutMs: 1000, resendTimeoutMs: 6000 };
    const leases = new LeaseManager(world);
    const started = world.clock.now();
    const pending = leases.add(attachment(world, "c1")).then(
      () => undefined,
      (e: unknown) => e,
    );
    await world.clock.advance(10_000);
    const err = (await pending) as { code: number; msg: string };
    assert.equal(err.code, 11);
    assert.match(err.msg, /no DHCP lease for eth0 in \/run\/netns\/c1: no DHCPOFFER within 6s \(2 tries\)/);
    assert.equal(world.server.got(MessageType.Discover).length, 2, "sent at 0 s and, after 1 s without an offer and a 2 s pause, at 3 s");
    assert.ok(world.clock.now() - started <= 10_000);
    assert.equal(leases.records().length, 0);
    assert.equal(world.saved.size, 0);
    assert.ok(world.opened.every((s) => s.closed));
  });

  test("a NAK to the REQUEST starts over at once (a few times), then with backoff, then is reported", async () => {
    const world = new FakeWorld();
    world.server.refuse = true;
    world.settings = { ...world.settings, resendTimeoutMs: 3000 };
    const leases = new LeaseManager(world);
    const pending = leases.add(attachment(world, "c1")).then(
      () => undefined,
      (e: unknown) => e,
    );
    await world.clock.advance(5000);
    assert.match(((await pending) as Error).message, /DHCPNAK from 10\.9\.0\.1 for 10\.9\.0\.10 \(wrong network\) within 3s \(5 tries\)/);
    assert.equal(world.server.got(MessageType.Discover).length, 5, "at 0 s four times (the first and three restarts), then at 2 s");
  });

  test("a NAK because another client took the offered address meanwhile: the next round gets another", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    let refusals = 1;
    const handle = world.server.handle.bind(world.server);
    world.server.handle = (bytes, how) => {
      const m = decodeMessage(bytes);
      if (messageType(m) === MessageType.Request && refusals-- > 0) {
        world.server.refuse = true;
        try {
          return handle(bytes, how);
        } finally {
          world.server.refuse = false;
        }
      }
      return handle(bytes, how);
    };
    const result = await leases.add(attachment(world, "c1"));
    assert.equal(result.ips![0]!.address, "10.9.0.10/24");
    assert.equal(world.clock.now() - Date.UTC(2030, 0, 1), 0, "no pause after the NAK");
    await leases.shutdown();
  });

  test("-hostprefix is put before the netns path the plugin sends, and the record keeps the path as sent", async () => {
    const world = new FakeWorld();
    world.hostPrefix = "/host";
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    world.removeLink(a.netns, "eth0");
    world.addLink(`/host${a.netns}`, "eth0");
    await leases.add(a);
    assert.equal(world.opened[0]!.netns, "/host/run/netns/c1");
    assert.equal(leases.records()[0]!.netns, "/run/netns/c1");
    await leases.del(a);
    assert.equal(world.server.got(MessageType.Release)[0]!.how, "unicast");
  });

  test("a missing interface or namespace fails ADD and keeps nothing", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    world.addLink(a.netns, "other");
    await assert.rejects(leases.add({ ...a, ifName: "eth9" }), /eth9 does not exist/);
    await assert.rejects(leases.add({ ...a, netns: "/run/netns/nothing" }), /nothing does not exist/);
    await assert.rejects(leases.add({ ...a, netns: "relative" }), { code: 4 });
    assert.equal(world.saved.size, 0);
  });

  test("a bad config is code 7 naming the option, before any DHCP", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await assert.rejects(leases.add(attachment(world, "c1", { ipam: { request: [{ option: "no-such" }] } })), {
      code: 7,
      msg: /ipam\.request\[0\]\.option.*no-such/,
    });
    assert.equal(world.server.received.length, 0);
  });
});

describe("upkeep", () => {
  test("renewal at T1 by unicast to the server, and the lease file follows", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    const bound = world.clock.now();
    await world.clock.advance(29_000);
    assert.equal(world.server.got(MessageType.Request).length, 1, "nothing before T1 (30 s)");
    await world.clock.advance(1000);
    const renewals = world.server.got(MessageType.Request).slice(1);
    assert.equal(renewals.length, 1);
    assert.equal(renewals[0]!.how, "unicast");
    assert.equal(renewals[0]!.msg.ciaddr, "10.9.0.10");
    assert.equal(renewals[0]!.msg.options.has(Option.ServerID), false, "RFC 2131: no server id when renewing");
    const saved = world.saved.get("c1/net1/eth0") as { binding: { renewAt: number } };
    assert.equal(saved.binding.renewAt, bound + 60_000, "the next T1 counts from the renewal");
    await world.clock.advance(30_000);
    assert.equal(world.server.got(MessageType.Request).length, 3);
    await leases.shutdown();
  });

  test("an unanswered unicast renewal is broadcast at once; a silent server means rebinding at T2", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    world.server.deafToUnicast = true;
    await world.clock.advance(30_000 + 2000);
    const [, unicast, broadcast] = world.server.got(MessageType.Request);
    assert.equal(unicast!.how, "unicast");
    assert.equal(broadcast!.how, "broadcast");
    assert.match(world.lines.join("\n"), /renewed 10\.9\.0\.10/);

    world.server.silent = true;
    world.server.deafToUnicast = false;
    await world.clock.advance(90_000); // the renewal above moved T2 to 90 s after it: now rebinding
    world.server.silent = false;
    await world.clock.advance(30_000);
    assert.match(world.lines.join("\n"), /rebound 10\.9\.0\.10/);
    assert.equal(world.down.length, 0);
    await leases.shutdown();
  });

  test("expiry sets the interface down and forgets the lease", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    world.server.silent = true;
    await world.clock.advance(121_000);
    await settle();
    assert.deepEqual(world.down, ["/run/netns/c1/eth0"]);
    assert.equal(leases.records().length, 0);
    assert.equal(world.saved.size, 0);
    assert.match(world.lines.join("\n"), /expired/);
  });

  test("a NAK to a renewal sets the interface down and forgets the lease", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    world.server.refuse = true;
    await world.clock.advance(30_000);
    await settle();
    assert.deepEqual(world.down, ["/run/netns/c1/eth0"]);
    assert.equal(leases.records().length, 0);
  });

  test("the upkeep stops when the interface disappears", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    world.removeLink("/run/netns/c1", "eth0");
    await world.clock.advance(LINK_CHECK_MS);
    await settle();
    assert.equal(leases.records().length, 0);
    assert.equal(world.saved.size, 0);
    const before = world.server.received.length;
    await world.clock.advance(60_000);
    assert.equal(world.server.received.length, before, "nothing is renewed");
  });

  test("an infinite lease is never renewed", async () => {
    const world = new FakeWorld();
    world.server.leaseSeconds = 0xffffffff;
    world.server.t1Seconds = undefined;
    world.server.t2Seconds = undefined;
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    await world.clock.advance(2 * 3_600_000);
    assert.equal(world.server.got(MessageType.Request).length, 1);
    await leases.shutdown();
  });
});

describe("releasing", () => {
  test("DEL releases by unicast to the server, with the client id, and forgets; DEL again succeeds", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    await leases.add(a);
    await leases.del(a);
    const [rel] = world.server.got(MessageType.Release);
    assert.equal(rel!.how, "unicast");
    assert.equal(rel!.msg.ciaddr, "10.9.0.10");
    assert.deepEqual(rel!.msg.options.get(Option.ClientID), Uint8Array.from([0, ...Buffer.from("c1/net1/eth0")]));
    assert.equal(world.server.bindings.size, 0);
    assert.equal(world.saved.size, 0);
    await leases.del(a);
    assert.equal(world.server.got(MessageType.Release).length, 1);
  });

  test("DEL after the interface or its namespace is gone sends nothing and forgets the lease", async () => {
    const cases = [
      { gone: "the interface (bridge deletes it first)", links: ["eth0"], why: "interface eth0 does not exist in /run/netns/c1" },
      { gone: "the namespace", links: ["eth0", "eth1"], why: "network namespace /run/netns/c1 does not exist" },
    ];
    for (const { gone, links, why } of cases) {
      const world = new FakeWorld();
      const leases = new LeaseManager(world);
      const a = attachment(world, "c1");
      world.addLink(a.netns, "eth1"); // the namespace outlives eth0 unless every link in it goes
      await leases.add(a);
      const sent = world.server.received.length;
      for (const link of links) world.removeLink(a.netns, link);
      await leases.del(a);
      assert.equal(world.server.received.length, sent, `nothing sent when ${gone} is gone`);
      assert.equal(world.server.bindings.size, 1, "the server keeps the lease until it expires");
      assert.equal(world.saved.size, 0, "the lease's record is removed");
      assert.deepEqual(leases.records(), []);
      assert.ok(world.lines.includes(`c1/net1/eth0: dropped 10.9.0.10 without a RELEASE (DEL): ${why}`), world.lines.join("\n"));
      assert.ok(world.opened.every((s) => s.closed));
    }
  });

  test("GC releases the network's leases whose attachment is not valid, and only those", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "keep"));
    await leases.add(attachment(world, "stale"));
    await leases.add(attachment(world, "other", { name: "net2" }));
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
      leases
        .records()
        .map((r) => r.clientID)
        .sort(),
      ["keep/net1/eth0", "other/net2/eth0"],
    );
    assert.equal(world.server.got(MessageType.Release).length, 1);
    await leases.shutdown();
  });

  test("CHECK acquires when no lease is held (as upstream), and fails when the interface is gone", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    const a = attachment(world, "c1");
    await leases.check(a);
    assert.equal(leases.records().length, 1);
    await leases.check(a);
    assert.equal(world.server.got(MessageType.Discover).length, 1);
    world.removeLink(a.netns, "eth0");
    await assert.rejects(leases.check(a), /eth0 does not exist/);
    await leases.shutdown();
  });
});

describe("restarting", () => {
  test("a new daemon takes up the leases on disk: renews those past T1, drops those whose interface is gone, and releases on DEL", async () => {
    const dir = tempDir();
    const store = new LeaseStore(dir);
    await store.init();
    const first = new FakeWorld(store);
    const before = new LeaseManager(first);
    const kept = attachment(first, "kept");
    await before.add(kept);
    await before.add(attachment(first, "gone"));
    assert.equal(leaseFiles(dir).length, 2);
    // The daemon dies (its upkeep just stops: SIGKILL runs no code), 40 s pass, the "gone" container goes.
    await before.shutdown();

    const second = new FakeWorld(store);
    second.clock.t = first.clock.t + 40_000;
    second.addLink(kept.netns, "eth0");
    const after = new LeaseManager(second);
    const { records, problems } = await store.loadAll();
    assert.deepEqual(problems, []);
    await after.resume(records);
    assert.deepEqual(
      after.records().map((r) => r.clientID),
      ["kept/net1/eth0"],
    );
    assert.equal(leaseFiles(dir).length, 1, "the lease whose interface is gone is dropped");
    await settle();
    const renewal = second.server.got(MessageType.Request)[0];
    assert.ok(renewal, "T1 (30 s) passed while the daemon was down: renewed at once");
    assert.equal(renewal.msg.ciaddr, "10.9.0.10");
    await after.del(kept);
    assert.equal(second.server.got(MessageType.Release)[0]!.msg.ciaddr, "10.9.0.10");
    assert.deepEqual(readdirSync(dir), [], "no lease file, no temp file");
  });

  test("a lease taken up from disk is dropped, sending nothing, unless its namespace is the one it was acquired in", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    const record = leases.records()[0]!;
    assert.ok(record.netnsInode, "the record keeps the namespace's inode");
    await leases.shutdown();
    const later = new FakeWorld();
    later.addLink("/run/netns/c1", "eth0");
    const resumed = new LeaseManager(later);
    const { netnsInode: _, ...older } = record;
    await resumed.resume([
      { ...record, netnsInode: record.netnsInode! + 1 },
      { ...older, clientID: "old/net1/eth0" },
    ]);
    assert.deepEqual(resumed.records(), []);
    assert.match(later.lines.join("\n"), /c1\/net1\/eth0: dropping the lease of 10\.9\.0\.10: \/run\/netns\/c1 is not the network namespace/);
    assert.match(later.lines.join("\n"), /old\/net1\/eth0: dropping the lease of 10\.9\.0\.10: .*older daemon/);
    await later.clock.advance(120_000);
    assert.equal(later.server.received.length, 0, "nothing sent");
  });

  test("a lease that expired while the daemon was down may still rebind for -resendtimeout", async () => {
    const world = new FakeWorld();
    const leases = new LeaseManager(world);
    await leases.add(attachment(world, "c1"));
    const record = leases.records()[0]!;
    await leases.shutdown();
    const later = new FakeWorld();
    later.addLink("/run/netns/c1", "eth0");
    later.clock.t = record.binding.expiresAt + 3_600_000;
    const resumed = new LeaseManager(later);
    await resumed.resume([record]);
    await settle();
    assert.match(later.lines.join("\n"), /rebound 10\.9\.0\.10/);
    assert.equal(later.down.length, 0);
    await resumed.shutdown();
  });
});
