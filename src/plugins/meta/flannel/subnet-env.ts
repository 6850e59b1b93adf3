/**
 * flannel's `subnet.env`: the file flanneld writes on each node (`KEY=VALUE` lines) telling the CNI plugin the
 * cluster networks, this node's subnets, the MTU and whether flanneld masquerades. Read as the flannel-io plugin
 * reads it — keys matched exactly, the value is everything after the first `=`, unknown lines ignored, a repeated
 * key's last line wins, `FLANNEL_NETWORK`/`FLANNEL_IPV6_NETWORK` may list several CIDRs separated by commas
 * (duplicates dropped), at least one network, one subnet, the MTU and IPMASQ required — with clearer failures: a
 * malformed value is an error naming the key, the value and the file (code 7), a missing file is "try again
 * later" (code 11: flanneld has not written it yet), and a subnet of the wrong address family is refused.
 * @module
 */
import { readFileSync } from "node:fs";
import { type IPCidr, networkOf, tryParseCIDR } from "#ip/ip.js";
import { type CniError, invalidConfig, ioFailure, tryAgainLater } from "#spec/errors.js";

/** What subnet.env says, CIDRs as Go's net.ParseCIDR returns them (host bits cleared). */
export interface SubnetEnv {
  /** FLANNEL_NETWORK: the cluster's IPv4 networks. */
  networks: string[];
  /** FLANNEL_SUBNET: this node's IPv4 subnet. */
  subnet?: string;
  /** FLANNEL_IPV6_NETWORK. */
  ipv6Networks: string[];
  /** FLANNEL_IPV6_SUBNET. */
  ipv6Subnet?: string;
  /** FLANNEL_MTU. */
  mtu: number;
  /** FLANNEL_IPMASQ: whether flanneld masquerades traffic leaving the cluster network. */
  ipMasq: boolean;
}

const KEYS = ["FLANNEL_NETWORK", "FLANNEL_SUBNET", "FLANNEL_IPV6_NETWORK", "FLANNEL_IPV6_SUBNET", "FLANNEL_MTU", "FLANNEL_IPMASQ"] as const;
type Key = (typeof KEYS)[number];

const MAX_UINT32 = 2 ** 32 - 1;

const invalid = (file: string, key: Key, value: string, want: string): CniError =>
  invalidConfig(
    `invalid ${key} in ${file}: ${JSON.stringify(value)} (${want})`,
    "flanneld writes this file; check the flannel pod log for this node",
  );

/** One CIDR of `family`, host bits cleared (Go's net.ParseCIDR network). */
function cidrOf(file: string, key: Key, text: string, family: 4 | 6, value = text): IPCidr {
  const cidr = tryParseCIDR(text);
  if (!cidr) throw invalid(file, key, value, "want a CIDR like " + (family === 4 ? "10.244.0.0/16" : "fd00:10:244::/56"));
  // An IPv4-mapped IPv6 text is IPv4 to Go; either way the family must match the key.
  if (cidr.ip.family !== family) throw invalid(file, key, value, `want an IPv${family} CIDR`);
  return networkOf(cidr);
}

/** A comma-separated list of networks, without repeats (same address and mask), in order. */
function networksOf(file: string, key: Key, value: string, family: 4 | 6): string[] {
  const out: string[] = [];
  for (const part of value.split(",")) {
    const text = cidrOf(file, key, part, family, value).text;
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

/** Parses subnet.env text; `file` names it in errors. */
export function parseSubnetEnv(text: string, file: string): SubnetEnv {
  const values = new Map<Key, string>();
  // Go's bufio.ScanLines: lines end at \n, and a \r before it is dropped.
  for (const line of text.split("\n").map((l) => l.replace(/\r$/, ""))) {
    const eq = line.indexOf("=");
    const name = eq < 0 ? line : line.slice(0, eq);
    if (!(KEYS as readonly string[]).includes(name)) continue;
    // Go's plugin indexes the value that is not there and panics; say what is wrong instead.
    if (eq < 0) throw invalid(file, name as Key, line, "want KEY=VALUE");
    values.set(name as Key, line.slice(eq + 1));
  }

  const env: SubnetEnv = { networks: [], ipv6Networks: [], mtu: 0, ipMasq: false };
  const network = values.get("FLANNEL_NETWORK");
  if (network !== undefined) env.networks = networksOf(file, "FLANNEL_NETWORK", network, 4);
  const ipv6Network = values.get("FLANNEL_IPV6_NETWORK");
  if (ipv6Network !== undefined) env.ipv6Networks = networksOf(file, "FLANNEL_IPV6_NETWORK", ipv6Network, 6);
  const subnet = values.get("FLANNEL_SUBNET");
  if (subnet !== undefined) env.subnet = cidrOf(file, "FLANNEL_SUBNET", subnet, 4).text;
  const ipv6Subnet = values.get("FLANNEL_IPV6_SUBNET");
  if (ipv6Subnet !== undefined) env.ipv6Subnet = cidrOf(file, "FLANNEL_IPV6_SUBNET", ipv6Subnet, 6).text;
  const mtu = values.get("FLANNEL_MTU");
  if (mtu !== undefined) {
    // strconv.ParseUint(s, 10, 32): decimal digits only, no sign, at most 2^32-1.
    if (!/^\d+$/.test(mtu) || Number(mtu) > MAX_UINT32) throw invalid(file, "FLANNEL_MTU", mtu, `want an integer from 0 to ${MAX_UINT32}`);
    env.mtu = Number(mtu);
  }
  const ipMasq = values.get("FLANNEL_IPMASQ");
  if (ipMasq !== undefined) {
    // Go reads anything but "true" as false; flanneld writes only "true" or "false", so anything else is a
    // damaged file, and guessing would decide who masquerades.
    if (ipMasq !== "true" && ipMasq !== "false") throw invalid(file, "FLANNEL_IPMASQ", ipMasq, 'want "true" or "false"');
    env.ipMasq = ipMasq === "true";
  }

  const missing: string[] = [];
  if (env.networks.length === 0 && env.ipv6Networks.length === 0) missing.push("FLANNEL_NETWORK", "FLANNEL_IPV6_NETWORK");
  if (env.subnet === undefined && env.ipv6Subnet === undefined) missing.push("FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET");
  if (mtu === undefined) missing.push("FLANNEL_MTU");
  if (ipMasq === undefined) missing.push("FLANNEL_IPMASQ");
  if (missing.length) {
    throw invalidConfig(`${file} is missing ${missing.join(", ")}`, "flanneld writes this file; check the flannel pod log for this node");
  }
  return env;
}

/** Reads and parses the subnet file named by the config's `subnetFile`. */
export async function loadSubnetEnv(file: string): Promise<SubnetEnv> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === "ENOENT") {
      throw tryAgainLater(
        `flannel's subnet file ${file} ("subnetFile") does not exist`,
        "flanneld writes it once it has a lease for this node; check the flannel pod log for this node",
      );
    }
    throw ioFailure(`cannot read flannel's subnet file ${file} ("subnetFile")`, e);
  }
  return parseSubnetEnv(text, file);
}
