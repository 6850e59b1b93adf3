import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCIDR } from "#ip/ip.js";
import { forwardTarget, loadPortMapConf } from "./config.js";
import { expectedRuleCounts, forwardScript } from "./nftables.js";

function target(extra: Record<string, unknown>, mappings: unknown[], container = "10.77.0.10/24") {
  const n = loadPortMapConf(
    Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "portmap", runtimeConfig: { portMappings: mappings }, ...extra })),
  );
  return forwardTarget(n, "ctr1", parseCIDR(container));
}

const MAPPINGS = [
  { hostPort: 8080, containerPort: 80, protocol: "tcp" },
  { hostPort: 5353, containerPort: 53, protocol: "udp", hostIP: "192.0.2.1" },
  { hostPort: 9090, containerPort: 90, protocol: "sctp", hostIP: "2001:db8::1" },
];

describe("portmap nftables rules", () => {
  test("IPv4: the Go plugin's table, chains and rules, one transaction", () => {
    assert.equal(
      forwardScript(target({}, MAPPINGS)),
      [
        `add table ip cni_hostport { comment "CNI portmap plugin" ; }`,
        "add chain ip cni_hostport hostports",
        "add chain ip cni_hostport hostip_hostports",
        "add chain ip cni_hostport hostports_all",
        "flush chain ip cni_hostport hostports_all",
        "add rule ip cni_hostport hostports_all jump hostip_hostports",
        "add rule ip cni_hostport hostports_all jump hostports",
        "add chain ip cni_hostport prerouting { type nat hook prerouting priority -100 ; }",
        "flush chain ip cni_hostport prerouting",
        "add rule ip cni_hostport prerouting fib daddr type local jump hostports_all",
        "add chain ip cni_hostport output { type nat hook output priority -100 ; }",
        "flush chain ip cni_hostport output",
        "add rule ip cni_hostport output fib daddr type local jump hostports_all",
        "add chain ip cni_hostport masquerading { type nat hook postrouting priority 100 ; }",
        `add rule ip cni_hostport hostports tcp dport 8080 dnat to 10.77.0.10:80 comment "ctr1"`,
        `add rule ip cni_hostport hostports ip daddr 192.0.2.1 udp dport 5353 dnat to 10.77.0.10:53 comment "ctr1"`,
        `add rule ip cni_hostport masquerading ip saddr 10.77.0.10 ip daddr 10.77.0.10 masquerade comment "ctr1"`,
        `add rule ip cni_hostport masquerading ip saddr 127.0.0.1 ip daddr 10.77.0.10 masquerade comment "ctr1"`,
        "",
      ].join("\n"),
    );
  });

  test("IPv6 with conditions and masqAll; no snat means no masquerading chain", () => {
    const s = forwardScript(target({ masqAll: true, conditionsV6: ["ip6 saddr != fd00::/8"] }, MAPPINGS, "fd77::2/64"));
    assert.match(s, /^add rule ip6 cni_hostport prerouting ip6 saddr != fd00::\/8 fib daddr type local jump hostports_all$/m);
    assert.match(s, /^add rule ip6 cni_hostport hostports tcp dport 8080 dnat to \[fd77::2\]:80 comment "ctr1"$/m);
    assert.match(s, /^add rule ip6 cni_hostport hostports ip6 daddr 2001:db8::1 sctp dport 9090 dnat to \[fd77::2\]:90 comment "ctr1"$/m);
    assert.doesNotMatch(s, /5353/);
    assert.match(s, /^add rule ip6 cni_hostport masquerading ip6 saddr ::\/0 ip6 daddr fd77::2 masquerade comment "ctr1"$/m);
    assert.equal(s.match(/masquerade/g)?.length, 1);
    assert.doesNotMatch(forwardScript(target({ snat: false }, MAPPINGS)), /masquerad/);
  });

  test("CHECK expects as many rules as ADD makes", () => {
    assert.deepEqual(expectedRuleCounts(target({}, MAPPINGS)), { hostports: 2, masquerading: 2 });
    assert.deepEqual(expectedRuleCounts(target({}, MAPPINGS, "fd77::2/64")), { hostports: 2, masquerading: 1 });
    assert.deepEqual(expectedRuleCounts(target({ masqAll: true }, MAPPINGS)), { hostports: 2, masquerading: 1 });
    assert.deepEqual(expectedRuleCounts(target({ snat: false }, MAPPINGS)), { hostports: 2, masquerading: 0 });
  });
});
