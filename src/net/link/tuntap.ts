/**
 * Making a persistent tap device in a namespace. A tap is not made over rtnetlink (the kernel refuses:
 * "tun/tap creation via rtnetlink is not supported"): a process opens /dev/net/tun and asks for the device
 * with the TUNSETIFF ioctl, then sets its owner, group and persistence with more ioctls. Which namespace the
 * device lands in is decided when /dev/net/tun is opened (the opener's), so that must happen inside the
 * container.
 *
 * That is done by `ip tuntap add`, run inside the namespace (`ip -n`, or nsenter), rather than by ioctls
 * through Bun's FFI, because: iproute2 is already the network layer's fallback for everything, so it is there
 * whenever tscni works at all; it carries out exactly that ioctl sequence, with the flags `ip` users know
 * (`multi_queue`, `user`, `group`; no packet-information header); it works the same under the Node build, which
 * has no FFI; our own process never has to enter the container's namespace to open the device; and a tap is
 * made once per sandbox start (VM sandboxes), where one process costs nothing that matters. It is also what
 * the Go plugin runs in most cases (docs/plugins.md has the case where it does not).
 * @module
 */
import { existsSync } from "node:fs";
import type { NetNS } from "../netns.js";
import { runIn, runIpIn } from "../tools.js";

/** The tap to make. */
export interface TapSpec {
  name: string;
  multiQueue: boolean;
  owner?: number;
  group?: number;
}

/** The `ip` words that make the tap. */
export function tuntapAddWords(spec: TapSpec): string[] {
  const words = ["tuntap", "add", "mode", "tap", "name", spec.name];
  if (spec.multiQueue) words.push("multi_queue");
  if (spec.owner !== undefined) words.push("user", String(spec.owner));
  if (spec.group !== undefined) words.push("group", String(spec.group));
  return words;
}

/** Whether SELinux is enabled here (its file system is mounted), so that a label on a process means something. */
export const selinuxEnabled = (): boolean => existsSync("/sys/fs/selinux/enforce");

/**
 * Makes the tap in `ns`. With an SELinux label, when SELinux is enabled, `ip` runs under that label
 * (`runcon`), so the device is created in that context; without SELinux a label has nothing to apply to and
 * `onLabelIgnored` is told.
 */
export async function createTap(
  ns: NetNS,
  spec: TapSpec,
  opts: { selinuxContext?: string; onLabelIgnored?: (why: string) => void } = {},
): Promise<void> {
  const operation = `create tap ${spec.name} in ${ns}`;
  if (opts.selinuxContext) {
    if (selinuxEnabled()) {
      await runIn(ns, "runcon", [opts.selinuxContext, "ip", ...tuntapAddWords(spec)], operation);
      return;
    }
    opts.onLabelIgnored?.("SELinux is not enabled on this host");
  }
  await runIpIn(ns, tuntapAddWords(spec), operation);
}
