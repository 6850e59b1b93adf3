/**
 * The mptcp plugin (containernetworking/plugins#1239) chained after ptp + host-local (all ours: dist/bin) in
 * test-made namespaces: a "container" attached twice (eth0, eth1) to a test "host", each attachment's address made
 * an MPTCP `subflow` endpoint and the limits set; then an MPTCP connection from the container to the host (python3:
 * Node cannot open IPPROTO_MPTCP sockets) opens a second subflow from eth1's address, and none once the plugin's DEL
 * has removed that endpoint. CHECK holds and fails on a changed endpoint or limit; DEL is idempotent and succeeds
 * without the namespace; dual-stack, the `ip mptcp` backend makes the same endpoints; bad configs are code 7 naming the key, and
 * a failed ADD removes the endpoints it made.
 * Skips, with the reason, when the kernel has no MPTCP.
 */

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, missing, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { containerIdOf, Host, type Result } from "#testing/rig.js";

type Json = Record<string, unknown>;

/** Why this kernel cannot run these tests: no MPTCP path manager (generic netlink family mptcp_pm). */
function noMptcp(): string | undefined {
  const r = spawnSync("ip", ["mptcp", "limits", "show"], { encoding: "utf8" });
  return r.status === 0 ? undefined : `the kernel has no MPTCP path manager (ip mptcp limits show: ${r.stderr.trim()})`;
}
const noPython = (): string | undefined =>
  spawnSync("python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262).close()"]).status === 0
    ? undefined
    : "python3 cannot open an MPTCP socket (IPPROTO_MPTCP, 262)";

const skip = skipReason(false, noMptcp());
if (skip) console.log(`# skipping mptcp integration tests: ${skip}`);

/** An MPTCP server: accepts connections on ADDR:PORT and reads each until it closes. */
const SERVER = `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    while c.recv(65536):
        pass
    c.close()
`;
/** An MPTCP client: connects to ADDR:PORT, sends a little, and holds the connection until its stdin closes. */
const CLIENT = `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.connect((sys.argv[1], int(sys.argv[2])))
s.sendall(b"x" * 4096)
print("connected", flush=True)
sys.stdin.read()
s.close()
`;

describe("mptcp plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  /** A host and a container; networks A (eth0) and B (eth1, with a default route) chain ptp and mptcp. */
  const setup = (keysA: Json, keysB: Json = { endpoints: { subflow: true } }, subnetsA = ["10.231.1.0/24"]) => {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-mh-${tag}-${n}`, OUR_BIN);
    const ctr = host.container(`tscni-mc-${tag}-${n}`);
    const a = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `mpa${tag}${n}`,
      plugins: [
        { type: "ptp", ipam: host.hostLocal(subnetsA) },
        { type: "mptcp", ...keysA },
      ],
    });
    const b = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `mpb${tag}${n}`,
      plugins: [
        { type: "ptp", ipam: host.hostLocal(["10.231.2.0/24"], { routes: [{ dst: "0.0.0.0/0" }] }) },
        { type: "mptcp", ...keysB },
      ],
    });
    return { host, ctr, a, b, n };
  };

  /** The container's endpoints as `address flags dev`, sorted. */
  const endpoints = (ctr: Netns): string[] =>
    (ctr.ipJson(["mptcp", "endpoint", "show"]) as Json[])
      .map((e) => `${e["address"]} ${["signal", "subflow", "backup", "fullmesh"].filter((f) => e[f] === true).join(",")} ${e["dev"] ?? "-"}`)
      .sort();
  const limits = (ctr: Netns): string => ctr.exec("ip", ["mptcp", "limits", "show"]).trim();

  /** One plugin of a chain, run directly in the host (for DEL with or without what a runtime would pass). */
  const mptcpCall = (host: Host, ctr: Netns, command: string, network: string, keys: Json, env: Record<string, string>, prevResult?: Result) =>
    host.plugin(
      path.join(OUR_BIN, "mptcp"),
      command,
      { cniVersion: "1.0.0", name: network, type: "mptcp", ...keys, ...(prevResult ? { prevResult } : {}) },
      {
        CNI_NETNS: ctr.path,
        CNI_CONTAINERID: containerIdOf(ctr),
        ...env,
      },
    );

  /**
   * Connects from the container to the host's 10.231.1.1 over MPTCP and returns the local addresses of the TCP
   * subflows the container has for it (`addr%dev` when bound to a device), waiting up to `waitMs` for `want` of
   * them, and what ss says of the MPTCP socket.
   */
  async function subflowsOfOneConnection(host: Host, ctr: Netns, port: number, want: number, waitMs: number) {
    const server = spawn(...host.ns.commandLine("python3", ["-c", SERVER, "10.231.1.1", String(port)]), { stdio: ["ignore", "pipe", "pipe"] });
    cleanup.add(() => server.kill("SIGKILL"));
    let out = "";
    server.stdout!.on("data", (b: Buffer) => (out += b));
    server.stderr!.on("data", (b: Buffer) => (out += b));
    for (let i = 0; i < 100 && !out.includes("listening"); i++) await sleep(50);
    assert.match(out, /listening/, "the MPTCP server started");
    const client = spawn(...ctr.commandLine("python3", ["-c", CLIENT, "10.231.1.1", String(port)]), { stdio: ["pipe", "pipe", "pipe"] });
    cleanup.add(() => client.kill("SIGKILL"));
    let cout = "";
    client.stdout!.on("data", (b: Buffer) => (cout += b));
    client.stderr!.on("data", (b: Buffer) => (cout += b));
    try {
      for (let i = 0; i < 100 && !cout.includes("connected"); i++) await sleep(50);
      assert.match(cout, /connected/, "the MPTCP client connected");
      const locals = () =>
        ctr
          .exec("ss", ["-Htn", "state", "established", "dst", `10.231.1.1:${port}`])
          .split("\n")
          .filter(Boolean)
          .map((l) => l.trim().split(/\s+/)[2]!.replace(/:\d+$/, ""))
          .sort();
      const deadline = Date.now() + waitMs;
      let seen = locals();
      while (seen.length < want && Date.now() < deadline) {
        await sleep(100);
        seen = locals();
      }
      const mptcp = ctr.exec("ss", ["-HMni", "state", "established"]);
      return { locals: seen, mptcp };
    } finally {
      client.stdin!.end();
      client.kill("SIGKILL");
      server.kill("SIGKILL");
    }
  }

  test("ADD makes each address a subflow endpoint and sets the limits; an MPTCP connection then uses both paths", async (t) => {
    const py = missing(noPython());
    if (py) return t.skip(py);
    const keysA = { endpoints: { subflow: true }, limits: { subflows: 2, addAddrAccepted: 1 } };
    const { host, ctr, a, b } = setup(keysA);
    await host.add(a, ctr);
    const resultB = await host.add(b, ctr, { CNI_IFNAME: "eth1" });
    assert.deepEqual(endpoints(ctr), ["10.231.1.2 subflow eth0", "10.231.2.2 subflow eth1"]);
    assert.equal(limits(ctr), "add_addr_accepted 1 subflows 2");
    await host.must("check", a, ctr);
    await host.must("check", b, ctr, { CNI_IFNAME: "eth1" });

    // The connection starts on eth0 (10.231.1.2 -> 10.231.1.1); the eth1 endpoint adds a subflow from 10.231.2.2.
    const both = await subflowsOfOneConnection(host, ctr, 7301, 2, 5000);
    // (ss marks a socket bound to a device: the kernel binds a subflow to its endpoint's interface)
    assert.deepEqual(both.locals, ["10.231.1.2", "10.231.2.2%eth1"], both.mptcp);
    assert.match(both.mptcp, /subflows:1\b/, "ss counts one additional subflow");

    // The plugin's DEL of network B alone removes eth1's endpoint: a new connection stays on one path.
    const del = await mptcpCall(host, ctr, "DEL", b, { endpoints: { subflow: true } }, { CNI_IFNAME: "eth1" }, resultB);
    assert.equal(del.code, 0, del.stdout);
    assert.deepEqual(endpoints(ctr), ["10.231.1.2 subflow eth0"]);
    const one = await subflowsOfOneConnection(host, ctr, 7302, 2, 1500);
    assert.deepEqual(one.locals, ["10.231.1.2"], one.mptcp);
    assert.doesNotMatch(one.mptcp, /subflows:[1-9]/);

    await host.must("del", b, ctr, { CNI_IFNAME: "eth1" });
    await host.must("del", a, ctr);
    assert.deepEqual(endpoints(ctr), []);
    assert.equal(limits(ctr), "add_addr_accepted 1 subflows 2", "the limits stay, as upstream");
  });

  test("CHECK fails on a missing endpoint, other flags or another limit; ADD again succeeds", async () => {
    const keysA = { endpoints: { signal: true, backup: true }, limits: { subflows: 3 } };
    const { host, ctr, a } = setup(keysA);
    await host.add(a, ctr);
    assert.deepEqual(endpoints(ctr), ["10.231.1.2 signal,backup eth0"]);
    assert.equal(limits(ctr), "add_addr_accepted 0 subflows 3", "an unset limit is left as it was");
    await host.must("check", a, ctr);

    const id = String((ctr.ipJson(["mptcp", "endpoint", "show"]) as Json[])[0]!["id"]);
    ctr.exec("ip", ["mptcp", "endpoint", "delete", "id", id]);
    let check = await host.cnitool("check", a, ctr);
    assert.notEqual(check.code, 0);
    assert.match(check.stderr + check.stdout, /MPTCP endpoint for 10\.231\.1\.2 not found/);

    ctr.exec("ip", ["mptcp", "endpoint", "add", "10.231.1.2", "dev", "eth0", "subflow"]);
    check = await host.cnitool("check", a, ctr);
    assert.notEqual(check.code, 0);
    assert.match(check.stderr + check.stdout, /MPTCP endpoint 10\.231\.1\.2 has flags \[subflow\], expected \[signal backup\]/);

    // ADD of the plugin again: an address that is an endpoint already is not an error (as upstream).
    const prev = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: ctr.path }], ips: [{ address: "10.231.1.2/24", interface: 0 }] };
    const again = await mptcpCall(host, ctr, "ADD", a, keysA, { CNI_IFNAME: "eth0" }, prev);
    assert.equal(again.code, 0, again.stdout);
    assert.deepEqual(JSON.parse(again.stdout).ips, prev.ips, "the prevResult passes through");

    ctr.exec("ip", ["mptcp", "endpoint", "flush"]);
    ctr.exec("ip", ["mptcp", "endpoint", "add", "10.231.1.2", "dev", "eth0", "signal", "backup"]);
    ctr.exec("ip", ["mptcp", "limits", "set", "subflows", "1"]);
    check = await host.cnitool("check", a, ctr);
    assert.notEqual(check.code, 0);
    assert.match(check.stderr + check.stdout, /MPTCP subflows limit is 1, expected 3/);
    await host.must("del", a, ctr);
  });

  test("DEL: without the namespace, without a prevResult (the interface's endpoints), twice", async () => {
    const keys = { endpoints: { subflow: true } };
    const { host, ctr, a, b } = setup(keys);
    const resultA = await host.add(a, ctr);
    await host.add(b, ctr, { CNI_IFNAME: "eth1" });
    for (const netns of ["", "/run/netns/tscni-no-such-ns"]) {
      const r = await mptcpCall(host, ctr, "DEL", a, keys, { CNI_IFNAME: "eth0", CNI_NETNS: netns }, resultA);
      assert.equal(r.code, 0, r.stdout);
    }
    assert.equal(endpoints(ctr).length, 2, "nothing happened without the namespace");

    // Without a prevResult, DEL removes the endpoints bound to CNI_IFNAME only.
    const bare = await mptcpCall(host, ctr, "DEL", a, keys, { CNI_IFNAME: "eth0" });
    assert.equal(bare.code, 0, bare.stdout);
    assert.deepEqual(endpoints(ctr), ["10.231.2.2 subflow eth1"]);
    const again = await mptcpCall(host, ctr, "DEL", a, keys, { CNI_IFNAME: "eth0" }, resultA);
    assert.equal(again.code, 0, again.stdout);

    // The namespace gone: the whole chain's DEL succeeds.
    ctr.delete();
    await host.must("del", b, ctr, { CNI_IFNAME: "eth1" });
    await host.must("del", a, ctr);
  });

  test("dual-stack, over netlink and through ip mptcp (TSCNI_NETLINK=0): the same endpoints; each backend checks and deletes the other's", async () => {
    const keysA = { endpoints: { subflow: true, fullmesh: true }, limits: { addAddrAccepted: 4 } };
    const { host, ctr, a } = setup(keysA, undefined, ["10.231.1.0/24", "fd31:1::/64"]);
    const tool = { TSCNI_NETLINK: "0" };
    for (const [adding, other] of [
      [{}, tool],
      [tool, {}],
    ] as const) {
      const r = await host.add(a, ctr, adding);
      const [v4, v6] = r.ips!.map((i) => i.address.replace(/\/\d+$/, ""));
      assert.match(`${v4} ${v6}`, /^10\.231\.1\.\d+ fd31:1::\w+$/);
      assert.deepEqual(endpoints(ctr), [`${v4} subflow,fullmesh eth0`, `${v6} subflow,fullmesh eth0`]);
      assert.equal(limits(ctr), "add_addr_accepted 4 subflows 2");
      await host.must("check", a, ctr, adding);
      await host.must("check", a, ctr, other);
      await host.must("del", a, ctr, other);
      assert.deepEqual(endpoints(ctr), []);
      await host.must("del", a, ctr, adding);
    }
  });

  test("bad configs: code 7 naming the key, before anything changes; ADD needs a prevResult and the interface; a failed ADD undoes itself", async () => {
    const { host, ctr } = setup({ endpoints: { subflow: true } });
    const prev = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: ctr.path }], ips: [{ address: "10.231.9.2/24", interface: 0 }] };
    for (const [keys, msg] of [
      [{ endpoints: { subflow: "yes" } }, /"endpoints\.subflow": "yes"/],
      [{ limits: { subflows: -1 } }, /"limits\.subflows": -1/],
      [{ endpoints: {} }, /"endpoints".*no flag is set/],
      [{ endpoints: { signal: true, fullmesh: true } }, /signal and fullmesh/],
      [{}, /at least one of "endpoints" or "limits"/],
    ] as Array<[Json, RegExp]>) {
      const r = await mptcpCall(host, ctr, "ADD", `mpx${tag}`, keys, { CNI_IFNAME: "eth0" }, prev);
      assert.notEqual(r.code, 0);
      const err = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.equal(err.code, 7, r.stdout);
      assert.match(err.msg, msg);
    }
    const noPrev = await mptcpCall(host, ctr, "ADD", `mpx${tag}`, { endpoints: { subflow: true } }, { CNI_IFNAME: "eth0" });
    assert.match(noPrev.stdout, /missing prevResult/);
    const noLink = await mptcpCall(host, ctr, "ADD", `mpx${tag}`, { endpoints: { subflow: true } }, { CNI_IFNAME: "eth7" }, prev);
    assert.notEqual(noLink.code, 0);
    assert.match(noLink.stdout, /eth7/);
    assert.deepEqual(endpoints(ctr), []);

    // Limits the kernel refuses (above 8) fail the ADD after the endpoints were made: they are removed again.
    ctr.exec("ip", ["link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"]);
    const tooMany = await mptcpCall(
      host,
      ctr,
      "ADD",
      `mpx${tag}`,
      { endpoints: { subflow: true }, limits: { subflows: 9 } },
      { CNI_IFNAME: "eth0" },
      prev,
    );
    assert.notEqual(tooMany.code, 0);
    assert.match(tooMany.stdout, /failed to set MPTCP limits/);
    assert.deepEqual(endpoints(ctr), [], "the failed ADD removed the endpoint it made");
    assert.equal(limits(ctr), "add_addr_accepted 0 subflows 2");
  });
});
