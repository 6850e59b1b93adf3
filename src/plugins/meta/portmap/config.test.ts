import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCIDR } from "#ip/ip.js";
import { CniError } from "#spec/errors.js";
import { createResult } from "#spec/result/index.js";
import { assertCniError } from "#testing/cni-error.js";
import {
  backendSpecificKeys,
  conditionsBackend,
  containerAddresses,
  DEFAULT_DATA_DIR,
  forwardTarget,
  loadPortMapConf,
  mappingFor,
} from "./config.js";
import { chooseBackend } from "./engines.js";

const conf = (extra: Record<string, unknown>, mappings?: unknown) =>
  Buffer.from(
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "net",
      type: "portmap",
      ...(mappings !== undefined ? { runtimeConfig: { portMappings: mappings } } : {}),
      ...extra,
    }),
  );

/** Asserts a code-7 error whose message matches `msg`. */
function rejects(extra: Record<string, unknown>, msg: RegExp, mappings?: unknown) {
  assertCniError(() => loadPortMapConf(conf(extra, mappings)), 7, msg);
}

const tcp8080 = { hostPort: 8080, containerPort: 80, protocol: "tcp" };
const probes = (iptables: boolean, nftables: boolean) => ({ iptables: async () => iptables, nftables: async () => nftables });

describe("portmap config", () => {
  test("defaults", () => {
    const n = loadPortMapConf(conf({}));
    assert.deepEqual(n.mappings, []);
    assert.equal(n.snat, true);
    assert.equal(n.masqAll, false);
    assert.equal(n.markMasqBit, 13);
    assert.equal(n.externalSetMarkChain, undefined);
    assert.deepEqual([n.conditionsV4, n.conditionsV6], [[], []]);
    assert.equal(n.backend, undefined);
    assert.equal(n.dataDir, DEFAULT_DATA_DIR);
  });

  test("every key", () => {
    const n = loadPortMapConf(
      conf(
        {
          snat: false,
          masqAll: true,
          markMasqBit: 5,
          conditionsV4: ["-s", "1.2.3.4"],
          conditionsV6: ["!", "-s", "::1"],
          backend: "iptables",
          dataDir: "/tmp/pm",
        },
        [
          tcp8080,
          { hostPort: 5353, containerPort: 53, protocol: "UDP", hostIP: "192.0.2.1" },
          { hostPort: 9000, containerPort: 9000, protocol: "sctp", hostIP: "2001:db8::1" },
          { hostPort: 9001, containerPort: 9001, protocol: "tcp", hostIP: "" },
        ],
      ),
    );
    assert.deepEqual(
      n.mappings.map((m) => [m.hostPort, m.containerPort, m.protocol, m.hostIP?.text]),
      [
        [8080, 80, "tcp", undefined],
        [5353, 53, "udp", "192.0.2.1"],
        [9000, 9000, "sctp", "2001:db8::1"],
        [9001, 9001, "tcp", undefined],
      ],
    );
    assert.deepEqual([n.snat, n.masqAll, n.markMasqBit, n.backend, n.dataDir], [false, true, 5, "iptables", "/tmp/pm"]);
    assert.deepEqual(n.conditionsV6, ["!", "-s", "::1"]);
    assert.equal(loadPortMapConf(conf({ externalSetMarkChain: "KUBE-MARK-MASQ" })).externalSetMarkChain, "KUBE-MARK-MASQ");
  });

  test("bad mappings name the key and the value", () => {
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.hostPort": 0 .*1 to 65535/, [{ ...tcp8080, hostPort: 0 }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.hostPort": 65536/, [{ ...tcp8080, hostPort: 65536 }]);
    rejects({}, /"runtimeConfig\.portMappings\[1\]\.containerPort": -1/, [tcp8080, { ...tcp8080, containerPort: -1 }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.containerPort": 80\.5 .*integer/, [{ ...tcp8080, containerPort: 80.5 }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.hostPort": "8080"/, [{ ...tcp8080, hostPort: "8080" }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.hostPort": null/, [{ containerPort: 80, protocol: "tcp" }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.protocol": "icmp" .*"tcp", "udp", "sctp"/, [{ ...tcp8080, protocol: "icmp" }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.protocol": null/, [{ hostPort: 1, containerPort: 1 }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.hostIP": "10\.0\.0\.300" .*IPv4 or IPv6/, [{ ...tcp8080, hostIP: "10.0.0.300" }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]\.hostIP": "10\.0\.0\.0\/8"/, [{ ...tcp8080, hostIP: "10.0.0.0/8" }]);
    rejects({}, /"runtimeConfig\.portMappings\[0\]": "8080:80"/, ["8080:80"]);
    rejects({}, /"runtimeConfig\.portMappings": \{\}/, {});
  });

  test("bad options name the key and the value", () => {
    rejects({ backend: "pf" }, /"backend": "pf" .*"iptables" or "nftables"/);
    rejects({ markMasqBit: 32 }, /"markMasqBit": 32 .*0 to 31/);
    rejects({ markMasqBit: -1 }, /"markMasqBit": -1/);
    rejects({ markMasqBit: 14, externalSetMarkChain: "KUBE-MARK-MASQ" }, /"externalSetMarkChain": "KUBE-MARK-MASQ" .*"markMasqBit"/);
    rejects({ externalSetMarkChain: "" }, /"externalSetMarkChain": ""/);
    rejects({ externalSetMarkChain: "A B" }, /"externalSetMarkChain": "A B"/);
    rejects({ externalSetMarkChain: "X".repeat(29) }, /"externalSetMarkChain"/);
    rejects({ snat: "yes" }, /"snat": "yes"/);
    rejects({ masqAll: 1 }, /"masqAll": 1/);
    rejects({ conditionsV4: "-s 1.2.3.4" }, /"conditionsV4": "-s 1\.2\.3\.4"/);
    rejects({ conditionsV6: ["-s", 1] }, /"conditionsV6\[1\]": 1/);
  });

  test("a config that is not JSON is a decoding error (6)", () => {
    assert.throws(
      () => loadPortMapConf(Buffer.from("{")),
      (e: unknown) => e instanceof CniError && e.code === 6,
    );
  });

  test("conditions tell their backend by the first word", () => {
    assert.equal(conditionsBackend([]), undefined);
    assert.equal(conditionsBackend([""]), undefined);
    assert.equal(conditionsBackend(["-d", "1.2.3.4"]), "iptables");
    assert.equal(conditionsBackend(["!", "-d", "1.2.3.4"]), "iptables");
    assert.equal(conditionsBackend(["ip daddr 1.2.3.4"]), "nftables");
    const n = loadPortMapConf(conf({ externalSetMarkChain: "X", conditionsV4: ["ip saddr 1.2.3.4"], conditionsV6: ["-s", "::1"] }));
    assert.deepEqual(backendSpecificKeys(n), { iptables: ["externalSetMarkChain", "conditionsV6"], nftables: ["conditionsV4"] });
  });

  test("backend: configured, else iptables unless only nftables works; the other backend's keys are refused", async () => {
    const n = (extra: Record<string, unknown>) => loadPortMapConf(conf(extra));
    assert.equal(await chooseBackend(n({ backend: "nftables" }), probes(true, true)), "nftables");
    assert.equal(await chooseBackend(n({}), probes(true, true)), "iptables");
    assert.equal(await chooseBackend(n({}), probes(false, true)), "nftables");
    assert.equal(await chooseBackend(n({}), probes(false, false)), "iptables");
    await assert.rejects(
      chooseBackend(n({ backend: "nftables", externalSetMarkChain: "X" }), probes(true, true)),
      (e: CniError) =>
        e.code === 7 && e.msg === "nftables backend was requested but configuration contains iptables-specific options [externalSetMarkChain]",
    );
    await assert.rejects(
      chooseBackend(n({ conditionsV4: ["ip saddr 1.2.3.4"], conditionsV6: ["ip6 saddr ::1"] }), probes(true, true)),
      (e: CniError) =>
        e.code === 7 &&
        /iptables backend was requested .*nftables-specific options \[conditionsV4 conditionsV6\]/.test(e.msg) &&
        /"backend": "nftables"/.test(e.details),
    );
  });

  test("container addresses: the first per family on CNI_IFNAME in a sandbox, or not tied to an interface", () => {
    const prev = createResult("1.0.0", {
      cniVersion: "1.0.0",
      interfaces: [{ name: "br0" }, { name: "veth1" }, { name: "eth0", sandbox: "/run/netns/x" }, { name: "eth1", sandbox: "/run/netns/x" }],
      ips: [
        { address: "10.0.0.1/24", interface: 0 },
        { address: "10.0.1.5/24", interface: 3 },
        { address: "10.0.2.5/24", interface: 2 },
        { address: "10.0.3.5/24", interface: 2 },
        { address: "fd00::5/64", interface: 7 },
        { address: "fd01::5/64", interface: 2 },
      ],
    });
    const a = containerAddresses(prev, "eth0");
    assert.equal(a.v4?.text, "10.0.2.5/24");
    assert.equal(a.v6?.text, "fd00::5/64");
    const other = containerAddresses(prev, "eth9");
    assert.equal(other.v4, undefined);
    assert.deepEqual(other.v6, parseCIDR("fd00::5/64"));
    // 0.4.0 results work too, and an address without an interface counts.
    const old = createResult("0.4.0", { cniVersion: "0.4.0", ips: [{ version: "4", address: "10.9.0.2/16" }] });
    assert.equal(containerAddresses(old, "eth0").v4?.text, "10.9.0.2/16");
  });

  test("a mapping with hostIP applies to that family only; an unspecified hostIP matches any destination", () => {
    const n = loadPortMapConf(
      conf({}, [{ ...tcp8080, hostIP: "192.0.2.1" }, { ...tcp8080, hostIP: "::" }, { ...tcp8080, hostIP: "0.0.0.0" }, tcp8080]),
    );
    const [v4, v6, any4, plain] = n.mappings;
    assert.deepEqual(mappingFor(v4!, 4), { applies: true, destination: "192.0.2.1" });
    assert.deepEqual(mappingFor(v4!, 6), { applies: false });
    assert.deepEqual(mappingFor(v6!, 6), { applies: true, destination: undefined });
    assert.deepEqual(mappingFor(any4!, 4), { applies: true, destination: undefined });
    assert.deepEqual(mappingFor(plain!, 6), { applies: true });
    const t = forwardTarget(n, "id", parseCIDR("fd00::2/64"));
    assert.equal(t.conditions, n.conditionsV6);
  });
});
