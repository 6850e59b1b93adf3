/**
 * Connection tracking: forgetting flows, so that new traffic takes new NAT decisions (a UDP flow to a host
 * port that was tracked before the port was mapped would otherwise keep going where it went). Uses the
 * `conntrack` tool (conntrack-tools) when it is installed; without it there is nothing to do.
 * @module
 */
import { NetOpError, runTool } from "../../../sys/exec.js";
import type { IPFamily } from "../../../spec/ip.js";

export type ConntrackProtocol = "tcp" | "udp" | "sctp";

/**
 * Deletes the tracked flows of a protocol whose original destination port is `port`, in one family, in this
 * process's network namespace. Resolves false when the conntrack tool is not installed. "0 flow entries
 * have been deleted" (which conntrack reports with exit status 1) is success.
 */
export async function deleteFlowsToPort(protocol: ConntrackProtocol, port: number, family: IPFamily): Promise<boolean> {
  const args = ["-D", "-f", family === 4 ? "ipv4" : "ipv6", "-p", protocol, "--orig-port-dst", String(port)];
  try {
    await runTool("conntrack", args, `delete ${protocol} conntrack entries to port ${port} (IPv${family})`);
  } catch (e) {
    if (e instanceof NetOpError) {
      if (/cannot run conntrack: .*ENOENT/.test(e.reason)) return false;
      if (/\b0 flow entries have been deleted/.test(e.reason)) return true;
    }
    throw e;
  }
  return true;
}
