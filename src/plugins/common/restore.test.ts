/**
 * The restorers' marks, without root: what each plugin says shows its host firewall state is there, from a
 * request as `cnitool reload` builds it (probes answered by the test, so nothing is asked of the system).
 */

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { ipMasqChainName } from "#net/names.js";
import { useTempDirs } from "#testing/temp.js";
import { restorer as bridge } from "../main/bridge/restore.js";
import { restorer as ptp } from "../main/ptp/restore.js";
import { restorer as dnsname } from "../meta/dnsname/restore.js";
import { restorer as firewall } from "../meta/firewall/restore.js";
import { dnatChainName } from "../meta/portmap/iptables.js";
import { restorer as portmap } from "../meta/portmap/restore.js";
import type { RestoreRequest } from "./restore.js";

const tempDir = useTempDirs("tscni-restore-");

/** The cached result of a dual-stack bridge attachment. */
const RESULT = {
  cniVersion: "1.0.0",
  interfaces: [
    { name: "br0", mac: "0a:00:00:00:00:01" },
    { name: "veth0", mac: "0a:00:00:00:00:02" },
    { name: "eth0", mac: "0a:00:00:00:00:03", sandbox: "/run/netns/c" },
  ],
  ips: [
    { address: "10.1.0.2/24", interface: 2, gateway: "10.1.0.1" },
    { address: "fd00:1::2/64", interface: 2 },
  ],
};

/** A request for one plugin config; probes answer "iptables works" unless told. */
function request(conf: Record<string, unknown>, opts: { iptables?: boolean; env?: Record<string, string>; args?: string } = {}): RestoreRequest {
  const stdin = Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", ...conf, prevResult: RESULT }));
  const answers: Record<string, unknown> = {
    "iptables usable": opts.iptables ?? true,
    "ip6tables usable": true,
    "nftables usable": true,
    "firewalld running": false,
  };
  return {
    stdin,
    containerID: "ctr",
    ifName: "eth0",
    netns: "/run/netns/c",
    args: opts.args ?? "",
    env: opts.env ?? {},
    once: async <T>(key: string) => {
      assert.ok(key in answers, `unexpected probe ${key}`);
      return answers[key] as T;
    },
  };
}

const ipam = { type: "host-local", subnet: "10.1.0.0/24" };

describe("restorer marks", () => {
  test("bridge: the masquerading chain and its POSTROUTING jump per family, the spoof check's chain; nothing without ipMasq", async () => {
    const chain = ipMasqChainName("net", "ctr");
    assert.deepEqual(await bridge.marks(request({ type: "bridge", ipMasq: true, macspoofchk: true, ipam })), [
      { kind: "nftables", family: "bridge", table: "nat", chain: "cni-br-iface-ctr-eth0-mac" },
      { kind: "iptables", family: 4, table: "nat", chain, from: "POSTROUTING" },
      { kind: "iptables", family: 6, table: "nat", chain, from: "POSTROUTING" },
    ]);
    assert.deepEqual(
      await bridge.marks(request({ type: "bridge", ipMasq: true, ipam }, { iptables: false })),
      [
        { kind: "nftables", family: "inet", table: "cni_plugins_masquerade", chain: "postrouting" },
        { kind: "nftables", family: "inet", table: "cni_plugins_masquerade", chain: "masq_checks" },
      ],
      "iptables unusable: nftables, as ADD chose",
    );
    assert.deepEqual(await bridge.marks(request({ type: "bridge", ipam })), []);
    assert.deepEqual(await ptp.marks(request({ type: "ptp", ipMasq: true, ipMasqBackend: "iptables", ipam })), [
      { kind: "iptables", family: 4, table: "nat", chain, from: "POSTROUTING" },
      { kind: "iptables", family: 6, table: "nat", chain, from: "POSTROUTING" },
    ]);
  });

  test("portmap: the shared chains with their jumps and the container's chain, per family; nothing without mappings", async () => {
    const runtimeConfig = { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] };
    const marks = await portmap.marks(request({ type: "portmap", runtimeConfig }));
    const dn = dnatChainName("net", "ctr");
    const v4 = [
      { chain: "CNI-HOSTPORT-SETMARK" },
      { chain: "CNI-HOSTPORT-MASQ", from: "POSTROUTING" },
      { chain: "CNI-HOSTPORT-DNAT", from: "PREROUTING" },
      { chain: "CNI-HOSTPORT-DNAT", from: "OUTPUT" },
      { chain: dn, from: "CNI-HOSTPORT-DNAT" },
    ];
    assert.deepEqual(
      marks,
      [4, 6].flatMap((family) => v4.map((m) => ({ kind: "iptables", family, table: "nat", ...m }))),
    );
    const nft = await portmap.marks(request({ type: "portmap", backend: "nftables", snat: false, runtimeConfig }));
    assert.deepEqual(
      nft.filter((m) => m.kind === "nftables" && m.family === "ip").map((m) => m.kind === "nftables" && m.chain),
      ["hostports", "hostports_all", "prerouting", "output"],
    );
    assert.deepEqual(await portmap.marks(request({ type: "portmap" })), []);
  });

  test("firewall: FORWARD -> CNI-FORWARD -> the admin chain per family (and the isolation chains); the nftables table", async () => {
    assert.deepEqual(
      await firewall.marks(request({ type: "firewall", backend: "iptables", iptablesAdminChainName: "MY-ADMIN", ingressPolicy: "same-bridge" })),
      [4, 6].flatMap((family) => [
        { kind: "iptables", family, table: "filter", chain: "CNI-FORWARD", from: "FORWARD" },
        { kind: "iptables", family, table: "filter", chain: "MY-ADMIN", from: "CNI-FORWARD" },
        { kind: "iptables", family, table: "filter", chain: "CNI-ISOLATION-STAGE-1", from: "FORWARD" },
        { kind: "iptables", family, table: "filter", chain: "CNI-ISOLATION-STAGE-2", from: "CNI-ISOLATION-STAGE-1" },
      ]),
    );
    assert.deepEqual(
      await firewall.marks(request({ type: "firewall", backend: "nftables" })),
      ["forward", "containers"].map((chain) => ({ kind: "nftables", family: "inet", table: "cni_plugins_firewall", chain })),
    );
    assert.deepEqual(
      (await firewall.marks(request({ type: "firewall" })))[0],
      { kind: "iptables", family: 4, table: "filter", chain: "CNI-FORWARD", from: "FORWARD" },
      "no firewalld: iptables, as ADD chose",
    );
  });

  test("dnsname: its DNS rules to the bridge dnsmasq listens on, when the network has a dnsmasq", async () => {
    const xdg = tempDir();
    const req = () => request({ type: "dnsname" }, { env: { XDG_RUNTIME_DIR: xdg }, args: "IgnoreUnknown=1;K8S_POD_NAME=web" });
    assert.deepEqual(await dnsname.marks(req()), [], "no dnsmasq.conf: nothing to restore");
    const dir = path.join(xdg, "containers/cni/dnsname/net");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "dnsmasq.conf"), "interface=br-dns\n");
    assert.deepEqual(
      (await dnsname.marks(req())).map((m) => m.kind === "iptables-rule" && `${m.family} ${m.rule}`),
      [
        "4 -A INPUT -i br-dns -p tcp -m tcp --dport 53 -j ACCEPT",
        "4 -A INPUT -i br-dns -p udp -m udp --dport 53 -j ACCEPT",
        "6 -A INPUT -i br-dns -p tcp -m tcp --dport 53 -j ACCEPT",
        "6 -A INPUT -i br-dns -p udp -m udp --dport 53 -j ACCEPT",
      ],
    );
  });
});
