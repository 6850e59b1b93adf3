/**
 * `cnitool pod up|down|ls|status`: pods for operators and scripts, through the runtime's PodNetworkManager. A
 * pod is a named network namespace (`/run/netns/<name>`) attached to one or more networks (the default network
 * when none is named); its attachments live in the result cache, so `down`, `ls` and `status` need nothing else.
 * @module
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import type { PluginExec } from "#invoke/exec.js";
import { listCachedAttachments } from "#libcni/cache.js";
import { runTool } from "#net/tools.js";
import { cachedAddresses } from "#runtime/attachments.js";
import { podContainerId, podNameOf } from "#runtime/container-ids.js";
import { PodNetworkManager, type PodNetworkRequest, type PodRef, type RuntimeConfig } from "#runtime/manager.js";
import { messageOf } from "#spec/errors.js";
import { validateContainerId } from "#spec/validate.js";
import { NetworkCommandError } from "./network.js";

const POD_NAMESPACE = "tscni";
const netnsPath = (name: string): string => `/run/netns/${name}`;

/**
 * A pod's reference from its name, which names both the netns file `/run/netns/<name>` and the container ID
 * `tscni-pod-<name>`: refused unless it is a file name (not empty, `.` or `..`) and makes a valid container ID.
 */
function podRef(name: string): PodRef {
  try {
    if (name === "" || name === "." || name === "..") throw new Error("not a file name");
    validateContainerId(podContainerId(name));
  } catch (e) {
    throw new NetworkCommandError(`invalid pod name ${JSON.stringify(name)}: ${messageOf(e)}`);
  }
  return { id: podContainerId(name), name, namespace: POD_NAMESPACE, netns: netnsPath(name) };
}

/** `-p host:container[/protocol]` into a port mapping. */
export function parsePublish(spec: string): { hostPort: number; containerPort: number; protocol: string } {
  const m = /^(\d+):(\d+)(?:\/(tcp|udp|sctp))?$/.exec(spec);
  const port = (s: string) => Number(s) >= 1 && Number(s) <= 65535;
  if (!m || !port(m[1]!) || !port(m[2]!)) throw new NetworkCommandError(`invalid --publish "${spec}": want hostPort:containerPort[/tcp|udp|sctp]`);
  return { hostPort: Number(m[1]), containerPort: Number(m[2]), protocol: m[3] ?? "tcp" };
}

/** `--network N[:ifname]` into a network request. */
export function parseNetworkFlag(spec: string): PodNetworkRequest {
  const [name, ifName, ...rest] = spec.split(":");
  if (!name || rest.length || ifName === "") throw new NetworkCommandError(`invalid --network "${spec}": want NAME or NAME:IFNAME`);
  return ifName ? { name, ifName } : { name };
}

/** `--alias NAME`: any non-empty name (the plugins that consume aliases judge them). */
export function parseAlias(name: string): string {
  if (name.trim() === "") throw new NetworkCommandError(`invalid --alias ${JSON.stringify(name)}: want a name`);
  return name;
}

/**
 * The runtime config of each network a pod joins: `portMappings`, and `aliases` keyed by the network's name (the
 * shape of the `aliases` capability, as podman passes it); undefined when there is neither.
 */
export function podRuntimeConfig(
  networks: readonly string[],
  opts: {
    portMappings?: ReadonlyArray<{ hostPort: number; containerPort: number; protocol: string }>;
    aliases?: readonly string[];
  },
): Record<string, RuntimeConfig> | undefined {
  const { portMappings = [], aliases = [] } = opts;
  if (!portMappings.length && !aliases.length) return undefined;
  return Object.fromEntries(
    networks.map((name) => {
      const config: RuntimeConfig = {};
      if (portMappings.length) config["portMappings"] = portMappings;
      if (aliases.length) config["aliases"] = { [name]: aliases };
      return [name, config];
    }),
  );
}

/** Adds the `pod` commands to cnitool. */
export function addPodCommands(
  program: Command,
  ctx: {
    manager: () => PodNetworkManagerFactoryResult;
    cacheDir: () => string;
    out: (s: string) => void;
  },
): void {
  const pod = program.command("pod").description("Pods: named network namespaces attached to networks (up, down, ls, status)");
  const collect = (v: string, prev: string[]) => [...prev, v];

  pod
    .command("up")
    .description("Create /run/netns/NAME and attach it (default network when no --network)")
    .argument("<name>", "pod name (also the netns name)")
    .option("--network <name[:ifname]>", "a network to attach (repeatable)", collect, [])
    .option("-p, --publish <host:container[/proto]>", "publish a port on every network with the portMappings capability (repeatable)", collect, [])
    .option("--alias <name>", "another name of the pod on every network with the aliases capability (dnsname; repeatable)", collect, [])
    .action(async (name: string, o: { network: string[]; publish: string[]; alias: string[] }) => {
      const ref = podRef(name);
      const networks = o.network.map(parseNetworkFlag);
      const portMappings = o.publish.map(parsePublish);
      const aliases = o.alias.map(parseAlias);
      if (existsSync(netnsPath(name))) throw new NetworkCommandError(`pod "${name}" exists already (${netnsPath(name)})`);
      await withManager(ctx, async (m) => {
        const chosen = networks.length ? networks : [{ name: m.defaultNetwork()?.name ?? "" }];
        const runtimeConfig = podRuntimeConfig(
          chosen.map((n) => n.name),
          { portMappings, aliases },
        );
        await runTool("ip", ["netns", "add", name], `create network namespace ${name}`);
        try {
          const attached = await m.setUpPod({
            ...ref,
            networks: networks.length ? networks : undefined,
            ...(runtimeConfig ? { runtimeConfig } : {}),
          });
          ctx.out(JSON.stringify({ pod: name, netns: netnsPath(name), attachments: attached }, null, 2) + "\n");
        } catch (e) {
          await runTool("ip", ["netns", "delete", name], `delete network namespace ${name}`).catch(() => undefined);
          throw e;
        }
      });
    });

  pod
    .command("down")
    .description("Detach a pod from every network and delete its namespace")
    .argument("<name>", "pod name")
    .action(async (name: string) => {
      const ref = podRef(name);
      await withManager(ctx, (m) => m.tearDownPod(ref));
      if (existsSync(netnsPath(name))) await runTool("ip", ["netns", "delete", name], `delete network namespace ${name}`);
      ctx.out(`${name}\n`);
    });

  pod
    .command("ls")
    .description("List cnitool's pods and their attachments (from the result cache)")
    .option("--format <format>", "table or json", "table")
    .action(async (o: { format: string }) => {
      const byPod = new Map<string, Array<{ network: string; ifName: string; addresses: string[] }>>();
      for (const a of await listCachedAttachments(ctx.cacheDir())) {
        const name = podNameOf(a.containerID);
        if (name === undefined) continue;
        byPod.set(name, [...(byPod.get(name) ?? []), { network: a.networkName, ifName: a.ifName, addresses: cachedAddresses(a) }]);
      }
      const rows = [...byPod].map(([name, attachments]) => ({ name, netns: netnsPath(name), netnsExists: existsSync(netnsPath(name)), attachments }));
      if (o.format === "json") return ctx.out(JSON.stringify(rows, null, 2) + "\n");
      ctx.out("NAME\tNETNS\tATTACHMENTS\n");
      for (const r of rows) {
        const att = r.attachments.map((a) => `${a.network}:${a.ifName}=${a.addresses.join(",")}`).join(" ");
        ctx.out(`${r.name}\t${r.netns}${r.netnsExists ? "" : " (gone)"}\t${att}\n`);
      }
    });

  pod
    .command("status")
    .description("A pod's attachments, checked against its namespace")
    .argument("<name>", "pod name")
    .action(async (name: string) => {
      const ref = podRef(name);
      const status = await withManager(ctx, (m) => m.podStatus(ref, { verify: true }));
      if (status.length === 0) throw new NetworkCommandError(`pod "${name}" has no attachments`);
      ctx.out(JSON.stringify({ pod: name, attachments: status }, null, 2) + "\n");
      const broken = status.filter((s) => !s.verified);
      if (broken.length) throw new NetworkCommandError(broken.map((s) => `${s.network} (${s.ifName}): ${s.problem}`).join("; "));
    });
}

/** A manager for one command, and what it needs. */
export interface PodNetworkManagerFactoryResult {
  confDir: string;
  pluginDirs: string[];
  cacheDir: string;
  exec?: PluginExec;
}

async function withManager<T>(ctx: { manager: () => PodNetworkManagerFactoryResult }, work: (m: PodNetworkManager) => Promise<T>): Promise<T> {
  const m = new PodNetworkManager(ctx.manager());
  await m.start();
  try {
    return await work(m);
  } finally {
    m.close();
  }
}
