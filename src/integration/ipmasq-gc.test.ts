/**
 * GC of bridge ipMasq rules with the iptables backend (neither Go nor upstream has it): the masquerading of
 * attachments missing from `cni.dev/valid-attachments` goes, that of valid ones stays.
 */

import assert from "node:assert/strict";
import path from "node:path";
import { after, describe, test } from "node:test";
import { ipMasqChainName } from "#net/names.js";
import { Cleanup, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { containerIdOf, Host } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping ipMasq GC tests: ${skip}`);

describe("bridge GC removes stale iptables masquerading", { skip }, () => {
  const cleanup = new Cleanup();
  after(() => cleanup.run());

  test("stale attachment's chain and jump removed, live one untouched", async () => {
    const tag = runTag();
    const host = new Host(cleanup, `tscni-gch-${tag}`, OUR_BIN);
    const conf = {
      cniVersion: "1.1.0",
      name: `tcgc${tag}`,
      plugins: [
        { type: "bridge", bridge: `tcgc${tag}`, isGateway: true, ipMasq: true, ipMasqBackend: "iptables", ipam: host.hostLocal(["10.217.0.0/24"]) },
      ],
    };
    const network = host.writeNetwork(conf);
    const live = host.container(`tscni-gcl-${tag}`);
    const stale = host.container(`tscni-gcs-${tag}`);
    await host.add(network, live);
    await host.add(network, stale);
    const liveChain = ipMasqChainName(network, containerIdOf(live));
    const staleChain = ipMasqChainName(network, containerIdOf(stale));
    assert.match(host.natRules(), new RegExp(staleChain));

    const gcConf = {
      ...conf.plugins[0],
      name: network,
      cniVersion: "1.1.0",
      "cni.dev/valid-attachments": [{ containerID: containerIdOf(live), ifname: "eth0" }],
    };
    const r = await host.plugin(path.join(OUR_BIN, "bridge"), "GC", gcConf, { CNI_CONTAINERID: "", CNI_IFNAME: "" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const rules = host.natRules();
    assert.doesNotMatch(rules, new RegExp(staleChain), "stale chain and its POSTROUTING jump are gone");
    assert.match(rules, new RegExp(`-A POSTROUTING .*-j ${liveChain}`), "live jump kept");
    assert.match(rules, new RegExp(`-A ${liveChain} .*MASQUERADE`), "live chain kept");
    assert.deepEqual(host.allocations(network).length, 1, "IPAM GC released the stale address only");
    await host.must("del", network, live);
  });
});
