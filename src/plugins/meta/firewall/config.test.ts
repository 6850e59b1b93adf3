import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Firewalld } from "#net/firewall/firewalld.js";
import { CniError } from "#spec/errors.js";
import { assertCniError } from "#testing/cni-error.js";
import { selectBackend } from "./backends.js";
import { loadFirewallConf } from "./config.js";

const conf = (keys: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "firewall", ...keys }));

/** A Firewalld whose `running` answer is fixed. */
const fakeFirewalld = (running: boolean) =>
  new Firewalld(async () => ({ stdout: JSON.stringify({ type: "b", data: [running] }), stderr: "" }), {
    DBUS_SYSTEM_BUS_ADDRESS: "tcp:host=nowhere",
  });

function rejects(keys: Record<string, unknown>, pattern: RegExp) {
  assertCniError(() => loadFirewallConf(conf(keys)), 7, pattern);
}

describe("firewall config", () => {
  test("defaults as the Go plugin: admin chain CNI-ADMIN, zone trusted, ingress open; records under /var/lib/cni/firewall", () => {
    const n = loadFirewallConf(conf({}));
    assert.equal(n.backend, undefined);
    assert.equal(n.iptablesAdminChainName, "CNI-ADMIN");
    assert.equal(n.firewalldZone, "trusted");
    assert.equal(n.ingressPolicy, "open");
    assert.equal(n.dataDir, "/var/lib/cni/firewall");
    assert.equal(n.prevResult, undefined);
  });

  test("keys are read, and an empty string means the default (as Go's zero value)", () => {
    const n = loadFirewallConf(
      conf({ backend: "nftables", iptablesAdminChainName: "MY-ADMIN", firewalldZone: "internal", ingressPolicy: "isolated", dataDir: "/tmp/x" }),
    );
    assert.deepEqual(
      [n.backend, n.iptablesAdminChainName, n.firewalldZone, n.ingressPolicy, n.dataDir],
      ["nftables", "MY-ADMIN", "internal", "isolated", "/tmp/x"],
    );
    const empty = loadFirewallConf(conf({ backend: "", iptablesAdminChainName: "", ingressPolicy: "" }));
    assert.deepEqual([empty.backend, empty.iptablesAdminChainName, empty.ingressPolicy], [undefined, "CNI-ADMIN", "open"]);
  });

  test("bad values are code 7 errors naming the key and value", () => {
    rejects({ backend: "ebtables" }, /"backend": "ebtables"/);
    rejects({ backend: 3 }, /"backend": 3/);
    rejects({ ingressPolicy: "closed" }, /"ingressPolicy": "closed"/);
    rejects({ iptablesAdminChainName: "has space" }, /"iptablesAdminChainName": "has space"/);
    rejects({ iptablesAdminChainName: "X".repeat(29) }, /"iptablesAdminChainName"/);
    rejects({ iptablesAdminChainName: "CNI-FORWARD" }, /"iptablesAdminChainName": "CNI-FORWARD".*taken/);
    rejects({ iptablesAdminChainName: "-x" }, /"iptablesAdminChainName": "-x"/);
    rejects({ firewalldZone: "--evil" }, /"firewalldZone": "--evil"/);
    rejects({ dataDir: "relative/dir" }, /"dataDir": "relative\/dir"/);
  });

  test("the prevResult is read in the config's version", () => {
    const n = loadFirewallConf(conf({ cniVersion: "0.4.0", prevResult: { cniVersion: "0.4.0", ips: [{ version: "4", address: "10.0.0.2/24" }] } }));
    assert.deepEqual(n.prevResult!.ips, [{ address: "10.0.0.2/24" }]);
  });

  test("backend selection: the configured one, else firewalld when it runs, else iptables", async () => {
    const pick = async (keys: Record<string, unknown>, running: boolean) =>
      (await selectBackend(loadFirewallConf(conf(keys)), fakeFirewalld(running))).name;
    assert.equal(await pick({}, false), "iptables");
    assert.equal(await pick({}, true), "firewalld");
    assert.equal(await pick({ backend: "iptables" }, true), "iptables");
    assert.equal(await pick({ backend: "nftables" }, true), "nftables");
    assert.equal(await pick({ backend: "firewalld" }, false), "firewalld");
  });

  test("firewalld that is not running: ADD and CHECK say so clearly, DEL and GC have nothing to do", async () => {
    const backend = await selectBackend(loadFirewallConf(conf({ backend: "firewalld" })), fakeFirewalld(false));
    const a = { network: "n", containerID: "c", ifName: "eth0", addresses: ["10.0.0.2/24"] };
    await assert.rejects(
      backend.add(a),
      (e: unknown) =>
        e instanceof CniError && /backend "firewalld": firewalld is not running/.test(e.msg) && /org\.fedoraproject\.FirewallD1/.test(e.details),
    );
    await assert.rejects(backend.check(a), /firewalld is not running/);
    await backend.remove(a);
    await backend.collect({
      network: "n",
      valid: [],
      stale: [{ containerID: "c", ifName: "eth0", backend: "firewalld", addresses: ["10.0.0.2/24"] }],
      claimed: new Set(),
    });
  });

  test("firewalld that runs: a source per address in the zone; CHECK fails for a source that is not there", async () => {
    const calls: string[][] = [];
    const fw = new Firewalld(
      async (args) => {
        calls.push(args);
        const data = args[4] === "NameHasOwner" ? [true] : args[4] === "querySource" ? [args[7] === "10.0.0.2/32"] : ["internal"];
        return { stdout: JSON.stringify({ data }), stderr: "" };
      },
      { DBUS_SYSTEM_BUS_ADDRESS: "tcp:host=nowhere" },
    );
    const backend = await selectBackend(loadFirewallConf(conf({ firewalldZone: "internal" })), fw);
    assert.equal(backend.name, "firewalld");
    await backend.add({ network: "n", containerID: "c", ifName: "eth0", addresses: ["10.0.0.2/24", "fd00::2/64"] });
    assert.deepEqual(
      calls.filter((c) => c[4] === "addSource").map((c) => c.slice(6)),
      [
        ["internal", "10.0.0.2/32"],
        ["internal", "fd00::2/128"],
      ],
    );
    assert.deepEqual(await backend.check({ network: "n", containerID: "c", ifName: "eth0", addresses: ["10.0.0.2/24", "fd00::2/64"] }), [
      "fd00::2/128 is not a source of firewalld zone internal",
    ]);
    await backend.collect({
      network: "n",
      valid: [],
      stale: [{ containerID: "old", ifName: "eth0", backend: "firewalld", addresses: ["10.0.0.3/24", "10.0.0.2/24"], zone: "internal" }],
      claimed: new Set(["10.0.0.2/32"]),
    });
    assert.deepEqual(
      calls.filter((c) => c[4] === "removeSource").map((c) => c.slice(6)),
      [["internal", "10.0.0.3/32"]],
    );
  });
});
