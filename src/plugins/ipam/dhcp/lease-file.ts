/**
 * The daemon's leases on disk, so a restarted daemon (even after SIGKILL) renews and releases what it held:
 * one JSON file per lease in the lease directory (`-leasedir`), named by a hash of the client id and written
 * atomically (a temp file renamed over the old one), holding the attachment (container, network, interface,
 * namespace), what its requests carry, the DHCPACK as received and the lease's times. Only one daemon uses a
 * directory at a time (it holds a lock on `<leasedir>/lock`), so the files have a single writer.
 * @module
 */
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import * as path from "../../../sys/posix-path.js";
import { writeFileAtomic } from "../../../sys/atomic-file.js";
import type { Binding, SendSpec } from "./client.js";

/** One held lease: the attachment it belongs to, what its messages carry, and its binding. */
export interface LeaseRecord {
  /** `containerID/network/ifName` (cut to 254 bytes): the lease's key. */
  clientID: string;
  containerID: string;
  network: string;
  ifName: string;
  /** The namespace path as the plugin sent it (the daemon prefixes `-hostprefix` when it opens it). */
  netns: string;
  send: SendSpec;
  binding: Binding;
}

const FORMAT = 1;
const FILE_PATTERN = /^lease-[0-9a-f]{32}\.json$/;

/** The file name of a lease: its client id hashed (ids can hold any byte and be 254 bytes long). */
export const leaseFileName = (clientID: string): string => `lease-${createHash("sha256").update(clientID).digest("hex").slice(0, 32)}.json`;

const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");
const time = (t: number): number | null => (Number.isFinite(t) ? t : null);

/** The JSON text of a record (Infinity as null, bytes as base64). */
export function encodeLeaseRecord(r: LeaseRecord): string {
  const b = r.binding;
  return `${JSON.stringify({
    format: FORMAT,
    clientID: r.clientID, containerID: r.containerID, network: r.network, ifName: r.ifName, netns: r.netns,
    send: { clientIdOption: b64(r.send.clientIdOption), options: [...r.send.options].map(([code, v]) => [code, b64(v)]), requestList: r.send.requestList },
    binding: {
      address: b.address, server: b.server, mac: b64(b.mac), ack: b64(b.ack),
      boundAt: time(b.boundAt), renewAt: time(b.renewAt), rebindAt: time(b.rebindAt), expiresAt: time(b.expiresAt),
    },
  }, null, 2)}\n`;
}

class BadRecord extends Error {}

/** Decodes a record; throws naming the first field that is missing or of the wrong kind. */
export function decodeLeaseRecord(text: string): LeaseRecord {
  const raw = JSON.parse(text) as unknown;
  const obj = (v: unknown, where: string): Record<string, unknown> => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new BadRecord(`${where} is not an object`);
    return v as Record<string, unknown>;
  };
  const top = obj(raw, "the file");
  if (top["format"] !== FORMAT) throw new BadRecord(`format ${JSON.stringify(top["format"])} is not ${FORMAT}`);
  const str = (o: Record<string, unknown>, k: string, where: string): string => {
    if (typeof o[k] !== "string") throw new BadRecord(`${where}${k} is not a string`);
    return o[k] as string;
  };
  const bytes = (o: Record<string, unknown>, k: string, where: string): Uint8Array => Uint8Array.from(Buffer.from(str(o, k, where), "base64"));
  const when = (o: Record<string, unknown>, k: string): number => {
    const v = o[k];
    if (v === null) return Infinity;
    if (typeof v !== "number" || !Number.isFinite(v)) throw new BadRecord(`binding.${k} is not a time`);
    return v;
  };
  const send = obj(top["send"], "send");
  const options = send["options"];
  const requestList = send["requestList"];
  if (!Array.isArray(options)) throw new BadRecord("send.options is not a list");
  if (!Array.isArray(requestList) || !requestList.every((c) => Number.isInteger(c) && c >= 0 && c <= 255)) throw new BadRecord("send.requestList is not a list of option codes");
  const b = obj(top["binding"], "binding");
  return {
    clientID: str(top, "clientID", ""), containerID: str(top, "containerID", ""), network: str(top, "network", ""),
    ifName: str(top, "ifName", ""), netns: str(top, "netns", ""),
    send: {
      clientIdOption: bytes(send, "clientIdOption", "send."),
      options: new Map(options.map((o, i) => {
        if (!Array.isArray(o) || !Number.isInteger(o[0]) || o[0] < 0 || o[0] > 255 || typeof o[1] !== "string") throw new BadRecord(`send.options[${i}] is not [code, base64]`);
        return [o[0] as number, Uint8Array.from(Buffer.from(o[1], "base64"))];
      })),
      requestList: requestList as number[],
    },
    binding: {
      address: str(b, "address", "binding."), server: str(b, "server", "binding."), mac: bytes(b, "mac", "binding."), ack: bytes(b, "ack", "binding."),
      boundAt: when(b, "boundAt"), renewAt: when(b, "renewAt"), rebindAt: when(b, "rebindAt"), expiresAt: when(b, "expiresAt"),
    },
  };
}

/** The lease directory. */
export class LeaseStore {
  constructor(readonly dir: string) {}

  /** Creates the directory (0700: leases name containers and their addresses). */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  fileOf(clientID: string): string {
    return path.join(this.dir, leaseFileName(clientID));
  }

  async save(r: LeaseRecord): Promise<void> {
    await writeFileAtomic(this.fileOf(r.clientID), encodeLeaseRecord(r), 0o600);
  }

  async remove(clientID: string): Promise<void> {
    await rm(this.fileOf(clientID), { force: true });
  }

  /** Every lease file; files that do not decode are reported and left alone (a later version may read them). */
  async loadAll(): Promise<{ records: LeaseRecord[]; problems: string[] }> {
    const records: LeaseRecord[] = [];
    const problems: string[] = [];
    for (const name of (await readdir(this.dir)).filter((n) => FILE_PATTERN.test(n)).sort()) {
      const file = path.join(this.dir, name);
      try {
        const r = decodeLeaseRecord(await readFile(file, "utf8"));
        if (leaseFileName(r.clientID) !== name) throw new BadRecord(`it holds the lease of ${r.clientID}, whose file is ${leaseFileName(r.clientID)}`);
        records.push(r);
      } catch (e) {
        problems.push(`${file}: ${(e as Error).message}`);
      }
    }
    return { records, problems };
  }
}
