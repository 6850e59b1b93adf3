/**
 * The container IDs tscni's own tools give the attachments they make: `cnitool add|del <network> <netns>` names a
 * namespace's attachments as upstream cnitool does, and `cnitool pod` names a pod `tscni-pod-<name>`. Node GC
 * (node-gc.ts) tells them from a CRI runtime's by these.
 * @module
 */
import { createHash } from "node:crypto";

/** Container ID cnitool uses for a netns: `cnitool-` + the first 20 hex digits of sha512(absolute path). */
export function containerIdForNetns(netnsPath: string): string {
  return "cnitool-" + createHash("sha512").update(netnsPath).digest("hex").slice(0, 20);
}

const POD_ID_PREFIX = "tscni-pod-";

/** The CNI container ID of a cnitool pod. */
export const podContainerId = (name: string): string => `${POD_ID_PREFIX}${name}`;

/** The name of the cnitool pod a container ID is, or undefined when it is not one. */
export const podNameOf = (containerID: string): string | undefined =>
  containerID.startsWith(POD_ID_PREFIX) ? containerID.slice(POD_ID_PREFIX.length) : undefined;
