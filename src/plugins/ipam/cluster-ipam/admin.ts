/**
 * `cluster-ipam admin blocks|allocations|nodes|release-node <network>` (the plugin program's subcommand, as `dhcp
 * daemon` is; `cnitool ipam ...` runs the same commands, as the manifest offers them): the operator's view of a cluster-ipam pool in etcd,
 * read with the network's own config (from NETCONFPATH: the plugin whose `ipam.type` is `cluster-ipam`, so the
 * same endpoints, TLS files, user and prefix). `blocks` lists the claimed blocks per node with their use,
 * `allocations` every address with its node, container and interface, `nodes` each node's blocks and when it was
 * last seen (its liveness record, with `nodeGraceSeconds`), and `release-node` frees what a dead node
 * held: its allocations, then its blocks (addresses other nodes borrowed inside them stay).
 * @module
 */
import { Command } from "commander";
import { loadConfList } from "#libcni/conf.js";
import { CniError } from "#spec/errors.js";
import { table } from "#sys/text-table.js";
import type { ToolCommandContext } from "../../manifest.js";
import type { PoolStore } from "./store.js";

/** The cluster-ipam store of a network in `confDir` (an error names what is missing). */
async function storeOf(confDir: string, network: string): Promise<{ store: PoolStore; node: string; fail: (e: unknown, what: string) => unknown }> {
  const list = await loadConfList(confDir, network);
  const plugin = list.plugins.find((p) => {
    const ipam = p.raw["ipam"];
    return ipam !== null && typeof ipam === "object" && (ipam as Record<string, unknown>)["type"] === "cluster-ipam";
  });
  if (!plugin) throw new Error(`network "${network}" has no plugin with "ipam": {"type": "cluster-ipam"}`);
  const [{ parseLocation }, { openStore, etcdFailure }] = await Promise.all([import("./config.js"), import("./main.js")]);
  const stdin = Buffer.from(JSON.stringify({ ...plugin.raw, cniVersion: list.cniVersion, name: list.name }));
  const location = parseLocation(stdin);
  return { store: openStore(location), node: location.node, fail: etcdFailure };
}

/** Runs an admin action, turning CNI errors into plain errors with their code. */
async function run<T>(confDir: string, network: string, what: string, fn: (store: PoolStore) => Promise<T>): Promise<T> {
  const { store, fail } = await storeOf(confDir, network);
  try {
    return await fn(store);
  } catch (e) {
    const err = fail(e, what);
    throw err instanceof CniError ? new Error(`${err.msg} (code ${err.code})`) : err;
  }
}

/** Adds `blocks`, `allocations`, `nodes` and `release-node` to `ipam` (cnitool's `ipam`, or the program's `admin`). */
export function addAdminCommands(ipam: Command, ctx: ToolCommandContext): void {
  ipam
    .command("blocks")
    .description("List the claimed blocks per node: addresses used, and how many of them other nodes borrowed")
    .argument("<network>", "a network whose IPAM is cluster-ipam")
    .option("--node <name>", "only this node's blocks")
    .option("--format <format>", "table or json", "table")
    .action(async (network: string, o: { node?: string; format: string }) => {
      const blocks = (await run(ctx.confDir(), network, "listing blocks", (s) => s.blocks()))
        .filter((b) => o.node === undefined || b.node === o.node)
        .sort((a, b) => a.node.localeCompare(b.node) || a.key.localeCompare(b.key, "en", { numeric: true }));
      if (o.format === "json") return ctx.out(JSON.stringify(blocks, null, 2) + "\n");
      ctx.out(
        table(
          ["NODE", "BLOCK", "USED", "BORROWED", "CLAIMED"],
          blocks.map((b) => [b.node, b.cidr, String(b.used), String(b.borrowed), b.claimed]),
        ),
      );
      const perNode = new Map<string, number>();
      for (const b of blocks) perNode.set(b.node, (perNode.get(b.node) ?? 0) + 1);
      ctx.out(`${blocks.length} block(s): ${[...perNode].map(([n, c]) => `${n} ${c}`).join(", ") || "none"}\n`);
    });

  ipam
    .command("allocations")
    .description("List the allocated addresses with their node, container and interface")
    .argument("<network>", "a network whose IPAM is cluster-ipam")
    .option("--node <name>", "only this node's allocations")
    .option("--format <format>", "table or json", "table")
    .action(async (network: string, o: { node?: string; format: string }) => {
      const list = await run(ctx.confDir(), network, "listing allocations", (s) => s.allocations(o.node));
      const rows = list.map(({ key: _key, value: _value, ...record }) => record);
      if (o.format === "json") return ctx.out(JSON.stringify(rows, null, 2) + "\n");
      ctx.out(
        table(
          ["IP", "NODE", "CONTAINER", "IFNAME", "BLOCK"],
          rows.map((a) => [a.ip, a.node, a.containerID, a.ifname, a.block.replace(/-(\d+)$/, "/$1")]),
        ),
      );
    });

  ipam
    .command("nodes")
    .description("List the nodes that hold blocks or said they are alive: blocks, addresses, when last seen (nodeGraceSeconds)")
    .argument("<network>", "a network whose IPAM is cluster-ipam")
    .option("--format <format>", "table or json", "table")
    .action(async (network: string, o: { format: string }) => {
      const { blocks, alive } = await run(ctx.confDir(), network, "listing nodes", async (s) => ({
        blocks: await s.blocks(),
        alive: await s.liveness(),
      }));
      const names = [...new Set([...blocks.map((b) => b.node), ...alive.keys()])].sort();
      const rows = names.map((node) => {
        const mine = blocks.filter((b) => b.node === node);
        return { node, blocks: mine.length, used: mine.reduce((n, b) => n + b.used, 0), lastSeen: alive.get(node)?.seen ?? "" };
      });
      if (o.format === "json") return ctx.out(JSON.stringify(rows, null, 2) + "\n");
      ctx.out(
        table(
          ["NODE", "BLOCKS", "USED", "LAST SEEN"],
          rows.map((r) => [r.node, String(r.blocks), String(r.used), r.lastSeen || "-"]),
        ),
      );
    });

  ipam
    .command("release-node")
    .description("Release what a dead node held: its allocations, then its blocks (run only for a node that is gone)")
    .argument("<network>", "a network whose IPAM is cluster-ipam")
    .argument("<node>", "the node's name (ipam.nodeName, default its host name)")
    .action(async (network: string, node: string) => {
      const released = await run(ctx.confDir(), network, `releasing node ${node}`, (s) => s.releaseNode(node));
      ctx.out(
        `node ${node}: released ${released.allocations.length} address(es) and ${released.blocks.length} block(s)` +
          `${released.blocks.length ? `: ${released.blocks.map((b) => b.replace(/-(\d+)$/, "/$1")).join(", ")}` : ""}\n`,
      );
    });
}

/**
 * `cluster-ipam admin ARGS`: the commands as a program of their own (a process of its own, never a plugin call:
 * networks from NETCONFPATH, default /etc/cni/net.d).
 */
export async function main(args: readonly string[]): Promise<void> {
  const admin = new Command("cluster-ipam admin").description(
    "Inspect and repair a cluster-ipam pool in etcd: blocks, allocations, nodes, release-node",
  );
  addAdminCommands(admin, { confDir: () => process.env["NETCONFPATH"] || "/etc/cni/net.d", out: (s) => void process.stdout.write(s) });
  await admin.parseAsync([...args], { from: "user" });
}
