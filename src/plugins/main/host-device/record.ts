/**
 * What host-device remembers of a device it moved into a container, so DEL can give it back as it was: its
 * original name, MTU, MAC, up state, alias and addresses, and how to recognise it should the kernel hand it back
 * on its own (a physical device returns to the root namespace when its container's namespace is destroyed,
 * possibly renamed): its sysfs device path, kind, MAC and ifindex. Go 1.1.1 keeps only the name, in the link's
 * alias, which the container can rewrite and which is lost with the namespace; tscni keeps a record file
 * `<dataDir>/<containerID>:<ifName>.json` (`:` appears in neither), written atomically before the device moves
 * and removed once DEL has returned it. (The alias is still set, so Go's DEL can return a device tscni moved.)
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { isJsonObject, marshalJson, parseJson } from "#go-json/json.js";
import { ioFailure } from "#spec/errors.js";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, removeStateFile, writeFileAtomic } from "#sys/state.js";

/** The device as it was in the host namespace before ADD. */
export interface HostDeviceState {
  name: string;
  index: number;
  mtu: number;
  mac: string;
  up: boolean;
  /** Its alias before ADD ("" for none): host-device borrows the alias while the device is in the container. */
  alias: string;
  /** Link kind (veth...); absent for physical devices. */
  kind?: string;
  /** The hardware behind it (`/sys/devices/...`); absent for virtual devices. */
  devicePath?: string;
  /** Its addresses (`addr/prefix`), IPv6 link-local ones aside (the kernel makes those again). */
  addresses: string[];
}

export interface DeviceRecord {
  network: string;
  containerID: string;
  ifName: string;
  netns: string;
  host: HostDeviceState;
  /** Its ifindex in the container once moved (CHECK compares it). */
  containerIndex?: number;
}

export const recordPath = (dataDir: string, containerID: string, ifName: string): string => path.join(dataDir, `${containerID}:${ifName}.json`);

/** Writes (or rewrites) a record. */
export async function writeRecord(dataDir: string, record: DeviceRecord): Promise<void> {
  try {
    ensureStateDir(dataDir, 0o700);
    await writeFileAtomic(recordPath(dataDir, record.containerID, record.ifName), marshalJson(record, { sortKeys: false, indent: " " }) + "\n");
  } catch (e) {
    throw ioFailure(`cannot save the host device's settings in ${dataDir} ("dataDir")`, e);
  }
}

/** Checks the shape of a record read back (a damaged file must not rename or re-address anything). */
function decodeRecord(text: string): DeviceRecord | undefined {
  let raw: unknown;
  try {
    raw = parseJson(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(raw) || !isJsonObject(raw["host"])) return undefined;
  const r = raw as unknown as DeviceRecord;
  const h = r.host;
  const ok =
    typeof r.containerID === "string" &&
    typeof r.ifName === "string" &&
    typeof h.name === "string" &&
    h.name !== "" &&
    typeof h.mtu === "number" &&
    typeof h.mac === "string" &&
    typeof h.up === "boolean" &&
    typeof h.alias === "string" &&
    typeof h.index === "number" &&
    Array.isArray(h.addresses) &&
    h.addresses.every((a) => typeof a === "string");
  return ok ? r : undefined;
}

/** The record of an attachment: undefined when there is none, "damaged" when it cannot be trusted. */
export async function readRecord(dataDir: string, containerID: string, ifName: string): Promise<DeviceRecord | "damaged" | undefined> {
  const file = recordPath(dataDir, containerID, ifName);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw ioFailure(`cannot read the host device's record ${file}`, e);
  }
  const record = decodeRecord(text);
  return record && record.containerID === containerID && record.ifName === ifName ? record : "damaged";
}

export async function removeRecord(dataDir: string, containerID: string, ifName: string): Promise<void> {
  removeStateFile(recordPath(dataDir, containerID, ifName));
}

/**
 * Every record file in `dataDir`, by file name `<containerID>:<ifName>.json`, read (other files are left out); a
 * missing directory has none.
 */
async function recordFiles(dataDir: string): Promise<Array<{ containerID: string; ifName: string; record: DeviceRecord | "damaged" }>> {
  let names: string[];
  try {
    names = readdirSync(dataDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw ioFailure(`cannot list the host device records in ${dataDir} ("dataDir")`, e);
  }
  const out = [];
  for (const name of names.sort()) {
    const m = /^([^.:][^:]*):([^:]+)\.json$/.exec(name);
    if (!m) continue;
    const record = await readRecord(dataDir, m[1]!, m[2]!).catch(() => "damaged" as const);
    if (record) out.push({ containerID: m[1]!, ifName: m[2]!, record });
  }
  return out;
}

/** Every record in `dataDir` that can be trusted (GC's view); damaged records and other files are left out. */
export async function listRecords(dataDir: string): Promise<DeviceRecord[]> {
  return (await recordFiles(dataDir)).flatMap((f) => (f.record === "damaged" ? [] : [f.record]));
}

/**
 * The attachments whose record in `dataDir` is damaged (empty, torn, not a record: what a power loss can leave),
 * named by the file's name. Such a record names no device nor network: DEL does not trust it (it returns the device
 * by its alias, as without a record), so removing it changes nothing but the file.
 */
export async function listDamagedRecords(dataDir: string): Promise<Array<{ containerID: string; ifName: string }>> {
  return (await recordFiles(dataDir)).flatMap((f) => (f.record === "damaged" ? [{ containerID: f.containerID, ifName: f.ifName }] : []));
}
