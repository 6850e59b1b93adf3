/**
 * Connection tracking: forgetting flows, so that new traffic takes new NAT decisions (a UDP flow to a host
 * port that was tracked before the port was mapped would otherwise keep going where it went). Over ctnetlink
 * when it can be reached (the standalone build), as the Go plugin does; otherwise with the `conntrack` tool
 * (conntrack-tools) when it is installed, and without either there is nothing to do.
 * @module
 */

import type { IPFamily } from "#ip/ip.js";
import { concatBytes } from "#sys/bytes.js";
import { kindOfErrno, NetOpError } from "../errors.js";
import { netfilterSocket } from "../netlink/nfnetlink.js";
import { errnoText, NLM_F_ACK, NLM_F_DUMP, nlAttr, parseAttrs } from "../netlink/rtnetlink.js";
import { runTool } from "../tools.js";

export type ConntrackProtocol = "tcp" | "udp" | "sctp";

const NFNL_SUBSYS_CTNETLINK = 1;
const IPCTNL_MSG_CT_GET = 1;
const IPCTNL_MSG_CT_DELETE = 2;
const CTA_TUPLE_ORIG = 1;
const CTA_ZONE = 18;
const CTA_TUPLE_PROTO = 2;
const CTA_PROTO_NUM = 1;
const CTA_PROTO_DST_PORT = 3;
const NLA_F_NESTED = 0x8000;
const ENOENT = 2;
const PROTOCOL_NUMBERS: Record<ConntrackProtocol, number> = { tcp: 6, udp: 17, sctp: 132 };

/**
 * Deletes the tracked flows of a protocol whose original destination port is `port`, in one family, in this
 * process's network namespace. Resolves false when there is no way to (no ctnetlink, no conntrack tool).
 */
export async function deleteFlowsToPort(protocol: ConntrackProtocol, port: number, family: IPFamily): Promise<boolean> {
  const operation = `delete ${protocol} conntrack entries to port ${port} (IPv${family})`;
  const overNetlink = await deleteOverNetlink(PROTOCOL_NUMBERS[protocol], port, family === 4 ? 2 : 10, operation);
  if (overNetlink) return true;
  const args = ["-D", "-f", family === 4 ? "ipv4" : "ipv6", "-p", protocol, "--orig-port-dst", String(port)];
  try {
    await runTool("conntrack", args, operation);
  } catch (e) {
    if (e instanceof NetOpError) {
      if (e.kind === "tool-missing") return false;
      // "0 flow entries have been deleted" (reported with exit status 1): there were none, which is success.
      if (e.isNotFound) return true;
    }
    throw e;
  }
  return true;
}

/**
 * Dumps the family's conntrack table and deletes each entry whose original tuple has `protocol` and
 * destination port `port`, by that tuple (one already gone meanwhile is not an error). False when ctnetlink
 * cannot be reached from here.
 */
async function deleteOverNetlink(protocol: number, port: number, nfproto: number, operation: string): Promise<boolean> {
  const nl = await netfilterSocket();
  if (!nl) return false;
  const head = Uint8Array.of(nfproto, 0, 0, 0);
  const dump = nl.exchange((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET, NLM_F_DUMP, head, operation);
  if (dump.error) throw new NetOpError(operation, errnoText(dump.error.errno), 1, undefined, kindOfErrno(dump.error.errno));
  for (const m of dump.messages) {
    const attrs = parseAttrs(m.payload.subarray(4));
    const tuple = attrs.get(CTA_TUPLE_ORIG);
    const proto = tuple && parseAttrs(parseAttrs(tuple).get(CTA_TUPLE_PROTO) ?? new Uint8Array());
    const num = proto?.get(CTA_PROTO_NUM);
    const dport = proto?.get(CTA_PROTO_DST_PORT);
    if (!tuple || num?.[0] !== protocol || !dport || dport.length < 2 || ((dport[0]! << 8) | dport[1]!) !== port) continue;
    const zone = attrs.get(CTA_ZONE);
    const body = concatBytes(head, nlAttr(CTA_TUPLE_ORIG | NLA_F_NESTED, tuple), ...(zone ? [nlAttr(CTA_ZONE, zone)] : []));
    const { error } = nl.exchange((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE, NLM_F_ACK, body, operation);
    if (error && error.errno !== ENOENT) throw new NetOpError(operation, errnoText(error.errno), 1, undefined, kindOfErrno(error.errno));
  }
  return true;
}
