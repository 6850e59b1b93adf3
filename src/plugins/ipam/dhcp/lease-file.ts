/**
 * The daemon's leases on disk, so a restarted daemon (even after SIGKILL) renews and releases what it held:
 * one JSON file per lease in the lease directory (`-leasedir`), named by a hash of the client id (`lease-` for a
 * DHCPv4 lease, `lease6-` for a DHCPv6 one: an attachment of both families has two) and written atomically (a temp
 * file renamed over the old one), holding the attachment (container, network, interface, namespace), what its
 * messages carry (for DHCPv6 the DUID, so renewals and the release name the client as the acquisition did), the
 * server's answer as received and the lease's times. Only one daemon uses a directory at a time (it holds a lock on
 * `<leasedir>/lock`), so the files have a single writer. A DHCPv4 file is written as before DHCPv6 existed, with one
 * field more: `netnsInode`, the inode of the namespace the lease was acquired in (a file without it is read, and
 * its lease not taken up: leases.ts).
 * @module
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { messageOf } from "#spec/errors.js";
import { hexOf } from "#sys/bytes.js";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, removeStateFile, writeFileAtomic } from "#sys/state.js";
import type { Binding, SendSpec } from "./client.js";
import type { Binding6, SendSpec6 } from "./client6.js";
import type { Family } from "./config.js";

/** What every lease record holds: the attachment it belongs to. */
interface AttachmentFields {
  /** `containerID/network/ifName` (cut to 254 bytes): the attachment's key, shared by its leases of both families. */
  clientID: string;
  containerID: string;
  network: string;
  ifName: string;
  /** The namespace path as the plugin sent it (a restarted daemon opens it under `-hostprefix`). */
  netns: string;
  /**
   * The inode of the namespace the lease was acquired in (nsfs numbers a namespace while it lives): a restarted
   * daemon takes the lease up only in that namespace. Absent in files written before it was kept.
   */
  netnsInode?: number;
}

/** A held DHCPv4 lease: what its messages carry, and its binding. */
export interface LeaseRecord4 extends AttachmentFields {
  family: "ipv4";
  send: SendSpec;
  binding: Binding;
}

/** A held DHCPv6 lease (one address of an IA_NA): what its messages carry (the DUID among them), and its binding. */
export interface LeaseRecord6 extends AttachmentFields {
  family: "ipv6";
  send: SendSpec6;
  binding: Binding6;
}

/** One held lease. */
export type LeaseRecord = LeaseRecord4 | LeaseRecord6;

const FORMAT = 1;
const FILE_PATTERN = /^lease6?-[0-9a-f]{32}\.json$/;

/** The file name of a lease: its family and its client id hashed (ids can hold any byte and be 254 bytes long). */
export const leaseFileName = (clientID: string, family: Family = "ipv4"): string =>
  `${family === "ipv6" ? "lease6" : "lease"}-${createHash("sha256").update(clientID).digest("hex").slice(0, 32)}.json`;

const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");
const time = (t: number): number | null => (Number.isFinite(t) ? t : null);

/** The JSON text of a record (Infinity as null, bytes as base64). */
export function encodeLeaseRecord(r: LeaseRecord): string {
  const attachment = {
    clientID: r.clientID,
    containerID: r.containerID,
    network: r.network,
    ifName: r.ifName,
    netns: r.netns,
    ...(r.netnsInode !== undefined ? { netnsInode: r.netnsInode } : {}),
  };
  const b = r.binding;
  const times = { boundAt: time(b.boundAt), renewAt: time(b.renewAt), rebindAt: time(b.rebindAt), expiresAt: time(b.expiresAt) };
  const body =
    r.family === "ipv4"
      ? {
          format: FORMAT,
          ...attachment,
          send: {
            clientIdOption: b64(r.send.clientIdOption),
            options: [...r.send.options].map(([code, v]) => [code, b64(v)]),
            requestList: r.send.requestList,
          },
          binding: { address: r.binding.address, server: r.binding.server, mac: b64(r.binding.mac), ack: b64(r.binding.ack), ...times },
        }
      : {
          format: FORMAT,
          family: r.family,
          ...attachment,
          send: { duid: b64(r.send.duid), iaid: r.send.iaid, oro: r.send.oro, ...(r.send.fqdn ? { fqdn: b64(r.send.fqdn) } : {}) },
          binding: { address: r.binding.address, serverId: b64(r.binding.serverId), reply: b64(r.binding.reply), ...times },
        };
  return `${JSON.stringify(body, null, 2)}\n`;
}

class BadRecord extends Error {}

type Obj = Record<string, unknown>;

const obj = (v: unknown, where: string): Obj => {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new BadRecord(`${where} is not an object`);
  return v as Obj;
};
const str = (o: Obj, k: string, where: string): string => {
  if (typeof o[k] !== "string") throw new BadRecord(`${where}${k} is not a string`);
  return o[k] as string;
};
const bytes = (o: Obj, k: string, where: string): Uint8Array => Uint8Array.from(Buffer.from(str(o, k, where), "base64"));
const codes = (v: unknown, max: number): v is number[] => Array.isArray(v) && v.every((c) => Number.isInteger(c) && c >= 0 && c <= max);
/** The binding's times (null: never). */
function times(b: Obj): Pick<Binding, "boundAt" | "renewAt" | "rebindAt" | "expiresAt"> {
  const when = (k: string): number => {
    const v = b[k];
    if (v === null) return Infinity;
    if (typeof v !== "number" || !Number.isFinite(v)) throw new BadRecord(`binding.${k} is not a time`);
    return v;
  };
  return { boundAt: when("boundAt"), renewAt: when("renewAt"), rebindAt: when("rebindAt"), expiresAt: when("expiresAt") };
}

/** A namespace's inode number. */
function inode(v: unknown): number {
  if (!Number.isSafeInteger(v) || (v as number) <= 0) throw new BadRecord("netnsInode is not an inode number");
  return v as number;
}

/** Decodes a record (a DHCPv4 one when it names no family); throws naming the first field that is missing or of the wrong kind. */
export function decodeLeaseRecord(text: string): LeaseRecord {
  const top = obj(JSON.parse(text) as unknown, "the file");
  if (top["format"] !== FORMAT) throw new BadRecord(`format ${JSON.stringify(top["format"])} is not ${FORMAT}`);
  const family = top["family"] ?? "ipv4";
  if (family !== "ipv4" && family !== "ipv6") throw new BadRecord(`family ${JSON.stringify(family)} is neither "ipv4" nor "ipv6"`);
  const attachment = {
    clientID: str(top, "clientID", ""),
    containerID: str(top, "containerID", ""),
    network: str(top, "network", ""),
    ifName: str(top, "ifName", ""),
    netns: str(top, "netns", ""),
    ...(top["netnsInode"] !== undefined ? { netnsInode: inode(top["netnsInode"]) } : {}),
  };
  const send = obj(top["send"], "send");
  const b = obj(top["binding"], "binding");
  if (family === "ipv6") {
    const iaid = send["iaid"];
    if (!Number.isInteger(iaid) || (iaid as number) < 0 || (iaid as number) > 0xffffffff) throw new BadRecord("send.iaid is not a 32-bit IAID");
    if (!codes(send["oro"], 0xffff)) throw new BadRecord("send.oro is not a list of option codes");
    const serverId = bytes(b, "serverId", "binding.");
    return {
      family,
      ...attachment,
      send: {
        duid: bytes(send, "duid", "send."),
        iaid: iaid as number,
        oro: send["oro"],
        ...(send["fqdn"] !== undefined ? { fqdn: bytes(send, "fqdn", "send.") } : {}),
      },
      binding: { address: str(b, "address", "binding."), serverId, server: hexOf(serverId, ":"), reply: bytes(b, "reply", "binding."), ...times(b) },
    };
  }
  const options = send["options"];
  if (!Array.isArray(options)) throw new BadRecord("send.options is not a list");
  if (!codes(send["requestList"], 255)) throw new BadRecord("send.requestList is not a list of option codes");
  return {
    family,
    ...attachment,
    send: {
      clientIdOption: bytes(send, "clientIdOption", "send."),
      options: new Map(
        options.map((o, i) => {
          if (!Array.isArray(o) || !Number.isInteger(o[0]) || o[0] < 0 || o[0] > 255 || typeof o[1] !== "string")
            throw new BadRecord(`send.options[${i}] is not [code, base64]`);
          return [o[0] as number, Uint8Array.from(Buffer.from(o[1], "base64"))];
        }),
      ),
      requestList: send["requestList"],
    },
    binding: {
      address: str(b, "address", "binding."),
      server: str(b, "server", "binding."),
      mac: bytes(b, "mac", "binding."),
      ack: bytes(b, "ack", "binding."),
      ...times(b),
    },
  };
}

/** The lease directory. */
export class LeaseStore {
  constructor(readonly dir: string) {}

  /** Creates the directory (0700: leases name containers and their addresses). */
  async init(): Promise<void> {
    ensureStateDir(this.dir, 0o700);
  }

  fileOf(clientID: string, family: Family = "ipv4"): string {
    return path.join(this.dir, leaseFileName(clientID, family));
  }

  async save(r: LeaseRecord): Promise<void> {
    await writeFileAtomic(this.fileOf(r.clientID, r.family), encodeLeaseRecord(r), 0o600);
  }

  async remove(clientID: string, family: Family = "ipv4"): Promise<void> {
    removeStateFile(this.fileOf(clientID, family));
  }

  /**
   * Every lease file. One that is empty or not JSON at all (what a crash can leave: docs/state.md) is reported and
   * removed, since nobody can ever read it; one that is JSON but does not decode is reported and left alone (a
   * later version may read it).
   */
  async loadAll(): Promise<{ records: LeaseRecord[]; problems: string[] }> {
    const records: LeaseRecord[] = [];
    const problems: string[] = [];
    for (const name of (await readdir(this.dir)).filter((n) => FILE_PATTERN.test(n)).sort()) {
      const file = path.join(this.dir, name);
      let text: string;
      try {
        text = await readFile(file, "utf8");
      } catch (e) {
        problems.push(`${file}: ${messageOf(e)}`);
        continue;
      }
      try {
        JSON.parse(text);
      } catch (e) {
        problems.push(`${file}: ${text === "" ? "empty" : `torn (${messageOf(e)})`}: removed`);
        try {
          removeStateFile(file);
        } catch {
          /* reported already */
        }
        continue;
      }
      try {
        const r = decodeLeaseRecord(text);
        if (leaseFileName(r.clientID, r.family) !== name)
          throw new BadRecord(`it holds the ${r.family} lease of ${r.clientID}, whose file is ${leaseFileName(r.clientID, r.family)}`);
        records.push(r);
      } catch (e) {
        problems.push(`${file}: ${messageOf(e)}`);
      }
    }
    return { records, problems };
  }
}
