/**
 * Attachment records: which addresses the firewall plugin opened for which attachment, one small JSON file per
 * attachment in `<dataDir>/<network>/<containerID>:<ifName>` (neither part can contain ':'). The Go plugin's
 * iptables and firewalld rules carry nothing that names their attachment, so these records are what lets GC
 * find the rules of attachments the runtime no longer knows, and DEL work without a prevResult.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { ErrorCode, wrap } from "#spec/errors.js";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, isTemporaryName, removeStateDirIfEmpty, removeStateFile, writeFileAtomicSync } from "#sys/state.js";
import type { Backend } from "./config.js";

export interface AttachmentRecord {
  containerID: string;
  ifName: string;
  backend: Backend;
  /** The container's addresses (`addr/prefix`). */
  addresses: string[];
  /** The firewalld zone, for the firewalld backend. */
  zone?: string;
}

const fileName = (containerID: string, ifName: string) => `${containerID}:${ifName}`;
const networkDir = (dataDir: string, network: string) => path.join(dataDir, network);

function parseRecord(text: string): AttachmentRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<AttachmentRecord>;
    if (typeof r.containerID !== "string" || typeof r.ifName !== "string" || !Array.isArray(r.addresses)) return undefined;
    return r as AttachmentRecord;
  } catch {
    return undefined; // a torn or foreign file: ignored
  }
}

/** Writes a record atomically (a temporary file renamed over the old one). */
export function writeRecord(dataDir: string, network: string, record: AttachmentRecord): void {
  const dir = networkDir(dataDir, network);
  const file = path.join(dir, fileName(record.containerID, record.ifName));
  for (let attempt = 0; ; attempt++) {
    try {
      ensureStateDir(dir, 0o755);
      writeFileAtomicSync(file, JSON.stringify(record) + "\n", 0o600);
      return;
    } catch (e) {
      // A DEL of the network's last attachment may remove the directory between our mkdir and write: again.
      if ((e as NodeJS.ErrnoException).code === "ENOENT" && attempt < 3) continue;
      throw wrap(`failed to write the firewall record ${file}`, e, ErrorCode.IOFailure);
    }
  }
}

export function readRecord(dataDir: string, network: string, containerID: string, ifName: string): AttachmentRecord | undefined {
  try {
    return parseRecord(readFileSync(path.join(networkDir(dataDir, network), fileName(containerID, ifName)), "utf8"));
  } catch {
    return undefined;
  }
}

export function removeRecord(dataDir: string, network: string, containerID: string, ifName: string): void {
  const file = path.join(networkDir(dataDir, network), fileName(containerID, ifName));
  try {
    removeStateFile(file);
  } catch (e) {
    throw wrap(`failed to remove the firewall record ${file}`, e, ErrorCode.IOFailure);
  }
  // The network's directory goes with its last record (it stays, harmlessly, while others remain).
  removeStateDirIfEmpty(networkDir(dataDir, network));
}

/** Every record of a network (none when its directory does not exist). */
export function listRecords(dataDir: string, network: string): AttachmentRecord[] {
  const dir = networkDir(dataDir, network);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  // (".tmp-" names are an earlier version's temporary files.)
  return names
    .filter((n) => n.includes(":") && !isTemporaryName(n) && !n.includes(".tmp-"))
    .flatMap((n) => {
      try {
        const r = parseRecord(readFileSync(path.join(dir, n), "utf8"));
        return r ? [r] : [];
      } catch {
        return [];
      }
    });
}

/**
 * The attachments of a network whose record file does not parse (empty or torn by a power loss), named by the
 * file's name (`<containerID>:<ifName>`; a container ID holds no colon).
 */
export function unreadableRecords(dataDir: string, network: string): Array<{ containerID: string; ifName: string }> {
  const dir = networkDir(dataDir, network);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.includes(":") && !isTemporaryName(n) && !n.includes(".tmp-"))
    .flatMap((n) => {
      let text: string;
      try {
        text = readFileSync(path.join(dir, n), "utf8");
      } catch {
        return [];
      }
      if (parseRecord(text)) return [];
      const at = n.indexOf(":");
      return [{ containerID: n.slice(0, at), ifName: n.slice(at + 1) }];
    });
}

/** The networks that have records. */
export function recordedNetworks(dataDir: string): string[] {
  try {
    return readdirSync(dataDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}
