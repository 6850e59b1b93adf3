import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { hasEgressLimit, hasIngressLimit, ifbAlias, ifbName, loadBandwidthConf, loadNetworkOnly, MAX_BURST_BITS, parseIfbAlias } from "./config.js";

const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "bandwidth", ...extra }));

function rejects(extra: Record<string, unknown>, msg: RegExp) {
  assertCniError(() => loadBandwidthConf(conf(extra)), 7, msg);
}

describe("bandwidth config", () => {
  test("no limits at all", () => {
    assert.equal(loadBandwidthConf(conf({})).limits, undefined);
  });

  test("top-level keys", () => {
    const { limits } = loadBandwidthConf(conf({ ingressRate: 1000000, ingressBurst: 80000 }));
    assert.deepEqual(limits, { ingressRate: 1000000, ingressBurst: 80000, egressRate: 0, egressBurst: 0 });
    assert.equal(hasIngressLimit(limits!), true);
    assert.equal(hasEgressLimit(limits!), false);
  });

  test("runtimeConfig.bandwidth (capability) is used only without top-level keys", () => {
    const rc = { runtimeConfig: { bandwidth: { egressRate: 2000000, egressBurst: 160000 } } };
    assert.deepEqual(loadBandwidthConf(conf(rc)).limits, { ingressRate: 0, ingressBurst: 0, egressRate: 2000000, egressBurst: 160000 });
    // Any top-level key (even 0 or null) makes the top-level set win, as Go's embedded struct does.
    assert.deepEqual(loadBandwidthConf(conf({ ...rc, ingressRate: 0 })).limits, { ingressRate: 0, ingressBurst: 0, egressRate: 0, egressBurst: 0 });
    assert.deepEqual(loadBandwidthConf(conf({ ...rc, egressBurst: null })).limits?.egressRate, 0);
  });

  test("rate without burst and the reverse name the key", () => {
    rejects({ ingressRate: 1000 }, /"ingressRate": 1000 \(if a rate is set, "ingressBurst" must be set too\)/);
    rejects({ egressBurst: 1000 }, /"egressBurst": 1000 \(if a burst is set, "egressRate" must be set too\)/);
    rejects(
      { runtimeConfig: { bandwidth: { egressRate: 5000 } } },
      /"runtimeConfig\.bandwidth\.egressRate": 5000 .*"runtimeConfig\.bandwidth\.egressBurst"/,
    );
  });

  test("bad values", () => {
    rejects({ ingressRate: -1, ingressBurst: 10 }, /"ingressRate": -1/);
    rejects({ ingressRate: 1.5, ingressBurst: 10 }, /"ingressRate": 1\.5 .*integer/);
    rejects({ ingressRate: "1M", ingressBurst: 10 }, /"ingressRate": "1M"/);
    rejects({ ingressRate: 7, ingressBurst: 10 }, /"ingressRate": 7 .*at least 8 bits/);
    rejects({ egressRate: 8, egressBurst: MAX_BURST_BITS + 1 }, /"egressBurst": 34359738360 .*4 GB/);
    assert.equal(loadBandwidthConf(conf({ egressRate: 8, egressBurst: MAX_BURST_BITS })).limits?.egressBurst, MAX_BURST_BITS);
    rejects({ runtimeConfig: { bandwidth: [] } }, /"runtimeConfig\.bandwidth": \[\]/);
  });

  test("DEL and GC need only the network name", () => {
    assert.equal(loadNetworkOnly(conf({ ingressRate: 5 })).name, "net");
  });
});

describe("IFB naming", () => {
  test("Go's formula: bwp + sha512(network + containerID), 15 characters", () => {
    assert.equal(ifbName("rtestnet", "rtestcid0123456789"), "bwpc723d1892dbb");
  });

  test("the alias records the attachment", () => {
    assert.equal(ifbAlias("net", "abc"), "cni:bandwidth:net/abc");
    assert.deepEqual(parseIfbAlias("cni:bandwidth:net/abc"), { network: "net", containerID: "abc" });
    assert.equal(parseIfbAlias("something else"), undefined);
    assert.equal(parseIfbAlias(undefined), undefined);
    assert.equal(parseIfbAlias("cni:bandwidth:net/"), undefined);
    assert.equal(ifbAlias("n", "x".repeat(300)), undefined);
  });
});
