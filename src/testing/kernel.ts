/**
 * What link kinds this kernel can make: tests of the plugins that need one skip with the kernel's reason where it
 * is missing (this VM lacks dummy, vlan, ipvlan and vrf links).
 * @module
 */
import { spawnSync } from "node:child_process";
import { MANIFESTS } from "#plugins/manifests.js";

/** Link kinds a test may need. */
export type LinkKind = "ipvlan" | "vlan" | "dummy";

/** The `ip link add` words of a kind, from the plugin's manifest. */
const probe = (kind: LinkKind): readonly string[] => MANIFESTS.find((m) => m.name === kind)!.linkKindProbe!;

/** Why this kernel cannot make links of `kind` (undefined when it can), tried in a namespace of its own. */
export function linkKindMissing(kind: LinkKind, tag: string): string | undefined {
  const ns = `tscni-lkprobe-${kind}-${tag}`;
  spawnSync("ip", ["netns", "add", ns]);
  try {
    spawnSync("ip", ["-n", ns, "link", "add", "pv0", "type", "veth", "peer", "name", "pv1"]);
    const r = spawnSync("ip", ["-n", ns, ...probe(kind)], { encoding: "utf8" });
    return r.status === 0 ? undefined : `this kernel has no ${kind} links (ip ${probe(kind).join(" ")}: ${r.stderr.trim()})`;
  } finally {
    spawnSync("ip", ["netns", "delete", ns]);
  }
}
