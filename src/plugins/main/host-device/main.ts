/**
 * host-device: moves an existing host interface (a NIC, an SR-IOV VF, a veth end) into the container under
 * CNI_IFNAME, optionally with IPAM addresses, and gives it back on DEL.
 *
 * ADD finds the device (select.ts), records how it is on the host (record.ts: name, MTU, up state, alias,
 * addresses, identity) and moves it with one kernel request that also renames it to CNI_IFNAME and sets its
 * alias to the original name (as Go does, so Go's DEL can return it). A PCI device in DPDK mode is not moved.
 * A failed ADD returns the device as it was and releases the IPAM address. DEL releases IPAM first — also when
 * CNI_NETNS is empty or gone (Go 1.1.1 then skips it and leaks the address, containernetworking/plugins#1196) —
 * and returns the device under its original name with its original MTU, alias, addresses and up state; when the
 * container's namespace is gone, a physical device the kernel handed back to the host (maybe renamed) is found
 * by its recorded identity and restored the same way (a virtual one is destroyed with the namespace). Without a
 * record (a device Go moved), the alias names it, as in Go. CHECK verifies the interface is in the container
 * with the prevResult's MAC and addresses, is the device ADD moved (its ifindex) and has the routes. GC gives back,
 * as DEL would, the devices this network's records name for attachments that are gone. Every kernel request goes
 * through device-kernel.ts.
 * @module
 */

import { NetNS } from "#net/netns.js";
import type { Link } from "#net/types.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { CniError, failure } from "#spec/errors.js";
import { isDNSEmpty, type Result100 } from "#spec/result/index.js";
import { CURRENT_VERSION } from "#spec/version.js";
import { requirePrevResult } from "../../common/check.js";
import { ipamAdd, ipamCheck, ipamDel, ipamGC, ipamStatus } from "../../common/ipam.js";
import { Rollback } from "../../common/rollback.js";
import { HOST_DEVICE_SCHEMA, type HostDeviceConf, loadHostDeviceConf, loadHostDeviceGcConf } from "./config.js";
import { deviceKernel } from "./device-kernel.js";
import { type DeviceRecord, listDamagedRecords, listRecords, readRecord, removeRecord, writeRecord } from "./record.js";
import { devicePathOf, type HostView, selectHostDevice, selectsDpdkDevice } from "./select.js";

/** A warning on this call's stderr. */
const warn = (args: CmdArgs, msg: string) => args.stderr.write(`host-device: ${msg}\n`);

/** The host namespace as selection sees it: sysfs, and its links (read once per call). */
function hostView(): HostView {
  let links: Promise<Link[]> | undefined;
  const kernel = deviceKernel();
  return { sysfsRoot: kernel.sysfsRoot, links: () => (links ??= kernel.hostLinks()) };
}

/** Moves `name` from `from` to `to`, renamed `newName`, with alias `alias`: one request, nothing half-named in between. */
const moveDevice = (from: NetNS, name: string, to: NetNS, newName: string, alias: string): Promise<void> =>
  deviceKernel().move(from, name, to, newName, alias);

/** Whether a link (in the container or the host) is plausibly the recorded device. */
const looksLike = (link: Link, rec: DeviceRecord): boolean =>
  link.kind === rec.host.kind && (link.mac === rec.host.mac || link.index === rec.host.index || link.index === rec.containerIndex);

/**
 * The recorded device among the host's links when it is not under its own name: a physical device by the hardware
 * behind it (its MAC may have been changed in the container), a virtual one by kind and MAC; ties broken by MAC,
 * then ifindex. Undefined unless exactly one link fits.
 */
async function findReturned(rec: DeviceRecord, view: HostView): Promise<Link | undefined> {
  const sameKind = (await view.links()).filter((l) => l.kind === rec.host.kind);
  let matches: Link[] = [];
  if (rec.host.devicePath) {
    for (const l of sameKind) if ((await devicePathOf(view, l.name)) === rec.host.devicePath) matches.push(l);
  } else {
    matches = sameKind.filter((l) => l.mac === rec.host.mac);
  }
  for (const narrow of [(l: Link) => l.mac === rec.host.mac, (l: Link) => l.index === rec.host.index]) {
    if (matches.length > 1 && matches.some(narrow)) matches = matches.filter(narrow);
  }
  return matches.length === 1 ? matches[0] : undefined;
}

/** Puts back the recorded MTU, alias, addresses and up state of the device, now named `rec.host.name` in the host. */
async function restoreSettings(link: Link, rec: DeviceRecord): Promise<void> {
  await deviceKernel().restore(rec.host.name, {
    ...(link.mtu !== rec.host.mtu ? { mtu: rec.host.mtu } : {}),
    ...((link.alias ?? "") !== rec.host.alias ? { alias: rec.host.alias } : {}),
    addresses: rec.host.addresses,
    ...(rec.host.up && !link.up ? { up: true } : {}),
  });
}

/** A host interface other than the device holds the name the device must get back. */
const nameTaken = (rec: DeviceRecord, where: string) =>
  failure(
    `cannot give ${where} back to the host as "${rec.host.name}": another host interface has that name`,
    "rename or remove that interface, then run DEL again",
  );

/**
 * Returns the recorded device to the host as it was: from the container (under CNI_IFNAME, or still under its host
 * name after a move whose rename failed), else from wherever the kernel put it in the host namespace.
 * A device that is nowhere (a virtual one destroyed with its namespace) is nothing to do.
 */
async function returnDevice(rec: DeviceRecord, container: NetNS | undefined, view: HostView, trustIfName = true): Promise<void> {
  const host = NetNS.host;
  const name = rec.host.name;
  const kernel = deviceKernel();
  let movedBack = false;
  if (container) {
    for (const inside of new Set([rec.ifName, name])) {
      const link = await kernel.getLink(container, inside);
      if (!link || ((inside !== rec.ifName || !trustIfName) && !looksLike(link, rec))) continue;
      if (await kernel.getLink(host, name)) throw nameTaken(rec, `${inside} of ${container}`);
      await moveDevice(container, inside, host, name, rec.host.alias);
      movedBack = true;
      break;
    }
  }
  let link = await kernel.getLink(host, name);
  if (link && !movedBack && !looksLike(link, rec)) {
    const returned = await findReturned(rec, view);
    if (returned) throw nameTaken(rec, returned.name);
    return; // the device is gone; the host's interface of that name is another one
  }
  if (!link) {
    const returned = await findReturned(rec, view);
    if (!returned) return;
    // An interface is renamed only while down; restoreSettings brings it up again if it was.
    await kernel.renameLink(returned.name, name);
    link = { ...returned, name, up: false };
  }
  await restoreSettings(link, rec);
}

/** Records the device, moves it into the container as CNI_IFNAME and brings it up; returns it as it is there. */
async function moveIn(dev: Link, container: NetNS, args: CmdArgs, n: HostDeviceConf, view: HostView, rollback: Rollback): Promise<Link> {
  const kernel = deviceKernel();
  if (await kernel.getLink(container, args.ifName)) {
    throw failure(`container already has an interface named "${args.ifName}"`, `host-device moves ${dev.name} in as ${args.ifName}`);
  }
  const rec: DeviceRecord = {
    network: n.conf.name,
    containerID: args.containerID,
    ifName: args.ifName,
    netns: args.netns,
    host: {
      name: dev.name,
      index: dev.index,
      mtu: dev.mtu,
      mac: dev.mac,
      up: dev.up,
      alias: dev.alias ?? "",
      kind: dev.kind,
      devicePath: await devicePathOf(view, dev.name),
      addresses: await kernel.addresses(NetNS.host, dev.name),
    },
  };
  await writeRecord(n.dataDir, rec);
  rollback.add(async () => {
    await returnDevice(rec, container, hostView());
    await removeRecord(n.dataDir, args.containerID, args.ifName);
  });
  await moveDevice(NetNS.host, dev.name, container, args.ifName, dev.name);
  const shown = await kernel.bringUp(container, args.ifName);
  rec.containerIndex = shown.index;
  await writeRecord(n.dataDir, rec);
  return shown;
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadHostDeviceConf(args.stdinData);
  const container = await NetNS.open(args.netns);
  const view = hostView();
  const selected = await selectHostDevice(n.selector, view);
  const rollback = new Rollback();
  return rollback.guard(async () => {
    // A DPDK device stays bound to its userspace driver: there is no interface to move or configure.
    const iface =
      selected.kind === "dpdk"
        ? { name: args.ifName, sandbox: args.netns }
        : await (async () => {
            const moved = await moveIn(selected.link, container, args, n, view, rollback);
            return { name: moved.name, mac: moved.mac, sandbox: args.netns };
          })();
    if (!n.ipamType) return { cniVersion: CURRENT_VERSION, interfaces: [iface] };

    const ipam = await ipamAdd(n.conf, args);
    rollback.add(() => ipamDel(n.conf, args));
    const { dns: _ipamDns, ...rest } = ipam;
    // Every address goes on the moved device; the DNS is the config's, as in Go (IPAM's is dropped).
    const result: Result100 = { ...rest, cniVersion: CURRENT_VERSION, interfaces: [iface], ips: ipam.ips!.map((ipc) => ({ ...ipc, interface: 0 })) };
    if (selected.kind === "netdev") await deviceKernel().configure(container, args.ifName, result);
    if (n.conf.dns && !isDNSEmpty(n.conf.dns)) result.dns = n.conf.dns;
    return result;
  });
}

/** Go's way, for a device without a record (moved by Go's host-device): its alias is its host name. */
async function returnByAlias(container: NetNS, ifName: string): Promise<void> {
  const link = await deviceKernel().getLink(container, ifName);
  if (!link) return;
  if (!link.alias) {
    throw failure(
      `cannot give ${ifName} back to the host: its original name is unknown`,
      "host-device has no record of it and its alias (where Go's host-device keeps the name) is empty",
    );
  }
  if (await deviceKernel().getLink(NetNS.host, link.alias)) {
    throw failure(`cannot give ${ifName} back to the host as "${link.alias}": another host interface has that name`);
  }
  await moveDevice(container, ifName, NetNS.host, link.alias, "");
}

async function del(args: CmdArgs): Promise<void> {
  const n = loadHostDeviceConf(args.stdinData);
  if (n.ipamType) await ipamDel(n.conf, args);
  const rec = await readRecord(n.dataDir, args.containerID, args.ifName);
  if (rec === "damaged") warn(args, `the record of ${args.ifName} in ${n.dataDir} is damaged; returning the device by its alias`);
  if (rec && rec !== "damaged") {
    // Without CNI_NETNS (allowed on DEL), the record says where the device went; a namespace found only that
    // way must hold the device itself (the path may name a new namespace by now).
    const container = await NetNS.openIfThere(args.netns || rec.netns);
    await returnDevice(rec, container, hostView(), args.netns !== "");
  } else {
    const container = await NetNS.openIfThere(args.netns);
    if (container) await returnByAlias(container, args.ifName);
  }
  if (rec) await removeRecord(n.dataDir, args.containerID, args.ifName);
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadHostDeviceConf(args.stdinData);
  const ns = await NetNS.open(args.netns);
  if (n.ipamType) await ipamCheck(n.conf, args);
  const prev = requirePrevResult(n.conf);
  if (await selectsDpdkDevice(n.selector, hostView())) return;

  const entry = prev.interfaces?.find((i) => i.name === args.ifName && i.sandbox === args.netns);
  if (!entry) throw failure(`prevResult has no interface "${args.ifName}" in sandbox ${args.netns}`);
  const link = await deviceKernel().getLink(ns, args.ifName);
  if (!link) throw failure(`container interface "${args.ifName}" from prevResult does not exist in ${args.netns}`);
  if (entry.mac && entry.mac !== link.mac) {
    throw failure(`container interface "${args.ifName}" MAC is ${link.mac}, prevResult says ${entry.mac}`);
  }
  const rec = await readRecord(n.dataDir, args.containerID, args.ifName);
  if (rec && rec !== "damaged" && rec.containerIndex !== undefined && rec.containerIndex !== link.index) {
    throw failure(
      `container interface "${args.ifName}" is not the host device ${rec.host.name} that ADD moved in`,
      `its ifindex is ${link.index}, the moved device's was ${rec.containerIndex}`,
    );
  }
  await deviceKernel().checkConfigured(ns, args.ifName, prev);
}

async function status(args: CmdArgs): Promise<void> {
  const n = loadHostDeviceConf(args.stdinData);
  if (n.ipamType) await ipamStatus(n.conf, args);
}

/**
 * GC: every device this network's records name for an attachment not in `cni.dev/valid-attachments` is given back
 * as DEL gives it back (from the recorded namespace only if the device there is the recorded one: the path may name
 * another namespace by now; else from wherever the kernel put it), and its record removed; IPAM gets GC too.
 * Without the list nothing is known to be stale. Devices Go moved (no record) are left alone.
 * A damaged record of an attachment not valid is removed (it names no device: DEL would not trust it either).
 * One device that cannot be given back does not stop the others.
 */
async function gc(args: CmdArgs): Promise<void> {
  const n = loadHostDeviceGcConf(args.stdinData);
  const valid = n.conf.validAttachments;
  const errors: string[] = [];
  if (valid) {
    const isValid = (r: { containerID: string; ifName: string }) => valid.some((a) => a.containerID === r.containerID && a.ifname === r.ifName);
    // A damaged record of an attachment not valid (a power loss tore it) names nothing to give back: it goes.
    for (const r of await listDamagedRecords(n.dataDir)) if (!isValid(r)) await removeRecord(n.dataDir, r.containerID, r.ifName);
    for (const rec of await listRecords(n.dataDir)) {
      if (rec.network !== n.conf.name || isValid(rec)) continue;
      try {
        const container = await NetNS.openIfThere(rec.netns).catch(() => undefined);
        await returnDevice(rec, container, hostView(), false);
        await removeRecord(n.dataDir, rec.containerID, rec.ifName);
      } catch (e) {
        errors.push(`${rec.host.name} (attachment ${rec.containerID} ${rec.ifName}): ${CniError.from(e).msg}`);
      }
    }
  }
  if (n.ipamType) await ipamGC(n.conf, args).catch((e: Error) => errors.push(`IPAM: ${CniError.from(e).msg}`));
  if (errors.length) throw failure("host-device GC could not give back every stale device", errors.join("; "));
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: HOST_DEVICE_SCHEMA, parse: loadHostDeviceConf },
};
