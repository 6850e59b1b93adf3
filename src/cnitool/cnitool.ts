/**
 * cnitool: run a network configuration by hand, command-compatible with upstream cnitool
 * (`cnitool add|check|del|status|gc <network> <netns>`, NETCONFPATH, CNI_PATH, CAP_ARGS, CNI_ARGS, CNI_IFNAME),
 * plus `gc --cri-endpoint` (node GC against a CRI runtime, see gc.ts), `list`, `validate` and `version` for
 * looking around, `network` (podman-style network management, see network.ts), `pod` (named namespaces attached
 * through the runtime's pod network manager, see pod.ts), the commands plugins' manifests offer (`ipam`: a
 * cluster-ipam pool in etcd), `reload` (the cached attachments' firewall rules put back after a firewall reload;
 * see reload.ts), `conformance` (one plugin executable checked against the spec, in namespaces of its own; see
 * conformance.ts, and the suite in conformance/), `install` and `uninstall` (the plugins into a CNI bin dir; see
 * install.ts) and `daemon` (the resident server; see resident-daemon.ts). Every verb of cnitool is in this
 * folder; what a verb does to the node is the runtime's (runtime/).
 * @module
 */
import path from "node:path";
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { goQuote, isJsonObject, jsonKindName, parseJson } from "#go-json/json.js";
import type { PluginExec } from "#invoke/exec.js";
import { splitPathList } from "#invoke/find.js";
import { CNIConfig, type RuntimeConf } from "#libcni/api.js";
import { DEFAULT_CACHE_DIR } from "#libcni/cache.js";
import { loadAllNetworks, NoConfigsFoundError, NotFoundError } from "#libcni/conf.js";
import { MulticallExec } from "#plugins/inprocess.js";
import type { ToolCommand, ToolCommandContext } from "#plugins/manifest.js";
import { MANIFESTS } from "#plugins/manifests.js";
import { containerIdForNetns } from "#runtime/container-ids.js";
import type { CriClientOptions } from "#runtime/cri/runtime-service.js";
import type { NetworkConfigList } from "#spec/config.js";
import { messageOf } from "#spec/errors.js";
import { marshalResult } from "#spec/result/index.js";
import { DEFAULT_NETCONFPATH, type Io } from "./command-io.js";
import { addConformanceCommand } from "./conformance.js";
import { type NodeGcFlags, nodeGcCommand } from "./gc.js";
import { addInstallCommand } from "./install.js";
import { describeDir, describeSelf, formatProgramInfo } from "./native.js";
import { addNetworkCommands } from "./network.js";
import { addPodCommands } from "./pod.js";
import { addReloadCommand } from "./reload.js";
import { addDaemonCommand } from "./resident-daemon.js";

/** CNI_ARGS as cnitool reads it: `K=V` pairs separated by `;`, each with a non-empty key and value. */
export function parseCnitoolArgs(value: string): Array<[string, string]> {
  if (value === "") return [];
  return value.split(";").map((pair) => {
    const kv = pair.split("=");
    if (kv.length !== 2 || kv[0] === "" || kv[1] === "") throw new Error(`invalid CNI_ARGS pair ${goQuote(pair)}`);
    return [kv[0]!, kv[1]!];
  });
}

/** CAP_ARGS: a JSON object of capability arguments (`null` is none). Errors keep Go's decoding text. */
export function parseCapArgs(value: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseJson(value);
  } catch (e) {
    throw new Error(`CAP_ARGS is not valid JSON: ${messageOf(e)}`);
  }
  if (v === null) return {};
  if (!isJsonObject(v)) {
    throw new Error(
      "CAP_ARGS must be a JSON object of capability arguments: " +
        `json: cannot unmarshal ${jsonKindName(v)} into Go value of type map[string]interface {}`,
    );
  }
  return v;
}

interface GlobalOptions {
  ifname?: string;
  cacheDir?: string;
  timeout?: string;
}

function runtimeSetup(io: Io, opts: GlobalOptions) {
  const netconfPath = io.env["NETCONFPATH"] || DEFAULT_NETCONFPATH;
  const cni = new CNIConfig({ path: splitPathList(io.env["CNI_PATH"]), cacheDir: opts.cacheDir });
  const callOpts = opts.timeout ? { timeoutMs: Math.round(Number(opts.timeout) * 1000) } : {};
  return { netconfPath, cni, callOpts };
}

/** `--timeout`: seconds, a number greater than 0 (refused when the command line is read, not at the first call). */
function parseTimeout(value: string): string {
  if (!/^\d+(\.\d+)?$/.test(value) || !(Number(value) > 0)) throw new InvalidArgumentError("want a number of seconds greater than 0.");
  return value;
}

/** Refuses a command that runs plugins when CNI_PATH names no directory (libcni would blame the plugin). */
function requirePluginPath(io: Io): void {
  if (splitPathList(io.env["CNI_PATH"]).length === 0) {
    throw new Error("CNI_PATH is not set: name the directories of the plugins, e.g. CNI_PATH=/opt/cni/bin");
  }
}

/**
 * The network `name` of the config directory, as libcni's loadConfList finds it (conflists first, then single
 * configs), except that a file that does not load is skipped with a warning rather than stopping the search (Go's
 * libcni, and so upstream cnitool, stop there: one broken file blocks every network that sorts after it).
 */
export async function findNetwork(dir: string, name: string, io: Pick<Io, "stderr">): Promise<NetworkConfigList> {
  const { networks, errors } = await loadAllNetworks(dir);
  const found = networks.find((n) => n.file.endsWith(".conflist") && n.list.name === name) ?? networks.find((n) => n.list.name === name);
  for (const e of errors) io.stderr(`warning: skipped ${e.file}: ${e.error.message}\n`);
  if (found) return found.list;
  if (networks.length === 0 && errors.length === 0) throw new NoConfigsFoundError(dir);
  throw new NotFoundError(dir, name);
}

async function attachmentCommand(verb: "add" | "check" | "del" | "status" | "gc", network: string, netns: string, io: Io, opts: GlobalOptions) {
  const { netconfPath, cni, callOpts } = runtimeSetup(io, opts);
  const list = await findNetwork(netconfPath, network, io);
  requirePluginPath(io);
  const capabilityArgs = io.env["CAP_ARGS"] ? parseCapArgs(io.env["CAP_ARGS"]) : {};
  const args = parseCnitoolArgs(io.env["CNI_ARGS"] ?? "");
  const ifName = opts.ifname || io.env["CNI_IFNAME"] || "eth0";
  const netnsPath = path.resolve(io.cwd, netns);
  const rt: RuntimeConf = { containerID: containerIdForNetns(netnsPath), netNS: netnsPath, ifName, args, capabilityArgs };
  switch (verb) {
    case "add": {
      const result = await cni.addNetworkList(list, rt, callOpts);
      io.stdout(marshalResult(result, true));
      return;
    }
    case "check":
      return cni.checkNetworkList(list, rt, callOpts);
    case "del":
      return cni.delNetworkList(list, rt, callOpts);
    case "gc":
      return cni.gcNetworkList(list, undefined, callOpts);
    case "status":
      return cni.getStatusNetworkList(list, callOpts);
  }
}

/**
 * Upstream cnitool (cobra) words a short command line as `requires at least 2 arg(s), only received N`;
 * say the same so scripts written against it keep matching.
 */
function reportMissingArgsLikeCobra(cmd: Command): void {
  cmd.configureOutput({
    outputError: (text, write) =>
      write(text.startsWith("error: missing required argument") ? `Error: requires at least 2 arg(s), only received ${cmd.args.length}\n` : text),
  });
}

/**
 * `gc <network> <netns>` as upstream (every cached attachment of the network DELeted, then GC without valid
 * attachments), or with `--cri-endpoint` node GC (gc.ts): no arguments, every network in NETCONFPATH.
 */
function addGcCommand(program: Command, io: Io, context: CnitoolContext): void {
  program
    .command("gc")
    .description(
      "Garbage collect network interfaces: of one network (upstream's), or with --cri-endpoint of the node, " +
        "keeping the attachments of the pod sandboxes the runtime knows",
    )
    .argument("[network]", "name of the network (from a config in NETCONFPATH); not with --cri-endpoint")
    .argument("[netns]", "path of the network namespace, e.g. /var/run/netns/test")
    .option("--cri-endpoint <endpoint>", "node GC: ask this CRI runtime which pod sandboxes exist, e.g. unix:///run/containerd/containerd.sock")
    .option("--dry-run", "node GC: list what would be removed and GCed, change nothing")
    .option("--min-age <seconds>", "node GC: keep attachments cached less than this long ago (default 600)")
    .option("--force", "node GC: remove stale attachments even when the runtime knows no pod sandbox at all")
    .option(
      "--delete-occupied",
      "node GC: also remove stale attachments whose network namespace still has processes in it (kept otherwise, whatever the runtime says)",
    )
    .allowExcessArguments(true)
    .action(async (network: string | undefined, netns: string | undefined, flags: Partial<NodeGcFlags>, cmd: Command) => {
      const global = program.opts<GlobalOptions>();
      if (flags.criEndpoint === undefined) {
        const nodeOnly = (["dryRun", "minAge", "force", "deleteOccupied"] as const).find((k) => flags[k] !== undefined);
        if (nodeOnly) throw new Error(`--${nodeOnly.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is for node GC: it needs --cri-endpoint`);
        // Upstream's wording for a short command line (cobra's), as the other verbs get it from commander.
        if (network === undefined || netns === undefined) throw new Error(`requires at least 2 arg(s), only received ${cmd.args.length}`);
        return attachmentCommand("gc", network, netns, io, global);
      }
      if (cmd.args.length > 0) throw new Error("gc --cri-endpoint takes no network or netns: it collects every network in NETCONFPATH");
      const { netconfPath, callOpts } = runtimeSetup(io, global);
      return nodeGcCommand(
        { ...flags, criEndpoint: flags.criEndpoint },
        {
          confDir: netconfPath,
          cacheDir: global.cacheDir || DEFAULT_CACHE_DIR,
          cniPath: io.env["CNI_PATH"],
          out: io.stdout,
          ...(callOpts.timeoutMs ? { pluginTimeoutMs: callOpts.timeoutMs } : {}),
          ...(context.checkCriListener ? { checkCriListener: context.checkCriListener } : {}),
        },
      );
    });
}

/**
 * What the program running cnitool provides: how the pod commands' manager runs plugins (default: exec), the
 * text of `cnitool version` without a plugin type (which program this is, or the one `binDir` holds), and how node
 * GC judges the CRI listener (default: the runtime rule, runtime/cri/runtime-service.ts; only tests that run
 * cnitool in process under Node, where no listener can be identified, give another). `main` gives the first two.
 */
export interface CnitoolContext {
  podPluginExec?: PluginExec;
  describeProgram?: (opts: { binDir?: string; json?: boolean }) => string;
  checkCriListener?: CriClientOptions["checkListener"];
}

/** Builds the command line program, with the commands plugins offer (`tools`); `io` makes it testable in-process. */
function buildProgram(io: Io, context: CnitoolContext, tools: readonly ToolCommandLoaded[]): Command {
  const program = new Command("cnitool")
    .description(
      "CNI Tool for managing network interfaces in a network namespace.\n" +
        "It executes a CNI configuration: add, check, remove, gc, or get status of an interface in an already-created network namespace.\n\n" +
        "Environment: NETCONFPATH (config dir, default /etc/cni/net.d), CNI_PATH (plugin dirs, ':'-separated),\n" +
        "CAP_ARGS (JSON capability arguments), CNI_ARGS (K=V;K2=V2), CNI_IFNAME (default eth0).",
    )
    .option("-i, --ifname <name>", "interface name inside the namespace (default: $CNI_IFNAME or eth0)")
    .option("--cache-dir <dir>", "result cache directory (default /var/lib/cni)")
    .option("--timeout <seconds>", "kill a plugin that runs longer than this", parseTimeout)
    .option("--version", "say which tscni program this is (as `cnitool version`)")
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    // Every subcommand's help lists these options too (they go before the subcommand).
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .showHelpAfterError(false)
    .on("option:version", () => {
      if (!context.describeProgram) throw new Error("this build cannot say which program it is");
      io.stdout(context.describeProgram({}));
      throw new CommanderError(0, "cnitool.version", "");
    });

  const verbs = [
    ["add", "Add network interface to a network namespace"],
    ["check", "Check network interface in a network namespace"],
    ["del", "Delete network interface from a network namespace"],
    ["status", "Get status of network interfaces"],
  ] as const;
  for (const [verb, summary] of verbs) {
    const sub = program
      .command(verb)
      .description(summary)
      .argument("<network>", "name of the network (from a config in NETCONFPATH)")
      .argument("<netns>", "path of the network namespace, e.g. /var/run/netns/test")
      .allowExcessArguments(true)
      .action(async (network: string, netns: string) => attachmentCommand(verb, network, netns, io, program.opts<GlobalOptions>()));
    reportMissingArgsLikeCobra(sub);
  }

  addGcCommand(program, io, context);

  program
    .command("list")
    .description("List the networks in NETCONFPATH, and the files that fail to load")
    .action(async () => {
      const { netconfPath } = runtimeSetup(io, program.opts<GlobalOptions>());
      const { networks, errors } = await loadAllNetworks(netconfPath);
      for (const { file, list } of networks) {
        io.stdout(`${list.name}\t${list.cniVersion || "(no cniVersion)"}\t${list.plugins.map((p) => p.network.type).join(",")}\t${file}\n`);
      }
      for (const { file, error } of errors) io.stderr(`${file}: ${error.message}\n`);
    });

  program
    .command("validate")
    .description("Check that every plugin of a network exists in CNI_PATH and supports its version")
    .argument("<network>", "name of the network")
    .action(async (network: string) => {
      const { netconfPath, cni, callOpts } = runtimeSetup(io, program.opts<GlobalOptions>());
      const list = await findNetwork(netconfPath, network, io);
      requirePluginPath(io);
      const caps = await cni.validateNetworkList(list, callOpts);
      io.stdout(`network "${list.name}" is valid (cniVersion ${list.cniVersion}; capabilities: ${caps.join(", ") || "none"})\n`);
    });

  program
    .command("version")
    .description(
      "Ask a plugin in CNI_PATH which CNI versions it supports; without one, say which tscni program this is " +
        "(native, its architecture and build, or the Node build), or the one a plugin directory holds",
    )
    .argument("[plugin-type]", "plugin type, e.g. bridge")
    .option("--bin-dir <dir>", "without a plugin type: the plugin directory to look at (default: this program)")
    .option("--json", "print JSON")
    .action(async (pluginType: string | undefined, opts: { binDir?: string; json?: boolean }) => {
      if (pluginType === undefined) {
        if (!context.describeProgram) throw new Error("name a plugin type");
        io.stdout(context.describeProgram(opts));
        return;
      }
      const { cni, callOpts } = runtimeSetup(io, program.opts<GlobalOptions>());
      requirePluginPath(io);
      const info = await cni.getVersionInfo(pluginType, callOpts);
      io.stdout(opts.json ? JSON.stringify({ supportedVersions: info.supportedVersions }) + "\n" : info.supportedVersions.join("\n") + "\n");
    });
  const global = () => program.opts<GlobalOptions>();
  const cacheDir = () => global().cacheDir || DEFAULT_CACHE_DIR;
  addNetworkCommands(program, {
    confDir: () => runtimeSetup(io, global()).netconfPath,
    cni: () => runtimeSetup(io, global()).cni,
    pluginDirs: () => splitPathList(io.env["CNI_PATH"]),
    cacheDir,
    out: io.stdout,
    err: io.stderr,
  });
  addPodCommands(program, {
    manager: () => ({
      confDir: runtimeSetup(io, global()).netconfPath,
      pluginDirs: splitPathList(io.env["CNI_PATH"]),
      cacheDir: cacheDir(),
      ...(context.podPluginExec ? { exec: context.podPluginExec } : {}),
    }),
    cacheDir,
    out: io.stdout,
  });
  const toolContext: ToolCommandContext = { confDir: () => runtimeSetup(io, global()).netconfPath, out: io.stdout };
  for (const tool of tools) tool.add(program.command(tool.name).description(tool.description), toolContext);
  addReloadCommand(program, { cacheDir, env: io.env, out: io.stdout, err: io.stderr });
  addConformanceCommand(program, io);
  addInstallCommand(program, io);
  addDaemonCommand(program, io);
  return program;
}

/** A command a plugin's manifest offers cnitool, with what adds its subcommands (loaded). */
interface ToolCommandLoaded {
  name: string;
  description: string;
  add: Awaited<ReturnType<ToolCommand["load"]>>;
}

/** The commands plugins' manifests offer cnitool (`ipam` for cluster-ipam), their modules loaded. */
function loadToolCommands(): Promise<ToolCommandLoaded[]> {
  const offered = MANIFESTS.flatMap((m) => Object.entries(m.toolCommands ?? {}));
  return Promise.all(offered.map(async ([name, tool]) => ({ name, description: tool.description, add: await tool.load() })));
}

/** Runs cnitool with `argv` (without node and script); resolves to the exit code. */
export async function runCnitool(argv: string[], io: Io, context: CnitoolContext = {}): Promise<number> {
  const program = buildProgram(io, context, await loadToolCommands());
  // No command at all: show the help and succeed, as upstream cnitool does.
  if (argv.length === 0) {
    io.stdout(program.helpInformation());
    return 0;
  }
  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    io.stderr(`Error: ${messageOf(e)}\n`);
    return 1;
  }
}

/** `cnitool version` without a plugin type: this program, or the one a plugin directory holds. */
function describeProgram(opts: { binDir?: string; json?: boolean }): string {
  const info = opts.binDir === undefined ? describeSelf() : describeDir(opts.binDir);
  return opts.json ? JSON.stringify(info) + "\n" : formatProgramInfo(info);
}

/**
 * Runs cnitool in this process (its arguments, environment and stdio), as the program runs it: the pod commands'
 * manager runs tscni's own plugins in this process (other plugins found in CNI_PATH are exec'd), and `cnitool
 * version` says which program this is.
 */
export async function main(): Promise<void> {
  process.exitCode = await runCnitool(
    process.argv.slice(2),
    {
      env: process.env,
      cwd: process.cwd(),
      stdout: (s) => process.stdout.write(s),
      stderr: (s) => process.stderr.write(s),
    },
    { podPluginExec: new MulticallExec(), describeProgram },
  );
}
