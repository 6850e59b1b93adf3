/**
 * The names CNI plugins give kernel and firewall objects, exactly as the Go plugins derive them, so either
 * implementation finds (and deletes) the other's: sha512 hex of the inputs, prefixed, cut to a length.
 * @module
 */
import { hexOf, randomBytes } from "#sys/bytes.js";

// No node:crypto on a plugin's start path (docs/startup.md): hashes use Bun's own hasher, node:crypto (loaded on
// first use) only under Node; random bytes come from sys/bytes.ts.
interface BunHasher {
  update(s: string): BunHasher;
  digest(encoding: "hex"): string;
}
const bunHasher = (globalThis as { Bun?: { CryptoHasher: new (algorithm: string) => BunHasher } }).Bun?.CryptoHasher;
const sha512Hex = (s: string): string =>
  bunHasher ? new bunHasher("sha512").update(s).digest("hex") : process.getBuiltinModule("node:crypto").createHash("sha512").update(s).digest("hex");

/** `(prefix + hex(sha512(s)))[:length]`. */
export const hashWithPrefix = (length: number, prefix: string, s: string): string => (prefix + sha512Hex(s)).slice(0, length);

/** Maximum iptables chain name length the plugins use. */
export const MAX_CHAIN_LENGTH = 28;

/** The per-container ipMasq chain (bridge, ptp): `CNI-` + hash(network + containerID). */
export const ipMasqChainName = (network: string, containerID: string): string => hashWithPrefix(MAX_CHAIN_LENGTH, "CNI-", network + containerID);

/** The rule comment identifying an attachment in iptables: `name: "<net>" id: "<id>"`. */
export const attachmentComment = (network: string, containerID: string): string =>
  `name: ${JSON.stringify(network)} id: ${JSON.stringify(containerID)}`;

/** A host-side veth name: `veth` + 8 random hex digits. */
export const randomVethName = (): string => "veth" + hexOf(randomBytes(4));

/** A random locally administered unicast MAC, as the kernel makes for a new link (eth_random_addr). */
export function randomMac(): string {
  const b = randomBytes(6);
  b[0] = (b[0]! & 0xfe) | 0x02;
  return hexOf(b, ":");
}

const hex16 = (s: string): string => sha512Hex(s).slice(0, 16);
/** The nftables hash of a network: the prefix of every rule comment of that network. */
export const nftNetworkHash = (network: string): string => hex16(network);
/** The nftables hash of one attachment: `<network hash>-<hash(ifname:containerID)>`. */
export const nftAttachmentHash = (network: string, ifName: string, containerID: string): string =>
  `${nftNetworkHash(network)}-${hex16(`${ifName}:${containerID}`)}`;

/**
 * The comment on an attachment's nftables rules (ipMasq, firewall): its hash first, then a readable
 * description, cut to nft's 128-character limit (Go's formula, so either finds the other's rules).
 */
export function nftAttachmentComment(network: string, ifName: string, containerID: string): string {
  const strip = (s: string) => s.replaceAll('"', "");
  return `${nftAttachmentHash(network, ifName, containerID)}, net: ${strip(network)}, if: ${strip(ifName)}, id: ${strip(containerID)}`.slice(0, 128);
}
