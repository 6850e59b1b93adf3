/**
 * The two per-network files that say who is on a network, as text: dnsmasq's `addnhosts` in containers/dnsname's
 * format (one line per address: `IP<TAB>name[<TAB>alias...]`; what Go's plugin and ours both read and write), and
 * tscni's record of which attachment (container ID and interface) wrote which lines, in a file of its own that Go's
 * plugin never reads. Pure functions: the files are read and written in state.ts.
 * @module
 */
import { tryParseIP } from "#ip/ip.js";

/** One address's line for a container: its address, its name, then its aliases, tab-separated, as Go writes it. */
export const hostsLine = (address: string, name: string, aliases: readonly string[]): string => [address, name, ...aliases].join("\t");

/** The lines of a hosts file's text (blank lines dropped, others kept as they are). */
export const hostsLines = (text: string): string[] => text.split("\n").filter((l) => l.trim() !== "");

/** The text of a hosts file holding `lines`. */
export const hostsText = (lines: readonly string[]): string => lines.map((l) => `${l}\n`).join("");

/** A line's fields as dnsmasq (and Go's DEL) split it: on any run of blanks. */
const fieldsOf = (line: string): string[] => line.trim().split(/\s+/);

/** A line's address in canonical form (undefined for a line that does not start with one). */
export const lineAddress = (line: string): string | undefined => tryParseIP(fieldsOf(line)[0] ?? "")?.text;

/** Which lines belong to an attachment: those of its addresses (with its name, when known), or else those of its name. */
export interface LineOwner {
  addresses: readonly string[];
  name?: string;
}

/**
 * Whether `line` is the owner's. With addresses, a line of one of them whose name field is the owner's name (any
 * name when unknown); without addresses, a line whose name field is the name (Go's DEL: the second field).
 */
export function ownsLine(owner: LineOwner, line: string): boolean {
  const name = fieldsOf(line)[1];
  if (owner.addresses.length > 0) {
    const address = lineAddress(line);
    return address !== undefined && owner.addresses.includes(address) && (owner.name === undefined || name === owner.name);
  }
  return owner.name !== undefined && name === owner.name;
}

/** Whether the lines give `address` the name `name` and every alias in `aliases` (CHECK). */
export function linesName(lines: readonly string[], address: string, name: string, aliases: readonly string[]): boolean {
  return lines.some((l) => {
    const f = fieldsOf(l);
    return lineAddress(l) === address && f[1] === name && aliases.every((a) => f.slice(2).includes(a));
  });
}

/** What tscni remembers of one attachment on a network: enough to find its lines when DEL has no prevResult, and for GC. */
export interface AttachmentRecord {
  containerID: string;
  ifName: string;
  name: string;
  aliases: string[];
  addresses: string[];
}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");

/** The records in a records file's text; a torn or foreign file, or an entry of the wrong shape, counts as none. */
export function parseRecords(text: string): AttachmentRecord[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return [];
  }
  const entries = (doc as { attachments?: unknown } | null)?.attachments;
  if (!Array.isArray(entries)) return [];
  return entries.filter((r): r is AttachmentRecord => {
    const e = r as Partial<AttachmentRecord> | null;
    return (
      typeof e?.containerID === "string" &&
      typeof e.ifName === "string" &&
      typeof e.name === "string" &&
      isStringList(e.aliases) &&
      isStringList(e.addresses)
    );
  });
}

/** The text of a records file. */
export const recordsText = (records: readonly AttachmentRecord[]): string => `${JSON.stringify({ attachments: records }, null, 1)}\n`;

/** Whether a record is the attachment's. */
export const isAttachment = (r: AttachmentRecord, containerID: string, ifName: string): boolean =>
  r.containerID === containerID && r.ifName === ifName;
