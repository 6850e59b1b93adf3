import assert from "node:assert/strict";
import os from "node:os";
import { describe, test } from "node:test";
import { ErrorCode } from "#spec/errors.js";
import { assertCniError } from "#testing/cni-error.js";
import { DEFAULT_LOCK_DIR, parseClusterIpamConfig, parseLocation, parsePoolLocation, readEtcdFiles } from "./config.js";

const base = (ipam: Record<string, unknown>, top: Record<string, unknown> = {}) =>
  Buffer.from(
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "net1",
      type: "bridge",
      ipam: { type: "cluster-ipam", etcd: { endpoints: ["http://127.0.0.1:2379"] }, ranges: [[{ subnet: "10.9.0.0/16" }]], ...ipam },
      ...top,
    }),
  );
const parse = (ipam: Record<string, unknown>, top: Record<string, unknown> = {}, cniArgs = "") => parseClusterIpamConfig(base(ipam, top), cniArgs);
const rejects = (ipam: Record<string, unknown>, msg: RegExp | string, code: number = ErrorCode.InvalidNetworkConfig) =>
  assertCniError(() => parse(ipam), code, msg);

describe("cluster-ipam config", () => {
  test("defaults: prefix /tscni/ipam/<network>/, node = host name, /26 and /122 blocks, 2 s dial, 5 s request and 100 s call timeouts", () => {
    const c = parse({ ranges: [[{ subnet: "10.9.0.0/16" }], [{ subnet: "fd09::/64" }]] });
    assert.equal(c.keyPrefix, "/tscni/ipam/net1/");
    assert.equal(c.node, os.hostname());
    assert.equal(c.lockDir, DEFAULT_LOCK_DIR);
    assert.deepEqual(c.etcd, { endpoints: ["http://127.0.0.1:2379"], dialTimeoutMs: 2000, requestTimeoutMs: 5000, callTimeoutMs: 100_000 });
    assert.equal(c.pools[0]!.blockAt(0n).cidr.text, "10.9.0.0/26");
    assert.equal(c.pools[1]!.blockAt(0n).cidr.text, "fd09::/122");
    assert.deepEqual(c.requestedIPs, []);
    assert.equal(c.nodeGraceMs, 0, "no node is ever taken for dead unless asked");
  });

  test("everything set", () => {
    const c = parse(
      {
        etcd: {
          endpoints: ["https://10.0.0.1:2379", "https://etcd-2:2379/"],
          certFile: "/c.pem",
          keyFile: "/k.pem",
          caFile: "/ca.pem",
          username: "cni",
          password: "pw",
          prefix: "/ipam/",
          dialTimeoutMs: 100,
          requestTimeoutMs: 900,
          callTimeoutMs: 30_000,
        },
        blockSize: 28,
        blockSizeV6: 120,
        nodeName: "node-1.example",
        exclude: ["10.9.0.0/24", "10.9.1.1"],
        lockDir: "/tmp/l",
        nodeGraceSeconds: 3600,
        routes: [{ dst: "0.0.0.0/0" }],
        dns: { nameservers: ["10.9.0.53"] },
      },
      { runtimeConfig: { ips: ["10.9.3.3"] }, args: { cni: { ips: ["10.9.2.2/16"] } } },
      "IP=10.9.4.4",
    );
    assert.deepEqual(c.etcd, {
      endpoints: ["https://10.0.0.1:2379", "https://etcd-2:2379"],
      certFile: "/c.pem",
      keyFile: "/k.pem",
      caFile: "/ca.pem",
      username: "cni",
      password: "pw",
      dialTimeoutMs: 100,
      requestTimeoutMs: 900,
      callTimeoutMs: 30_000,
    });
    assert.equal(c.keyPrefix, "/ipam/net1/");
    assert.equal(c.node, "node-1.example");
    assert.equal(c.nodeGraceMs, 3_600_000);
    assert.equal(c.pools[0]!.blockAt(0n).cidr.text, "10.9.0.0/28");
    assert.equal(c.pools[0]!.refusal(c.pools[0]!.resultFor(0x0a090105n).ip), undefined);
    assert.equal(c.pools[0]!.refusal(c.pools[0]!.resultFor(0x0a090101n).ip), "10.9.1.1 is excluded (ipam.exclude[1])");
    assert.deepEqual(
      c.requestedIPs.map((ip) => ip.text),
      ["10.9.4.4", "10.9.2.2", "10.9.3.3"],
    );
    assert.deepEqual(c.dns, { nameservers: ["10.9.0.53"] });
    assert.equal(c.routes.length, 1);
  });

  test("bad values name the key and the value (code 7)", () => {
    rejects({ etcd: undefined }, /missing "ipam.etcd"/);
    rejects({ etcd: { endpoints: [] } }, 'invalid "ipam.etcd.endpoints": [] (want at least one URL such as http://127.0.0.1:2379)');
    rejects({ etcd: { endpoints: ["127.0.0.1:2379"] } }, /invalid "ipam.etcd.endpoints\[0\]": "127.0.0.1:2379"/);
    rejects(
      { etcd: { endpoints: ["unix:///run/etcd.sock"] } },
      'invalid "ipam.etcd.endpoints[0]": "unix:///run/etcd.sock" (want an http:// or https:// URL)',
    );
    rejects({ etcd: { endpoints: ["http://h:2379/v3"] } }, /want scheme:\/\/host:port and nothing else/);
    rejects({ etcd: { endpoints: ["https://h:2379"], certFile: "/c" } }, /invalid "ipam.etcd.keyFile": null \(want a file: certFile is set/);
    rejects({ etcd: { endpoints: ["http://h:2379"], caFile: "/ca" } }, /"ipam.etcd.caFile": "\/ca" \(TLS files need https:\/\/ endpoints\)/);
    rejects({ etcd: { endpoints: ["http://h:2379"], password: "x" } }, /"ipam.etcd.username": null \(want a user name: password is set\)/);
    rejects({ etcd: { endpoints: ["http://h:2379"], prefix: "tscni" } }, /"ipam.etcd.prefix": "tscni"/);
    rejects({ etcd: { endpoints: ["http://h:2379"], requestTimeoutMs: -1 } }, /"ipam.etcd.requestTimeoutMs": -1 \(want milliseconds/);
    rejects({ etcd: { endpoints: ["http://h:2379"], dialTimeoutMs: "5s" } }, /"ipam.etcd.dialTimeoutMs": "5s" \(want an integer\)/);
    rejects({ blockSize: 16 }, 'invalid "ipam.blockSize": 16 (want an IPv4 prefix length from 20 to 32)');
    rejects({ nodeGraceSeconds: -5 }, 'invalid "ipam.nodeGraceSeconds": -5 (want seconds from 1 to 31536000 (a year), or 0 for never)');
    rejects({ blockSizeV6: 64 }, 'invalid "ipam.blockSizeV6": 64 (want an IPv6 prefix length from 116 to 128)');
    rejects({ nodeName: "a/b" }, /"ipam.nodeName": "a\/b"/);
    rejects({ exclude: ["10.9.0.0/33"] }, 'invalid "ipam.exclude[0]": "10.9.0.0/33" (want a CIDR or an IP address)');
    rejects({ ranges: [] }, /no IP ranges specified/);
    rejects({ ranges: [[{ subnet: "10.9.0.0/16" }], [{ subnet: "10.9.1.0/24" }]] }, /range set 0 overlaps with 1/);
    rejects({ ranges: [[{ subnet: "10.9.0.1/16" }]] }, /has host bits set/);
  });

  test("CNI_ARGS errors are code 4; bad requested IPs in the config code 7", () => {
    assert.throws(() => parse({}, {}, "IP=nope"), { code: ErrorCode.InvalidEnvironmentVariables });
    assert.throws(() => parse({}, { runtimeConfig: { ips: ["x"] } }), { code: 7, msg: 'invalid "runtimeConfig.ips[0]": "x" (want an IP address)' });
  });

  test("DEL and GC read the location and the valid attachments, not the ranges; STATUS reads the pools", () => {
    const conf = base({ nodeName: "n1" }, { cniVersion: "1.1.0", "cni.dev/valid-attachments": [{ containerID: "c", ifname: "eth0" }] });
    const loc = parseLocation(conf);
    assert.deepEqual(loc.validAttachments, [{ containerID: "c", ifname: "eth0" }]);
    assert.deepEqual(loc.prevAddresses, []);
    const withPrev = parseLocation(
      base(
        { nodeName: "n1" },
        { prevResult: { cniVersion: "1.1.0", ips: [{ address: "10.9.0.7/16" }, { address: "bad" }, { address: "fd09::7/64" }] } },
      ),
    );
    assert.deepEqual(
      withPrev.prevAddresses.map((ip) => ip.text),
      ["10.9.0.7", "fd09::7"],
      "DEL reads the ADD's addresses from prevResult",
    );
    assert.equal(loc.node, "n1");
    assert.equal(parsePoolLocation(conf).pools.length, 1);
    const badRanges = base({ nodeName: "n1", ranges: [[{ subnet: "nonsense" }]] });
    assert.equal(parseLocation(badRanges).node, "n1", "a DEL does not fail on ranges it does not use");
    assert.throws(() => parsePoolLocation(badRanges), { code: 7 });
  });

  test("TLS files are read when the client is made; one that cannot be read is named", () => {
    const c = parse({ etcd: { endpoints: ["https://h:2379"], caFile: "/nonexistent/ca.pem" } });
    assert.throws(() => readEtcdFiles(c.etcd), { code: 7, msg: 'invalid "ipam.etcd.caFile": "/nonexistent/ca.pem" (cannot read it: ENOENT)' });
  });
});
