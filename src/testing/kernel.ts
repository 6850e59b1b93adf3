/**
 * What link kinds this kernel can make: tests of the plugins that need one skip with the kernel's reason where it
 * is missing (this VM lacks dummy, vlan, ipvlan and vrf links).
 * @module
 */
import { spawnSync } from "node:child_process";

/** Link kinds a test may need. */
export type LinkKind = "ipvlan" | "vlan" | "dummy";

/** `ip link add` words that make a link of each kind in the probe namespace (on the veth `pv0` where it needs a parent). */
const PROBES: Record<LinkKind, string[]> = {
  ipvlan: ["link", "add", "p0", "link", "pv0", "type", "ipvlan", "mode", "l2"],
  vlan: ["link", "add", "p0", "link", "pv0", "type", "vlan", "id", "7"],
  dummy: ["link", "add", "p0", "type", "dummy"],
};

/** Why this kernel cannot make links of `kind` (undefined when it can), tried in a namespace of its own. */
export function linkKindMissing(kind: LinkKind, tag: string): string | undefined {
  const ns = `tscni-lkprobe-${kind}-${tag}`;
  spawnSync("ip", ["netns", "add", ns]);
  try {
    spawnSync("ip", ["-n", ns, "link", "add", "pv0", "type", "veth", "peer", "name", "pv1"]);
    const r = spawnSync("ip", ["-n", ns, ...PROBES[kind]], { encoding: "utf8" });
    return r.status === 0 ? undefined : `this kernel has no ${kind} links (ip ${PROBES[kind].join(" ")}: ${r.stderr.trim()})`;
  } finally {
    spawnSync("ip", ["netns", "delete", ns]);
  }
}
