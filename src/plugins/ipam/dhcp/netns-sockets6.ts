/**
 * The DHCPv6 client's socket inside a container's network namespace, made with net/netlink/netns-sockets.ts as the DHCPv4
 * ones are (the thread enters the namespace, creates the socket and comes straight back; Bun's FFI to libc).
 *
 * One UDP socket per exchange, bound to the interface's link-local address, port 546 (and to the interface,
 * SO_BINDTODEVICE), sending to ff02::1:2 port 547 on the interface (IPV6_MULTICAST_IF). A link-local address is
 * usable only once duplicate address detection has passed: right after the link comes up (a main plugin such as
 * bridge sets it up before calling IPAM, or the daemon does) it is tentative for one to two seconds, the kernel neither sends
 * from it nor answers the server's neighbour solicitations for it. So opening waits, up to the caller's deadline,
 * for a link-local address that is not tentative (an optimistic one, RFC 4429, where the namespace enables them,
 * is usable at once); an address whose DAD failed is an error. When acquiring, an interface whose IPv6 is
 * disabled (`disable_ipv6`) gets it enabled, as the main plugin does when it adds an IPv6 address.
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import {
  type Ffi,
  inNetns,
  int32Option,
  linkInfo,
  MSG_DONTWAIT,
  MSG_TRUNC,
  newSocket,
  PolledReceiver,
  requireFfi,
  SO_BINDTODEVICE,
  SO_REUSEADDR,
  SocketError,
  setOption,
  setUp,
  waitRunning,
  withProbeSocket,
} from "#net/netlink/netns-sockets.js";
import type { Dhcp6Sockets } from "./client6.js";
import { ipv6Bytes, ipv6Text } from "./packet6.js";

const AF_INET6 = 10;
const IPPROTO_IPV6 = 41;
const IPV6_MULTICAST_IF = 17;
const SIOCDIFADDR = 0x8936;
const IFA_F_DADFAILED = 0x08;
const IFA_F_OPTIMISTIC = 0x04;
const IFA_F_TENTATIVE = 0x40;
/** if_inet6's scope of a link-local address. */
const SCOPE_LINK = 0x20;
const DHCP6_CLIENT_PORT = 546;
const DHCP6_SERVER_PORT = 547;
/** All_DHCP_Relay_Agents_and_Servers (RFC 8415 §7.1). */
const ALL_SERVERS = "ff02::1:2";
/** How often opening looks at the link-local address while it is tentative. */
const DAD_POLL_MS = 20;

/** The interface has no usable link-local address by the deadline, or its DAD failed. */
export class LinkLocalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LinkLocalError";
  }
}

/** One line of /proc/net/if_inet6: an address of an interface, with its prefix length, scope and flags. */
interface InetAddress6 {
  address: string;
  index: number;
  prefix: number;
  scope: number;
  flags: number;
}

/** The IPv6 addresses of the calling thread's namespace (its /proc/thread-self/net/if_inet6). */
function threadAddresses6(): InetAddress6[] {
  let text: string;
  try {
    text = readFileSync("/proc/thread-self/net/if_inet6", "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return []; // IPv6 off in the kernel (ipv6.disable=1)
    throw e;
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [hex, index, prefix, scope, flags] = line.trim().split(/\s+/);
      return {
        address: ipv6Text(Buffer.from(hex!, "hex")),
        index: parseInt(index!, 16),
        prefix: parseInt(prefix!, 16),
        scope: parseInt(scope!, 16),
        flags: parseInt(flags!, 16),
      };
    });
}

/** Turns IPv6 on for `ifName` when it is off (in the calling thread's namespace); throws when the kernel has no IPv6. */
function enableIPv6(ifName: string, netns: string): void {
  const file = `/proc/sys/net/ipv6/conf/${ifName}/disable_ipv6`;
  let value: string;
  try {
    value = readFileSync(file, "utf8").trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new LinkLocalError(`${ifName} in ${netns} has no IPv6 (the kernel's IPv6 is off)`);
    throw e;
  }
  if (value !== "0") writeFileSync(file, "0");
}

/**
 * The interface's usable link-local address, waiting (polling) until `readyBy` while it is tentative or missing.
 * Throws LinkLocalError when its DAD failed or the deadline passes.
 */
async function usableLinkLocal(f: Ffi, netns: string, ifName: string, index: number, readyBy: number): Promise<string> {
  for (;;) {
    const linkLocal = inNetns(f, netns, threadAddresses6).filter((a) => a.index === index && a.scope === SCOPE_LINK);
    const usable = linkLocal.find((a) => !(a.flags & IFA_F_DADFAILED) && (!(a.flags & IFA_F_TENTATIVE) || a.flags & IFA_F_OPTIMISTIC));
    if (usable) return usable.address;
    const failed = linkLocal.find((a) => a.flags & IFA_F_DADFAILED);
    if (failed) throw new LinkLocalError(`duplicate address detection failed for ${failed.address}, the link-local address of ${ifName} in ${netns}`);
    if (Date.now() >= readyBy) {
      const tentative = linkLocal[0];
      throw new LinkLocalError(
        tentative
          ? `the link-local address ${tentative.address} of ${ifName} in ${netns} is still tentative (duplicate address detection has not finished)`
          : `${ifName} in ${netns} has no IPv6 link-local address (IPv6 off on it, or the link not up)`,
      );
    }
    await new Promise((r) => setTimeout(r, DAD_POLL_MS));
  }
}

function sockaddrIn6(address: string, port: number, scopeId: number): Uint8Array {
  const b = new Uint8Array(28);
  const view = new DataView(b.buffer);
  view.setUint16(0, AF_INET6, true);
  view.setUint16(2, port); // network order
  b.set(ipv6Bytes(address), 8);
  view.setUint32(24, scopeId, true);
  return b;
}

class OpenSockets6 extends PolledReceiver implements Dhcp6Sockets {
  private readonly buffer = new Uint8Array(65536);
  private readonly from = new Uint8Array(28);
  private readonly fromLen = new Uint8Array(4);
  private readonly servers: Uint8Array;

  constructor(
    private readonly f: Ffi,
    readonly netns: string,
    readonly ifName: string,
    index: number,
    readonly hwType: number,
    readonly mac: Uint8Array,
    private readonly fd: number,
  ) {
    super();
    this.servers = sockaddrIn6(ALL_SERVERS, DHCP6_SERVER_PORT, index);
  }

  send(payload: Uint8Array): void {
    const n = Number(this.f.libc.sendto(this.fd, payload, payload.length, 0, this.servers, this.servers.length));
    if (n !== payload.length) throw new SocketError(`sending to ${ALL_SERVERS} from ${this.ifName} in ${this.netns}`, this.f.errno());
  }

  protected drain(): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (;;) {
      new DataView(this.fromLen.buffer).setUint32(0, this.from.length, true);
      const n = Number(this.f.libc.recvfrom(this.fd, this.buffer, this.buffer.length, MSG_DONTWAIT | MSG_TRUNC, this.from, this.fromLen));
      if (n < 0) return out; // EAGAIN: nothing more (any other error shows as a timeout)
      if (n > this.buffer.length) continue;
      if (new DataView(this.from.buffer).getUint16(2) !== DHCP6_SERVER_PORT) continue;
      out.push(this.buffer.slice(0, n));
    }
  }

  close(): void {
    if (this.closed) return;
    this.stopReceiving();
    this.f.libc.close(this.fd);
  }
}

/**
 * Opens the socket of one DHCPv6 exchange on `ifName` in the namespace at `netns`, waiting until `readyBy` for the
 * interface's link-local address (see above); with `bringUp` (acquiring) IPv6 is enabled on the interface and a link
 * that is down is set up. Throws NetnsGoneError or LinkGoneError when either is missing, OwnNetnsError when `netns`
 * is the daemon's own namespace, LinkLocalError when there is no usable link-local address in time.
 */
export async function openDhcp6Sockets(netns: string, ifName: string, opts: { bringUp?: boolean; readyBy: number }): Promise<Dhcp6Sockets> {
  const f = await requireFfi();
  const fd = inNetns(f, netns, () => newSocket(f, AF_INET6, 0, "UDPv6"));
  try {
    const info = linkInfo(f, fd, ifName, netns);
    if (opts.bringUp) {
      inNetns(f, netns, () => enableIPv6(ifName, netns));
      if (!info.up) {
        setUp(f, fd, ifName, netns, true);
        await waitRunning(f, fd, ifName);
      }
    }
    const linkLocal = await usableLinkLocal(f, netns, ifName, info.index, opts.readyBy);
    setOption(f, fd, SO_REUSEADDR, int32Option(1), "SO_REUSEADDR");
    setOption(f, fd, SO_BINDTODEVICE, Buffer.from(`${ifName}\0`), `binding the UDPv6 socket to ${ifName}`);
    setOption(f, fd, IPV6_MULTICAST_IF, int32Option(info.index), "IPV6_MULTICAST_IF", IPPROTO_IPV6);
    const local = sockaddrIn6(linkLocal, DHCP6_CLIENT_PORT, info.index);
    if (f.libc.bind(fd, local, local.length) !== 0)
      throw new SocketError(`binding [${linkLocal}]:${DHCP6_CLIENT_PORT} on ${ifName} in ${netns}`, f.errno());
    return new OpenSockets6(f, netns, ifName, info.index, info.hwType, info.mac, fd);
  } catch (e) {
    f.libc.close(fd);
    throw e;
  }
}

/**
 * Removes `address` from `ifName` (what a client does when its DHCPv6 lease ends): returns false when the interface
 * does not carry it. Throws as openDhcp6Sockets does for a missing link or namespace.
 */
export async function removeAddress6(netns: string, ifName: string, address: string): Promise<boolean> {
  return withProbeSocket(
    netns,
    (f, fd) => {
      const { index } = linkInfo(f, fd, ifName, netns);
      const configured = inNetns(f, netns, threadAddresses6).find((a) => a.index === index && a.address === address);
      if (!configured) return false;
      const req = new Uint8Array(24); // struct in6_ifreq { in6_addr; u32 prefixlen; int ifindex; }
      req.set(ipv6Bytes(address), 0);
      const view = new DataView(req.buffer);
      view.setUint32(16, configured.prefix, true);
      view.setInt32(20, index, true);
      if (f.libc.ioctl(fd, SIOCDIFADDR, req) !== 0) throw new SocketError(`removing ${address} from ${ifName} in ${netns}`, f.errno());
      return true;
    },
    AF_INET6,
  );
}
