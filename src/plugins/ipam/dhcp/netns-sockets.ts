/**
 * The DHCPv4 client's sockets inside a container's network namespace (made as net/netns-sockets makes them:
 * the thread enters the namespace, creates the sockets and comes straight back).
 *
 * Per exchange, two sockets on the interface:
 * - a packet socket (AF_PACKET, SOCK_DGRAM, IPv4) bound to the interface, with a filter for UDP to port 68:
 *   it sends broadcasts from 0.0.0.0 before the interface has an address, and receives every reply whether
 *   the server broadcasts it or unicasts it to the offered address (which the kernel would not deliver to a
 *   UDP socket yet);
 * - a UDP socket bound to port 68 on the interface (SO_BINDTODEVICE) for unicast to the server (renew,
 *   release), so the kernel routes and resolves the server's address.
 * Replies are polled (net/netns-sockets' PolledReceiver). Sockets live only for one exchange, so the daemon
 * never keeps a container's namespace alive.
 * @module
 */
import {
  AF_INET,
  AF_PACKET,
  ETH_P_IP_BE,
  type Ffi,
  inNetns,
  int32Option,
  linkInfo,
  MSG_DONTWAIT,
  MSG_TRUNC,
  newSocket,
  PolledReceiver,
  requireFfi,
  SO_ATTACH_FILTER,
  SO_BINDTODEVICE,
  SO_BROADCAST,
  SO_REUSEADDR,
  SocketError,
  setOption,
  setUp,
  sockaddrIn,
  sockaddrLl,
  waitRunning,
} from "#net/netlink/netns-sockets.js";
import { DhcpFormatError, decodeIpUdp, encodeIpUdp } from "./packet.js";

const PACKET_OUTGOING = 4;
const DHCP_CLIENT_PORT = 68;
const DHCP_SERVER_PORT = 67;

/** A classic BPF program for a packet socket that starts at the IP header: accept UDP to port 68, not fragments. */
function udpPort68Filter(): Uint8Array {
  const insns: Array<[code: number, jt: number, jf: number, k: number]> = [
    [0x30, 0, 0, 9], //        ldb [9]            IP protocol
    [0x15, 0, 6, 17], //       jeq #17 ? next : drop
    [0x28, 0, 0, 6], //        ldh [6]            flags and fragment offset
    [0x45, 4, 0, 0x1fff], //   jset #0x1fff ? drop : next
    [0xb1, 0, 0, 0], //        ldxb 4*([0]&0xf)   IP header length
    [0x48, 0, 0, 2], //        ldh [x+2]          UDP destination port
    [0x15, 0, 1, DHCP_CLIENT_PORT], // jeq #68 ? accept : drop
    [0x06, 0, 0, 0x40000], //  ret accept
    [0x06, 0, 0, 0], //        ret drop
  ];
  const out = new Uint8Array(insns.length * 8);
  const view = new DataView(out.buffer);
  insns.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    out[i * 8 + 2] = jt;
    out[i * 8 + 3] = jf;
    view.setUint32(i * 8 + 4, k, true);
  });
  return out;
}

function attachFilter(f: Ffi, fd: number): void {
  const program = udpPort68Filter();
  const fprog = new Uint8Array(16); // struct sock_fprog { u16 len; struct sock_filter *filter; }
  const view = new DataView(fprog.buffer);
  view.setUint16(0, program.length / 8, true);
  view.setBigUint64(8, BigInt(f.pointerOf(program)), true);
  setOption(f, fd, SO_ATTACH_FILTER, fprog, "attaching the packet filter");
}

/** The sockets of one DHCP exchange on one interface in a container's namespace. */
export interface DhcpSockets {
  readonly ifName: string;
  readonly netns: string;
  /** The interface's hardware address (the client's chaddr). */
  readonly mac: Uint8Array;
  /**
   * Whether `address` is the interface's (primary IPv4) address: only then can the container reach the server
   * by unicast, since before the main plugin configures the address it has no route (a unicast sent anyway
   * leaves with source 0.0.0.0 and is lost without an error).
   */
  hasAddress(address: string): boolean;
  /** Sends a DHCP message to 255.255.255.255:67 (from `src`, 0.0.0.0 before the client has an address). */
  sendBroadcast(payload: Uint8Array, src: string): void;
  /** Sends a DHCP message to `dst`:67 from port 68, routed by the container's kernel. */
  sendUnicast(payload: Uint8Array, dst: string): void;
  /** The next datagram from port 67 to port 68, or undefined at `deadline` (epoch ms) or on abort. */
  receive(deadline: number, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  close(): void;
}

class OpenSockets extends PolledReceiver implements DhcpSockets {
  private readonly buffer = new Uint8Array(4096);
  private readonly from = new Uint8Array(20);
  private readonly fromLen = new Uint8Array(4);

  constructor(
    private readonly f: Ffi,
    readonly netns: string,
    readonly ifName: string,
    private readonly index: number,
    readonly mac: Uint8Array,
    private readonly address: string | undefined,
    private readonly packetFd: number,
    private readonly udpFd: number,
  ) {
    super();
  }

  hasAddress(address: string): boolean {
    return this.address === address;
  }

  sendBroadcast(payload: Uint8Array, src: string): void {
    const packet = encodeIpUdp(payload, src, "255.255.255.255", DHCP_CLIENT_PORT, DHCP_SERVER_PORT);
    const to = sockaddrLl(this.index, true);
    const n = Number(this.f.libc.sendto(this.packetFd, packet, packet.length, 0, to, to.length));
    if (n !== packet.length) throw new SocketError(`broadcasting on ${this.ifName} in ${this.netns}`, this.f.errno());
  }

  sendUnicast(payload: Uint8Array, dst: string): void {
    const to = sockaddrIn(dst, DHCP_SERVER_PORT);
    const n = Number(this.f.libc.sendto(this.udpFd, payload, payload.length, 0, to, to.length));
    if (n !== payload.length) throw new SocketError(`sending to ${dst} from ${this.ifName} in ${this.netns}`, this.f.errno());
  }

  protected drain(): Uint8Array[] {
    const out = this.drainPacketSocket();
    this.drainUdpSocket();
    return out;
  }

  private drainPacketSocket(): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (;;) {
      new DataView(this.fromLen.buffer).setUint32(0, this.from.length, true);
      const n = Number(this.f.libc.recvfrom(this.packetFd, this.buffer, this.buffer.length, MSG_DONTWAIT | MSG_TRUNC, this.from, this.fromLen));
      if (n < 0) return out; // EAGAIN: nothing more (any other error shows as a timeout)
      if (n > this.buffer.length) continue; // truncated: not a DHCP reply we could use
      if (this.from[10] === PACKET_OUTGOING) continue;
      try {
        const d = decodeIpUdp(this.buffer.subarray(0, n));
        if (d.srcPort === DHCP_SERVER_PORT && d.dstPort === DHCP_CLIENT_PORT) out.push(d.payload);
      } catch (e) {
        if (!(e instanceof DhcpFormatError)) throw e;
      }
    }
  }

  /** The UDP socket gets unicast replies too (the packet socket already has them): keep its queue empty. */
  private drainUdpSocket(): void {
    while (Number(this.f.libc.recvfrom(this.udpFd, this.buffer, this.buffer.length, MSG_DONTWAIT | MSG_TRUNC, this.from, this.fromLen)) >= 0) {
      /* discard */
    }
  }

  close(): void {
    if (this.closed) return;
    this.stopReceiving();
    this.f.libc.close(this.packetFd);
    this.f.libc.close(this.udpFd);
  }
}

/**
 * Opens the sockets of one exchange on `ifName` in the namespace at `netns`; with `bringUp` (acquiring, as
 * upstream does) a link that is down is set up, and its carrier waited for (at most a second). Throws
 * NetnsGoneError or LinkGoneError when either is missing,
 * OwnNetnsError when `netns` is the daemon's own namespace.
 */
export async function openDhcpSockets(netns: string, ifName: string, bringUp = false): Promise<DhcpSockets> {
  const f = await requireFfi();
  const [packetFd, udpFd] = inNetns(f, netns, () => {
    const p = newSocket(f, AF_PACKET, ETH_P_IP_BE, "packet");
    try {
      return [p, newSocket(f, AF_INET, 0, "UDP")] as const;
    } catch (e) {
      f.libc.close(p);
      throw e;
    }
  });
  try {
    const info = linkInfo(f, udpFd, ifName, netns);
    if (bringUp) {
      if (!info.up) setUp(f, udpFd, ifName, netns, true);
      // Acquiring on a link just made (even one already up): a DISCOVER sent before its carrier is lost.
      await waitRunning(f, udpFd, ifName);
    }
    attachFilter(f, packetFd);
    const ll = sockaddrLl(info.index);
    if (f.libc.bind(packetFd, ll, ll.length) !== 0) throw new SocketError(`binding the packet socket to ${ifName} in ${netns}`, f.errno());
    const one = int32Option(1);
    setOption(f, udpFd, SO_REUSEADDR, one, "SO_REUSEADDR");
    setOption(f, udpFd, SO_BROADCAST, one, "SO_BROADCAST");
    setOption(f, udpFd, SO_BINDTODEVICE, Buffer.from(`${ifName}\0`), `binding the UDP socket to ${ifName}`);
    const local = sockaddrIn("0.0.0.0", DHCP_CLIENT_PORT);
    if (f.libc.bind(udpFd, local, local.length) !== 0) throw new SocketError(`binding UDP port 68 on ${ifName} in ${netns}`, f.errno());
    const sockets = new OpenSockets(f, netns, ifName, info.index, info.mac, info.address, packetFd, udpFd);
    sockets.poll(); // drop whatever arrived between creating the packet socket and filtering it
    return sockets;
  } catch (e) {
    f.libc.close(packetFd);
    f.libc.close(udpFd);
    throw e;
  }
}
