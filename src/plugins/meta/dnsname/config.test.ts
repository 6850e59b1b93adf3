import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CniError } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { assertCniError } from "#testing/cni-error.js";
import { attachmentOf, containerName, DEFAULT_DOMAIN, loadDelConf, loadDnsnameConf, NOT_CHAINED } from "./config.js";

const PREV = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "cni-podman0", mac: "aa:bb:cc:dd:ee:01" }, { name: "veth1" }, { name: "eth0", sandbox: "/run/netns/c" }],
  ips: [
    { address: "10.89.0.2/24", gateway: "10.89.0.1", interface: 2 },
    { address: "fd00::2/64", interface: 2 },
  ],
};
const conf = (keys: Record<string, unknown> = {}) =>
  Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "podnet", type: "dnsname", prevResult: PREV, ...keys }));
const ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web";

function refused(stdin: Buffer, cniArgs: string, code: number, pattern: RegExp) {
  assertCniError(() => loadDnsnameConf(stdin, cniArgs), code, pattern);
}

describe("dnsname config", () => {
  test("podman's entry: domain, the network's aliases, the pod name from CNI_ARGS, bridge and addresses from the prevResult", () => {
    const n = loadDnsnameConf(
      conf({ domainName: "dns.podman", capabilities: { aliases: true }, runtimeConfig: { aliases: { podnet: ["db", "cache"], other: ["x"] } } }),
      ARGS,
    );
    assert.equal(n.domainName, "dns.podman");
    assert.deepEqual(n.aliases, ["db", "cache"]);
    assert.equal(n.podName, "web");
    assert.deepEqual(attachmentOf(n.prevResult!), { bridge: "cni-podman0", addresses: ["10.89.0.2", "fd00::2"] });
  });

  test("Go's JSON rules: keys in any case, null as absent, the last duplicate wins; the default domain is podman's", () => {
    const n = loadDnsnameConf(
      Buffer.from(
        `{"cniVersion":"1.0.0","name":"podnet","type":"dnsname","DomainName":"a.test","domainname":"b.test","RuntimeConfig":{"Aliases":{"podnet":["x"]}},"prevResult":${JSON.stringify(PREV)}}`,
      ),
      ARGS,
    );
    assert.equal(n.domainName, "b.test");
    assert.deepEqual(n.aliases, ["x"]);
    assert.equal(loadDnsnameConf(conf({ domainName: null, runtimeConfig: null }), ARGS).domainName, DEFAULT_DOMAIN);
    assert.equal(loadDnsnameConf(conf({ domainName: "" }), ARGS).domainName, DEFAULT_DOMAIN);
    assert.deepEqual(loadDnsnameConf(conf({ runtimeConfig: { aliases: { podnet: ["a", "a", "b"] } } }), ARGS).aliases, ["a", "b"]);
  });

  test("chained only: no prevResult is code 7 with Go's words; a prevResult without a bridge or addresses is code 7", () => {
    refused(conf({ prevResult: undefined }), ARGS, 7, new RegExp(NOT_CHAINED));
    refused(conf({ prevResult: { cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24" }] } }), ARGS, 7, /first interface/);
    refused(
      conf({
        prevResult: { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/run/netns/c" }], ips: [{ address: "10.0.0.2/24", interface: 0 }] },
      }),
      ARGS,
      7,
      /in the container/,
    );
    refused(conf({ prevResult: { cniVersion: "1.0.0", interfaces: [{ name: "br0" }] } }), ARGS, 7, /no ip address was found/);
    refused(
      conf({ prevResult: { cniVersion: "1.0.0", interfaces: [{ name: "bad name" }], ips: [{ address: "10.0.0.2/24" }] } }),
      ARGS,
      7,
      /prevResult\.interfaces\[0\]\.name/,
    );
    refused(
      conf({ prevResult: { ...PREV, ips: [PREV.ips[0], { address: "10.0.0.9/24", interface: 7 }] } }),
      ARGS,
      7,
      /prevResult\.ips\[1\]\.interface/,
    );
  });

  test("addresses: one address whatever its interface (as Go); of several, those in a sandbox or naming no interface", () => {
    const at = (prev: Record<string, unknown>) =>
      attachmentOf({ cniVersion: "1.0.0", interfaces: [{ name: "br0" }, { name: "eth0", sandbox: "/x" }], ...prev } as Result100);
    assert.deepEqual(at({ ips: [{ address: "10.0.0.5/24", interface: 0 }] }).addresses, ["10.0.0.5"]);
    assert.deepEqual(
      at({ ips: [{ address: "10.0.0.1/24", interface: 0 }, { address: "10.0.0.5/24", interface: 1 }, { address: "fd00:0:0::0005/64" }] }).addresses,
      ["10.0.0.5", "fd00::5"],
    );
  });

  test("the pod name is required and must be a DNS name; CNI_ARGS follow Go's LoadArgs (unknown keys need IgnoreUnknown: code 4)", () => {
    refused(conf(), "", 7, /K8S_POD_NAME/);
    refused(conf(), "IgnoreUnknown=1;K8S_POD_NAME=", 7, /K8S_POD_NAME/);
    refused(conf(), "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web", 4, /unknown args/);
    assert.equal(loadDnsnameConf(conf(), "K8S_POD_NAME=web").podName, "web");
    refused(conf(), "IgnoreUnknown=1;K8S_POD_NAME=-web", 7, /"K8S_POD_NAME": "-web"/);
  });

  test("aliases and domainName that are not DNS names are code 7 naming the key and value", () => {
    refused(
      conf({ runtimeConfig: { aliases: { podnet: ["ok", "bad alias"] } } }),
      ARGS,
      7,
      /"runtimeConfig\.aliases\[\\"podnet\\"\]\[1\]": "bad alias"/,
    );
    refused(conf({ runtimeConfig: { aliases: { podnet: ["x\nnot-a-host"] } } }), ARGS, 7, /aliases/);
    refused(conf({ runtimeConfig: { aliases: { podnet: [null] } } }), ARGS, 7, /aliases/);
    refused(conf({ runtimeConfig: { aliases: { podnet: "db" } } }), ARGS, 7, /runtimeConfig\.aliases/);
    refused(conf({ domainName: "dns.podman\nserver=8.8.8.8" }), ARGS, 7, /"domainName"/);
    refused(conf({ domainName: "my_domain" }), ARGS, 7, /"domainName"/);
    refused(conf({ domainName: 5 }), ARGS, 7, /"domainName": 5/);
  });

  test("names: labels of letters, digits, '-' and '_' (podman's generated names), dots between; nothing that changes a hosts line", () => {
    for (const ok of [
      "web",
      "web-1",
      "exciting_chebyshev",
      "db.internal",
      "a",
      "1",
      "x".repeat(63),
      `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`,
    ]) {
      assert.equal(containerName(ok, "k"), ok);
    }
    for (const bad of ["", "-web", "web-", "a..b", ".web", "web.", "a b", "a\tb", "a#b", "a/b", "x".repeat(64), "é", `${"a.".repeat(127)}a`]) {
      assert.throws(
        () => containerName(bad, "k"),
        (e: unknown) => e instanceof CniError && e.code === 7 && e.msg.includes('"k"'),
        JSON.stringify(bad),
      );
    }
  });

  test("DEL reads only what it can: a bad pod name or prevResult is dropped, never an error", () => {
    const d = loadDelConf(conf({ prevResult: { cniVersion: "1.0.0", ips: "nope" } }), "K8S_POD_NAME=bad name");
    assert.deepEqual(d, { network: "podnet" });
    const ok = loadDelConf(conf(), "IgnoreUnknown=1;K8S_POD_NAME=web");
    assert.equal(ok.podName, "web");
    assert.equal(ok.prevResult?.ips?.length, 2);
    assert.deepEqual(loadDelConf(conf(), "Unknown=1"), { network: "podnet", prevResult: ok.prevResult });
  });
});
