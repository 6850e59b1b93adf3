import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { CniError } from "#spec/errors.js";
import { loadSubnetEnv, parseSubnetEnv } from "./subnet-env.js";

const FILE = "/run/flannel/subnet.env";
const lines = (...l: string[]) => l.join("\n") + "\n";
const BASE = ["FLANNEL_NETWORK=10.244.0.0/16", "FLANNEL_SUBNET=10.244.3.1/24", "FLANNEL_MTU=1450", "FLANNEL_IPMASQ=true"];

/** Asserts parsing fails with `code` and a message matching `msg`. */
function fails(text: string, code: number, msg: RegExp) {
  assert.throws(
    () => parseSubnetEnv(text, FILE),
    (e: unknown) => e instanceof CniError && e.code === code && msg.test(e.msg),
    `${JSON.stringify(text)} should fail with ${code} ${msg}`,
  );
}

describe("flannel subnet.env", () => {
  test("flanneld's IPv4 file: host bits of the subnet cleared, as Go's net.ParseCIDR", () => {
    assert.deepEqual(parseSubnetEnv(lines(...BASE), FILE), {
      networks: ["10.244.0.0/16"],
      subnet: "10.244.3.0/24",
      ipv6Networks: [],
      mtu: 1450,
      ipMasq: true,
    });
  });

  test("dual stack, several networks (repeats dropped), CRLF lines, unknown lines and a repeated key (last wins)", () => {
    const env = parseSubnetEnv(
      [
        "# written by flanneld",
        "FLANNEL_NETWORK=10.1.0.0/16",
        "FLANNEL_NETWORK=10.244.0.0/16,10.245.0.0/16,10.244.0.1/16",
        "FLANNEL_SUBNET=10.244.3.1/24",
        "FLANNEL_IPV6_NETWORK=fd00:10:244::/56",
        "FLANNEL_IPV6_SUBNET=FD00:10:244:3::1/64",
        "FLANNEL_MTU=1400",
        "FLANNEL_IPMASQ=false",
        "OTHER=x",
        "",
      ].join("\r\n"),
      FILE,
    );
    assert.deepEqual(env, {
      networks: ["10.244.0.0/16", "10.245.0.0/16"],
      subnet: "10.244.3.0/24",
      ipv6Networks: ["fd00:10:244::/56"],
      ipv6Subnet: "fd00:10:244:3::/64",
      mtu: 1400,
      ipMasq: false,
    });
  });

  test("IPv6 only is complete", () => {
    const env = parseSubnetEnv(
      lines("FLANNEL_IPV6_NETWORK=fd00::/48", "FLANNEL_IPV6_SUBNET=fd00:0:0:7::/64", "FLANNEL_MTU=1280", "FLANNEL_IPMASQ=true"),
      FILE,
    );
    assert.deepEqual([env.networks, env.subnet, env.ipv6Subnet], [[], undefined, "fd00:0:0:7::/64"]);
  });

  test("missing keys are named with the file, in Go's words (code 7)", () => {
    fails(
      "",
      7,
      new RegExp(`^${FILE} is missing FLANNEL_NETWORK, FLANNEL_IPV6_NETWORK, FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET, FLANNEL_MTU, FLANNEL_IPMASQ$`),
    );
    fails(lines(BASE[0]!, BASE[1]!, BASE[2]!), 7, /is missing FLANNEL_IPMASQ$/);
    fails(lines(BASE[0]!, BASE[2]!, BASE[3]!), 7, /is missing FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET$/);
  });

  test("malformed values name the key, the value and the file (code 7)", () => {
    const withLine = (key: string, line: string) => lines(...BASE.filter((l) => !l.startsWith(`${key}=`)), line);
    fails(withLine("FLANNEL_MTU", "FLANNEL_MTU=abc"), 7, /^invalid FLANNEL_MTU in \/run\/flannel\/subnet.env: "abc"/);
    fails(withLine("FLANNEL_MTU", "FLANNEL_MTU=-1"), 7, /FLANNEL_MTU .*"-1"/);
    fails(withLine("FLANNEL_MTU", "FLANNEL_MTU=4294967296"), 7, /FLANNEL_MTU .*"4294967296"/);
    fails(withLine("FLANNEL_MTU", "FLANNEL_MTU= 1450"), 7, /FLANNEL_MTU .*" 1450"/);
    fails(withLine("FLANNEL_MTU", "FLANNEL_MTU"), 7, /FLANNEL_MTU .*KEY=VALUE/);
    fails(withLine("FLANNEL_SUBNET", "FLANNEL_SUBNET=10.244.3.1"), 7, /FLANNEL_SUBNET .*"10\.244\.3\.1" \(want a CIDR/);
    fails(withLine("FLANNEL_SUBNET", "FLANNEL_SUBNET=fd00::/64"), 7, /FLANNEL_SUBNET .*want an IPv4 CIDR/);
    fails(withLine("FLANNEL_NETWORK", "FLANNEL_NETWORK=10.244.0.0/16,bogus"), 7, /FLANNEL_NETWORK .*"10\.244\.0\.0\/16,bogus"/);
    fails(lines(...BASE, "FLANNEL_IPV6_SUBNET=10.1.0.0/24"), 7, /FLANNEL_IPV6_SUBNET .*want an IPv6 CIDR/);
    fails(withLine("FLANNEL_IPMASQ", "FLANNEL_IPMASQ=yes"), 7, /FLANNEL_IPMASQ .*"yes" \(want "true" or "false"\)/);
  });

  test("a missing file is 'try again later' (11) naming subnetFile; an unreadable one an I/O error (5)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-flannel-"));
    try {
      await assert.rejects(
        loadSubnetEnv(path.join(dir, "subnet.env")),
        (e: unknown) => e instanceof CniError && e.code === 11 && /subnet\.env \("subnetFile"\) does not exist/.test(e.msg),
      );
      await assert.rejects(loadSubnetEnv(dir), (e: unknown) => e instanceof CniError && e.code === 5 && /"subnetFile"/.test(e.msg));
      const file = path.join(dir, "ok.env");
      writeFileSync(file, lines(...BASE));
      chmodSync(file, 0o600);
      assert.equal((await loadSubnetEnv(file)).mtu, 1450);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
