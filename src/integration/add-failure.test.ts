/**
 * A failed ADD leaves nothing behind, whichever step fails: every main plugin whose own ADD fails after its IPAM
 * allocation releases the address and removes its links before answering; and when a later plugin of the chain
 * fails, the runtime's DEL of the whole chain (what containerd and podman do when they give up on a sandbox)
 * removes everything, even though the failing plugin's input is invalid. A main plugin added later gets a row in
 * MAIN_PLUGINS.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Cleanup, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { containerIdOf, Host, ipIn, pluginDir } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping ADD-failure tests: ${skip}`);

type Json = Record<string, unknown>;

/** A route whose gateway is on no link of the container: the route step, after IPAM and the links, fails. */
const UNREACHABLE_ROUTE = { dst: "10.250.0.0/16", gw: "192.0.2.1" };

/**
 * Main plugins and their config for a test host (`tag` makes names unique; a plugin that needs something in
 * the host, like a master link, makes it there, named `tf…` so the leftover check passes it over).
 */
const MAIN_PLUGINS: Record<string, (tag: string, host: Host) => Json> = {
  bridge: (tag) => ({ type: "bridge", bridge: `tf${tag}`, isGateway: true, ipMasq: true }),
  ptp: () => ({ type: "ptp", ipMasq: true }),
  macvlan: (tag, host) => {
    host.ns.exec("ip", ["link", "add", `tf${tag}m`, "type", "veth", "peer", "name", `tf${tag}p`]);
    return { type: "macvlan", master: `tf${tag}m`, mode: "bridge" };
  },
  tap: () => ({ type: "tap", mtu: 1400 }),
  "host-device": (tag, host) => {
    // The device to take; named tf… so it does not count as a leftover.
    host.ns.exec("ip", ["link", "add", `tf${tag}d`, "type", "veth", "peer", "name", `tf${tag}q`]);
    return { type: "host-device", device: `tf${tag}d`, dataDir: path.join(host.dataDir, "host-device") };
  },
};

describe("a failed ADD leaves nothing behind", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  const ours = () =>
    pluginDir(
      cleanup,
      Object.fromEntries([...Object.keys(MAIN_PLUGINS), "host-local", "portmap", "tuning", "firewall"].map((t) => [t, path.join(OUR_BIN, t)])),
    );

  /** What a test host holds after the test: links other than lo, addresses in the store, NAT rules and the cache. */
  const leftovers = (host: Host, network: string, ctrLinks: string[]) => ({
    hostLinks: host
      .ipJson(["link", "show"])
      .map((l) => String(l["ifname"]))
      .filter((n) => n !== "lo" && !n.startsWith("tf")),
    containerLinks: ctrLinks.filter((n) => n !== "lo"),
    allocations: host.allocations(network),
    natRules: host
      .natRules()
      .split("\n")
      .filter((l) => /^-A .*CNI-/.test(l) || /^:CNI-(?!HOSTPORT)/.test(l)),
    cache: existsSync(path.join(host.cacheDir, "results")) ? readdirSync(path.join(host.cacheDir, "results")) : [],
  });
  const nothing = { hostLinks: [], containerLinks: [], allocations: [], natRules: [], cache: [] };

  for (const [type, conf] of Object.entries(MAIN_PLUGINS)) {
    test(`${type}: its own ADD fails after IPAM allocated: the address is released and its links removed`, async () => {
      const n = ++seq;
      const host = new Host(cleanup, `tscni-af-${tag}-${n}`, ours());
      const network = `af${tag}${n}`;
      const config = {
        cniVersion: "1.0.0",
        name: network,
        ...conf(`${tag}${n}`, host),
        ipam: host.hostLocal(["10.231.0.0/24"], { routes: [UNREACHABLE_ROUTE] }),
      };
      const ctr = host.container(`tscni-afc-${tag}-${n}`);
      const r = await host.plugin(path.join(OUR_BIN, type), "ADD", config, { CNI_NETNS: ctr.path, CNI_CONTAINERID: `af-${tag}-${n}` });
      assert.equal(r.code, 1, "the ADD fails");
      const error = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.match(error.msg, /192\.0\.2\.1/, "one CNI error document on stdout, naming what failed");
      const ctrLinks = ipIn(ctr, ["link", "show"]).map((l) => String(l["ifname"]));
      assert.deepEqual(leftovers(host, network, ctrLinks), nothing);
    });

    test(`${type}: CNI_NETNS names the plugin's own namespace: one CNI error (code 8) on stdout, nothing changed`, async () => {
      const n = ++seq;
      const host = new Host(cleanup, `tscni-af-${tag}-${n}`, ours());
      const network = `af${tag}${n}`;
      const config = { cniVersion: "1.0.0", name: network, ...conf(`${tag}${n}`, host), ipam: host.hostLocal(["10.233.0.0/24"]) };
      const linksBefore = host.ipJson(["link", "show"]).map((l) => String(l["ifname"]));
      for (const command of ["ADD", "DEL"]) {
        const r = await host.plugin(path.join(OUR_BIN, type), command, config, { CNI_NETNS: host.ns.path, CNI_CONTAINERID: `af-${tag}-${n}` });
        assert.equal(r.code, 1, command);
        assert.deepEqual(
          JSON.parse(r.stdout),
          { code: 8, msg: "plugin's netns and netns from CNI_NETNS should not be the same" },
          `${command}: one JSON document`,
        );
      }
      assert.deepEqual(host.allocations(network), [], "no address allocated");
      assert.deepEqual(
        host.ipJson(["link", "show"]).map((l) => String(l["ifname"])),
        linksBefore,
        "no link created or removed",
      );
    });

    test(`${type}: a later plugin of the chain fails: the runtime's DEL removes everything`, async () => {
      const n = ++seq;
      const host = new Host(cleanup, `tscni-af-${tag}-${n}`, ours());
      const network = host.writeNetwork({
        cniVersion: "1.0.0",
        name: `af${tag}${n}`,
        plugins: [
          { ...conf(`${tag}${n}`, host), ipam: host.hostLocal(["10.232.0.0/24"]) },
          { type: "firewall", dataDir: path.join(host.dataDir, "firewall") },
          { type: "portmap", capabilities: { portMappings: true }, dataDir: path.join(host.dataDir, "portmap") },
          { type: "tuning", dataDir: path.join(host.dataDir, "tuning") },
        ],
      });
      const ctr = host.container(`tscni-afc-${tag}-${n}`);
      // Port 0 is refused by portmap, after the main plugin and firewall have done their work.
      const env = { CAP_ARGS: JSON.stringify({ portMappings: [{ HostPort: 0, ContainerPort: 80, Protocol: "tcp" }] }) };
      const r = await host.cnitool("add", network, ctr, env);
      assert.notEqual(r.code, 0, "the ADD fails at portmap");
      assert.match(r.stdout + r.stderr, /portMappings\[0\]\.HostPort/, "the key as the runtime spelled it");
      assert.equal(host.allocations(network).length, 1, "the main plugin's ADD had succeeded");

      const del = await host.cnitool("del", network, ctr, env);
      assert.equal(del.code, 0, del.stdout + del.stderr);
      const ctrLinks = ipIn(ctr, ["link", "show"]).map((l) => String(l["ifname"]));
      assert.deepEqual(leftovers(host, network, ctrLinks), nothing);
      assert.equal(
        host.ns
          .exec("iptables-save", ["-t", "filter"])
          .split("\n")
          .filter((l) => l.includes(containerIdOf(ctr))).length,
        0,
      );
    });
  }
});
