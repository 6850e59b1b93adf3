import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { backupOf, decodeBackup, encodeBackup } from "./backup.js";
import {
  changesLink,
  checkAllowlist,
  DEFAULT_DATA_DIR,
  loadTuningConf,
  loadTuningDataDir,
  readAllowlist,
  sysctlFilePath,
  sysctlSettings,
} from "./config.js";

const base = { cniVersion: "1.0.0", name: "net", type: "tuning" };
const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...base, ...extra }));

/** Asserts a CNI error with `code` whose message matches `msg`. */
function rejects(run: () => unknown, msg: RegExp, code = 7) {
  assertCniError(run, code, msg);
}

describe("tuning config", () => {
  test("defaults: nothing to change, Go's data directory", () => {
    const n = loadTuningConf(conf({}), "");
    assert.equal(n.sysctl.size, 0);
    assert.deepEqual(n.link, {});
    assert.equal(n.dataDir, DEFAULT_DATA_DIR);
    assert.equal(DEFAULT_DATA_DIR, "/run/cni/tuning");
    assert.equal(changesLink(n), false);
  });

  test("every key", () => {
    const n = loadTuningConf(
      conf({
        sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1", "net/ipv6/conf/all/forwarding": "0" },
        mac: "0A:58:0A:F4:00:01",
        mtu: 1400,
        promisc: true,
        allmulti: false,
        txQLen: 0,
        dataDir: "/tmp/x",
      }),
      "",
    );
    assert.deepEqual(
      [...n.sysctl],
      [
        ["net.ipv4.conf.IFNAME.arp_notify", "1"],
        ["net/ipv6/conf/all/forwarding", "0"],
      ],
    );
    assert.deepEqual(n.link, { mac: "0a:58:0a:f4:00:01", mtu: 1400, promisc: true, allmulti: false, txQLen: 0 });
    assert.equal(n.dataDir, "/tmp/x");
    assert.equal(changesLink(n), true);
  });

  test("false promisc and 0 mtu leave the link alone; allmulti false and txQLen 0 do not", () => {
    assert.deepEqual(loadTuningConf(conf({ promisc: false, mtu: 0 }), "").link, {});
    assert.deepEqual(loadTuningConf(conf({ allmulti: false }), "").link, { allmulti: false });
    assert.deepEqual(loadTuningConf(conf({ txQLen: 0 }), "").link, { txQLen: 0 });
  });

  test("MAC priority: mac < CNI_ARGS MAC < runtimeConfig.mac < args.cni.mac", () => {
    const m = (n: number) => `0a:00:00:00:00:0${n}`;
    assert.equal(loadTuningConf(conf({ mac: m(1) }), "").link.mac, m(1));
    assert.equal(loadTuningConf(conf({ mac: m(1) }), `IgnoreUnknown=1;MAC=${m(2)}`).link.mac, m(2));
    assert.equal(loadTuningConf(conf({ mac: m(1), runtimeConfig: { mac: m(3) } }), `MAC=${m(2)}`).link.mac, m(3));
    assert.equal(loadTuningConf(conf({ mac: m(1), runtimeConfig: { mac: m(3) }, args: { cni: { mac: m(4) } } }), `MAC=${m(2)}`).link.mac, m(4));
    // An empty args.cni.mac clears it, as in Go; an empty runtimeConfig.mac does not.
    assert.equal(loadTuningConf(conf({ mac: m(1), args: { cni: { mac: "" } } }), "").link.mac, undefined);
    assert.equal(loadTuningConf(conf({ mac: m(1), runtimeConfig: { mac: "" } }), "").link.mac, m(1));
  });

  test("args.cni overrides settings and merges sysctls", () => {
    const n = loadTuningConf(
      conf({
        sysctl: { "net.a": "1", "net.b": "2" },
        mtu: 1400,
        promisc: true,
        args: { cni: { sysctl: { "net.b": "3", "net.c": "4" }, mtu: 1300, promisc: false, allmulti: true, txQLen: 50 } },
      }),
      "",
    );
    assert.deepEqual(
      [...n.sysctl],
      [
        ["net.a", "1"],
        ["net.b", "3"],
        ["net.c", "4"],
      ],
    );
    assert.deepEqual(n.link, { mtu: 1300, allmulti: true, txQLen: 50 });
    // Unlike Go (which panics), args.cni.sysctl works without a top-level sysctl map.
    assert.deepEqual([...loadTuningConf(conf({ args: { cni: { sysctl: { "net.x": "1" } } } }), "").sysctl], [["net.x", "1"]]);
  });

  test("duplicate sysctl keys are rejected (JSON.parse would keep the last)", () => {
    const text = `{"cniVersion":"1.0.0","name":"n","type":"tuning","sysctl":{"net.a":"1","net.b":"1","net.a":"2"}}`;
    rejects(() => loadTuningConf(Buffer.from(text), ""), /"sysctl": "net\.a" \(the same sysctl key is given twice\)/);
    const inArgs = `{"cniVersion":"1.0.0","name":"n","type":"tuning","args":{"cni":{"sysctl":{"net.a":"1","net.a":"2"}}}}`;
    rejects(() => loadTuningConf(Buffer.from(inArgs), ""), /"args\.cni\.sysctl": "net\.a"/);
  });

  test("bad values name the key and the value", () => {
    rejects(() => loadTuningConf(conf({ sysctl: { "net.a": 1 } }), ""), /"sysctl\[\\"net\.a\\"\]": 1 .*string/);
    rejects(() => loadTuningConf(conf({ sysctl: ["net.a"] }), ""), /"sysctl": \["net\.a"\] .*object/);
    rejects(() => loadTuningConf(conf({ mac: "zz:00:00:00:00:01" }), ""), /"mac": "zz:00:00:00:00:01"/);
    rejects(() => loadTuningConf(conf({ mac: "01:00:5e:00:00:01" }), ""), /"mac".*multicast/);
    rejects(() => loadTuningConf(conf({ runtimeConfig: { mac: "nope" } }), ""), /"runtimeConfig\.mac": "nope"/);
    rejects(() => loadTuningConf(conf({}), "MAC=nope"), /"CNI_ARGS MAC": "nope"/);
    rejects(() => loadTuningConf(conf({ mtu: -1 }), ""), /"mtu": -1/);
    rejects(() => loadTuningConf(conf({ mtu: "1400" }), ""), /"mtu": "1400" .*integer/);
    rejects(() => loadTuningConf(conf({ txQLen: -5 }), ""), /"txQLen": -5/);
    rejects(() => loadTuningConf(conf({ promisc: "yes" }), ""), /"promisc": "yes"/);
    rejects(() => loadTuningConf(conf({ args: { cni: { allmulti: 1 } } }), ""), /"args\.cni\.allmulti": 1/);
    rejects(() => loadTuningConf(conf({ dataDir: 5 }), ""), /"dataDir": 5/);
    rejects(() => loadTuningConf(conf({}), "FOO=1"), /invalid CNI_ARGS: ARGS: unknown args \["FOO=1"\]/, 4);
  });

  test("DEL reads only the data directory", () => {
    assert.equal(loadTuningDataDir(conf({ mac: "bad", mtu: -1, dataDir: "/d" })), "/d");
    assert.equal(loadTuningDataDir(conf({ dataDir: "" })), DEFAULT_DATA_DIR);
  });
});

describe("sysctl paths", () => {
  test("dots become slashes, then the first IFNAME becomes the interface", () => {
    assert.equal(sysctlFilePath("net.ipv4.conf.IFNAME.arp_notify", "eth0"), "/proc/sys/net/ipv4/conf/eth0/arp_notify");
    assert.equal(sysctlFilePath("net.ipv4.conf.IFNAME.arp_notify", "eth0.100"), "/proc/sys/net/ipv4/conf/eth0.100/arp_notify");
    assert.equal(sysctlFilePath("net/ipv6/conf/IFNAME/accept_ra", "net1"), "/proc/sys/net/ipv6/conf/net1/accept_ra");
    assert.equal(sysctlFilePath("net.IFNAME.IFNAME", "e"), "/proc/sys/net/e/IFNAME");
    assert.equal(sysctlFilePath("net.core.somaxconn", "eth0"), "/proc/sys/net/core/somaxconn");
  });

  test("only under /proc/sys/net/", () => {
    rejects(() => sysctlFilePath("kernel.hostname", "eth0"), /"sysctl": "kernel\.hostname" .*net\.\*.*\/proc\/sys\/kernel\/hostname/);
    rejects(() => sysctlFilePath("net", "eth0"), /"sysctl": "net"/);
    // Dots are swapped first, so a key's own ".." never climbs; only the interface name could.
    assert.equal(sysctlFilePath("net/../kernel/x", "eth0"), "/proc/sys/net/kernel/x");
    rejects(() => sysctlFilePath("net.ipv4.conf.IFNAME.x", "../../../kernel"), /"sysctl"/);
    rejects(() => sysctlFilePath("netfilter.x", "eth0"), /"sysctl": "netfilter\.x"/);
  });

  test("settings keep config order", () => {
    const n = loadTuningConf(conf({ sysctl: { "net.b": "1", "net.a": "2" } }), "");
    assert.deepEqual(sysctlSettings(n, "eth0"), [
      { key: "net.b", path: "/proc/sys/net/b", value: "1" },
      { key: "net.a", path: "/proc/sys/net/a", value: "2" },
    ]);
  });
});

describe("sysctl allowlist", () => {
  test("absent file: anything goes; present: unanchored patterns", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-allow-"));
    try {
      const file = path.join(dir, "allowlist.conf");
      assert.equal(readAllowlist(file), undefined);
      checkAllowlist(["net.anything"], undefined);
      writeFileSync(file, "  ^net\\.ipv4\\.conf\\.IFNAME\\.\n\nsomaxconn\n");
      const list = readAllowlist(file);
      assert.deepEqual(list, ["^net\\.ipv4\\.conf\\.IFNAME\\.", "somaxconn"]);
      checkAllowlist(["net.ipv4.conf.IFNAME.arp_notify", "net.core.somaxconn"], list, file);
      rejects(() => checkAllowlist(["net.ipv6.conf.all.forwarding"], list, file), /"sysctl": "net\.ipv6\.conf\.all\.forwarding" \(not allowed by/);
      rejects(() => checkAllowlist(["net.x"], ["("], file), /invalid pattern "\("/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("tuning backup file", () => {
  const original = { mac: "0a:00:00:00:00:01", mtu: 1500, promisc: false, allmulti: true, txQLen: 1000 };

  test("only the changed settings, in Go's order and layout", () => {
    assert.equal(
      encodeBackup(backupOf(original, { txQLen: 5, mac: "0a:00:00:00:00:09", mtu: 1400, promisc: true, allmulti: false })),
      '{\n "mac": "0a:00:00:00:00:01",\n "promisc": false,\n "mtu": 1500,\n "allmulti": true,\n "txQLen": 1000\n}',
    );
    assert.equal(encodeBackup(backupOf(original, { mtu: 9000 })), '{\n "mtu": 1500\n}');
  });

  test("reads what Go (1.1.1, without txQLen) and we write", () => {
    assert.deepEqual(decodeBackup('{\n "mac": "0a:00:00:00:00:01",\n "promisc": false,\n "mtu": 1500,\n "allmulti": true\n}'), {
      mac: "0a:00:00:00:00:01",
      promisc: false,
      mtu: 1500,
      allmulti: true,
    });
    assert.deepEqual(decodeBackup('{"txQLen": 0}'), { txQLen: 0 });
    assert.equal(decodeBackup("not json"), undefined);
    assert.equal(decodeBackup("[1]"), undefined);
  });
});
