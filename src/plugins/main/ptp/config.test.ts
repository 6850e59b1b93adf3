import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CniError } from "#spec/errors.js";
import { assertCniError } from "#testing/cni-error.js";
import { loadPtpConf } from "./config.js";

const conf = (extra: Record<string, unknown>) =>
  Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "ptp", ipam: { type: "host-local" }, ...extra }));

/** Asserts a code-7 error whose message matches `msg`. */
function rejects(extra: Record<string, unknown>, msg: RegExp) {
  assertCniError(() => loadPtpConf(conf(extra)), 7, msg);
}

describe("ptp config", () => {
  test("defaults", () => {
    const n = loadPtpConf(conf({}));
    assert.equal(n.ipamType, "host-local");
    assert.equal(n.ipMasq, false);
    assert.equal(n.ipMasqBackend, undefined);
    assert.equal(n.mtu, undefined);
    assert.equal(n.conf.name, "net");
  });

  test("every key", () => {
    const n = loadPtpConf(conf({ ipMasq: true, ipMasqBackend: "nftables", mtu: 1400, dns: { nameservers: ["10.0.0.53"] } }));
    assert.deepEqual([n.ipMasq, n.ipMasqBackend, n.mtu], [true, "nftables", 1400]);
    assert.deepEqual(n.conf.dns?.nameservers, ["10.0.0.53"]);
    assert.equal(loadPtpConf(conf({ mtu: 0 })).mtu, undefined, "0 leaves the kernel default");
  });

  test("ipam is required", () => {
    rejects({ ipam: undefined }, /"ipam": null .*ipam\.type/);
    rejects({ ipam: {} }, /"ipam": \{\}/);
    rejects({ ipam: { type: "" } }, /"ipam"/);
  });

  test("bad values name the key and the value", () => {
    rejects({ mtu: 67 }, /"mtu": 67 .*68 to 65535/);
    rejects({ mtu: 65536 }, /"mtu": 65536/);
    rejects({ mtu: 1400.5 }, /"mtu": 1400.5 .*integer/);
    rejects({ mtu: "1400" }, /"mtu": "1400"/);
    rejects({ ipMasq: "true" }, /"ipMasq": "true"/);
    rejects({ ipMasqBackend: "pf" }, /"ipMasqBackend": "pf" .*iptables.*nftables/);
    rejects({ ipMasqBackend: 1 }, /"ipMasqBackend": 1/);
  });

  test("a config that is not JSON is a decoding error (6)", () => {
    assert.throws(
      () => loadPtpConf(Buffer.from("{")),
      (e: unknown) => e instanceof CniError && e.code === 6,
    );
  });
});
