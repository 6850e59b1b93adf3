/**
 * A test helper run under Bun (`bun dist/testing/netlink-driver.js CONTAINER_NETNS`) inside a test's "host"
 * namespace: one fixed sequence of network-layer steps (bridge, veth pair, addresses, routes, reads, failures),
 * printed as JSON. Run once with TSCNI_NETLINK=1 and once with TSCNI_NETLINK=0, the two outputs and the
 * namespaces' resulting state must match (src/net/netlink/rtnetlink.integration.test.ts).
 * @module
 */
import { readlinkSync } from "node:fs";
import { createContainerLink } from "#net/link/container-link.js";
import { configureInterface, setupVeth } from "#net/link/iface.js";
import { deleteLinkWithAddresses } from "#net/link/link-addresses.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { ensureBridge, ensureGatewayAddresses, readHostLinks } from "#plugins/main/bridge/bridge-link.js";
import { routeContainerThroughGateway, routeHostToContainer } from "#plugins/main/ptp/routing.js";
import { createIfb } from "#plugins/meta/bandwidth/ifb.js";
import { readLinkTunables, setLinkTunables } from "#plugins/meta/tuning/link-tunables.js";
import type { Result100 } from "#spec/result/index.js";
import { toolSpawnsOf } from "#sys/exec.js";

const steps: Array<{ step: string; value?: unknown; error?: { name: string; message: string } }> = [];

async function step(name: string, f: () => Promise<unknown>): Promise<void> {
  try {
    steps.push({ step: name, value: (await f()) ?? null });
  } catch (e) {
    steps.push({ step: name, error: { name: (e as Error).name, message: (e as Error).message } });
  }
}

const ownNetns = () => readlinkSync("/proc/thread-self/ns/net");
const before = ownNetns();
const container = await NetNS.open(process.argv[2]!);
const host = NetNS.host;

await step("bridge", () => ensureBridge("br0", { mtu: 1400, pinMac: true }));
await step("bridge again", () => ensureBridge("br0", {}));
await step("veth", () =>
  setupVeth(container, "eth0", { mtu: 1400, mac: "02:00:00:00:aa:01", hostChange: { master: "br0" }, bridgePort: { hairpin: true } }),
);
await step("veth name taken", () => setupVeth(container, "eth0", {}));
const result: Result100 = {
  cniVersion: "1.1.0",
  interfaces: [{ name: "eth0", sandbox: container.path }],
  ips: [
    { interface: 0, address: "10.77.0.2/24", gateway: "10.77.0.1" },
    { interface: 0, address: "10.78.0.2/31" },
    { interface: 0, address: "fd00:77::2/64", gateway: "fd00:77::1" },
  ],
  routes: [
    { dst: "0.0.0.0/0" },
    { dst: "::/0" },
    { dst: "10.90.0.0/16", gw: "10.77.0.9", priority: 5, mtu: 1300, advmss: 1200 },
    { dst: "10.91.0.0/16", table: 100 },
    { dst: "fd00:91::/64", table: 1000 },
  ],
};
await step("configure", () => configureInterface(container, "eth0", result));
await step("configure again", () => configureInterface(container, "eth0", result));
await step("gateway", () => ensureGatewayAddresses("br0", ["10.77.0.1/24"], { forceAddress: false, pinMac: "02:00:00:00:bb:01" }));
await step("gateway conflict", () => ensureGatewayAddresses("br0", ["10.79.0.1/24"], { forceAddress: false }));
await step("gateway forced", () => ensureGatewayAddresses("br0", ["10.79.0.1/24"], { forceAddress: true }));
await step("host links", () => readHostLinks(["br0"]));
await step("missing host link", () => readHostLinks(["nope0"]));
await step("getLink", () => ip.getLink(container, "eth0"));
await step("getLink missing", () => ip.getLink(container, "nope0"));
await step("listAddresses", () => ip.listAddresses(container, "eth0"));
await step("listAddresses missing", () => ip.listAddresses(container, "nope0"));
await step("set missing", () => ip.setLink(container, "nope0", { up: true }));
await step("master missing", () => ip.setLink(host, "br0", { master: "nope1" }));
await step("address exists", () => ip.addAddress(container, "eth0", "10.77.0.2/24"));
await step("address v6", () => ip.addAddress(container, "lo", "fd00::77/128"));
await step("address loopback", () => ip.addAddress(container, "lo", "127.0.0.9/8"));
await step("route exists", () => ip.addRoute(container, { dst: "10.90.0.0/16", gw: "10.77.0.9", dev: "eth0", metric: 5 }));
await step("route bad gateway", () => ip.addRoute(container, { dst: "10.93.0.0/16", gw: "10.200.0.1" }));
await step("route v6", () => ip.addRoute(container, { dst: "fd00:1::/64", dev: "eth0", metric: 7 }));
await step("route link scope", () => ip.addRoute(container, { dst: "10.92.0.0/16", dev: "eth0", scope: "link" }));
await step("route delete", () => ip.deleteRoute(container, { dst: "10.92.0.0/16", dev: "eth0" }));
await step("route delete missing", () => ip.deleteRoute(container, { dst: "10.92.0.0/16", dev: "eth0" }));
await step("ptp container", () => routeContainerThroughGateway(container, "eth0", [{ address: "10.78.0.2/31", gateway: "10.78.0.1" }]));
await step("ptp host", () => routeHostToContainer("br0", [{ address: "10.78.0.2/31", gateway: "10.78.0.1" }]));
await step("ptp host again", () => routeHostToContainer("br0", [{ address: "10.78.0.2/31", gateway: "10.78.0.1" }]));
await step("ifb", async () => {
  const l = await createIfb(host, "ifb0", { mtu: 1400, alias: "made by tscni" });
  return { ...l, mac: "(random)" };
});
await step("tunables", async () => {
  await setLinkTunables(host, "ifb0", { mtu: 1300, promisc: true, allmulti: true, txQLen: 7 });
  return readLinkTunables(host, "ifb0");
});
await step("tunables MAC", async () => {
  await setLinkTunables(host, "br0", { mac: "02:00:00:00:cc:01" });
  return readLinkTunables(host, "br0");
});
await step("tunables missing", () => readLinkTunables(host, "nope0"));
await step("bridge port flags", () =>
  ip.setBridgePort(host, (steps[2]!.value as { host: { name: string } }).host.name, { hairpin: false, isolated: true }),
);
await step("list links", async () => (await ip.listLinks(host)).map((l) => ({ ...l, index: 0, mac: l.name === "br0" ? l.mac : "(random)" })));
await step("delete with addresses", () => deleteLinkWithAddresses(container, "eth0"));
await step("delete again", () => deleteLinkWithAddresses(container, "eth0"));
await step("delete link missing", () => ip.deleteLink(host, "nope0"));
await step("bridge down and up", () => ip.setLink(host, "br0", { up: false }).then(() => ensureBridge("br0", { promisc: true })));

// Links on a parent, put into the container under a temporary name (random: taken out of what is compared).
const tmpNames = (v: unknown): unknown => JSON.parse(JSON.stringify(v ?? null).replace(/veth[0-9a-f]{8}/g, "veth(tmp)"));
async function tmpStep(name: string, f: () => Promise<unknown>): Promise<void> {
  await step(name, f);
  const last = steps[steps.length - 1]!;
  if (last.value !== undefined) last.value = tmpNames(last.value);
  if (last.error) last.error.message = tmpNames(last.error.message) as string;
}
await step("macvlan master", () => ip.addVeth({ name: "mst0", ns: host, peerName: "mst1", peerNs: host }));
await tmpStep("macvlan into the container", () =>
  createContainerLink(
    container,
    "mv0",
    { kind: "macvlan", parent: "mst0", macvlanMode: "private", mtu: 1400, mac: "02:00:00:00:dd:01", bcqueuelen: 100 },
    host,
  ),
);
await tmpStep("macvlan name taken", () => createContainerLink(container, "mv0", { kind: "macvlan", parent: "mst0", macvlanMode: "bridge" }, host));
await tmpStep("macvlan missing parent", () =>
  createContainerLink(container, "mv9", { kind: "macvlan", parent: "nope0", macvlanMode: "bridge" }, host),
);
await step("container master", () => ip.addVeth({ name: "cm0", ns: container, peerName: "cm1", peerNs: container }));
await tmpStep("macvlan in the container", () =>
  createContainerLink(container, "mv1", { kind: "macvlan", parent: "cm0", macvlanMode: "source" }, container),
);
await tmpStep("ipvlan", () => createContainerLink(container, "iv0", { kind: "ipvlan", parent: "mst0", ipvlanMode: "l3s", mtu: 1400 }, host));
await tmpStep("vlan", () => createContainerLink(container, "vl0", { kind: "vlan", parent: "mst0", vlanId: 100 }, host));
await step("dummy", () => ip.createLink(container, { name: "du0", kind: "dummy" }));
await step("rename and move", async () => {
  await ip.renameLink(container, "mv1", "mv2");
  await ip.moveLink(container, "mv2", host, "mv3");
  return ip.getLink(host, "mv3");
});
await step("container links", async () =>
  (await ip.listLinks(container)).map((l) => ({ ...l, mac: l.mac.startsWith("02:00:00:00:") ? l.mac : "(random)" })),
);

process.stdout.write(JSON.stringify({ steps, ipRuns: toolSpawnsOf("ip"), netnsKept: ownNetns() === before }) + "\n");
