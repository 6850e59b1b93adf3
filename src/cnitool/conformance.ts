/**
 * `cnitool conformance PLUGIN --config FILE`: runs the suite (conformance/suite.ts) against one plugin executable in
 * a sandbox of network namespaces (conformance/sandbox.ts) and prints the report (conformance/report.ts): TAP as the checks finish, or JUnit XML at
 * the end. Exit status 0 iff no check failed; the sandbox is removed however the run ends (SIGINT and SIGTERM too).
 * @module
 */

import { accessSync, constants, readFileSync } from "node:fs";
import path from "node:path";
import { type Command, CommanderError } from "commander";
import { type CheckResult, formatJUnit, runPassed, tapEntry, tapFooter, tapHeader } from "#conformance/report.js";
import { Sandbox, SetupError } from "#conformance/sandbox.js";
import { configProblem, runSuite } from "#conformance/suite.js";
import { isJsonObject, type JsonObject, parseJson } from "#go-json/json.js";
import { findInPath, splitPathList } from "#invoke/find.js";
import { parseConfList } from "#spec/config.js";
import { messageOf } from "#spec/errors.js";

/** What the command needs from cnitool: its environment, output and working directory. */
export interface ConformanceIo {
  env: Record<string, string | undefined>;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
}

interface Flags {
  config: string;
  format: string;
  only?: string;
  hostSetup: string[];
  netnsSetup: string[];
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** The plugin executable: a path (relative to the working directory), or a bare name looked up in CNI_PATH. */
async function resolvePlugin(plugin: string, io: ConformanceIo): Promise<string> {
  const file = plugin.includes("/") ? path.resolve(io.cwd, plugin) : await findInPath(plugin, splitPathList(io.env["CNI_PATH"]));
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new Error(`${file} is not an executable file`);
  }
  return file;
}

/**
 * The plugin's config from `file`: one plugin's configuration, or a conflist, whose plugin of the executable's type
 * (or only plugin) is taken with the list's name and cniVersion put in, as a runtime does.
 */
export function readPluginConfig(text: string, pluginType: string, file: string): JsonObject {
  let parsed;
  try {
    parsed = parseJson(text);
  } catch (e) {
    throw new Error(`${file}: not JSON: ${messageOf(e)}`);
  }
  let config: unknown = parsed;
  if (isJsonObject(parsed) && Array.isArray(parsed["plugins"])) {
    const plugins = parsed["plugins"].filter(isJsonObject);
    const chosen = plugins.find((p) => p["type"] === pluginType) ?? (plugins.length === 1 ? plugins[0] : undefined);
    if (!chosen) throw new Error(`${file}: a conflist without a plugin of type ${JSON.stringify(pluginType)}`);
    // The list's version as libcni picks it (cniVersion, or the newest usable of a 1.1.0 list's cniVersions).
    let cniVersion: unknown = parsed["cniVersion"] ?? "";
    try {
      cniVersion = parseConfList(text, file).cniVersion;
    } catch {
      /* the config's own check below says what is wrong */
    }
    config = { ...chosen, name: parsed["name"] ?? "", cniVersion };
  }
  const problem = configProblem(config);
  if (problem) throw new Error(`${file}: ${problem}`);
  return config as JsonObject;
}

/**
 * The regular expression of --only: case-insensitive unless it holds a capital letter (smart case), so `VERSION`
 * selects the VERSION checks and not every title that says "cniVersion".
 */
export function onlyPattern(text: string | undefined): RegExp | undefined {
  if (text === undefined) return undefined;
  try {
    return new RegExp(text, /\p{Lu}/u.test(text) ? "" : "i");
  } catch (e) {
    throw new Error(`--only: ${messageOf(e)}`);
  }
}

async function conformance(pluginArg: string, flags: Flags, global: { ifname?: string; timeout?: string }, io: ConformanceIo): Promise<void> {
  if (flags.format !== "tap" && flags.format !== "junit") throw new Error(`--format must be tap or junit, not ${JSON.stringify(flags.format)}`);
  const only = onlyPattern(flags.only);
  const configFile = path.resolve(io.cwd, flags.config);
  let configText: string;
  try {
    configText = readFileSync(configFile, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(
      `--config ${flags.config}: ${code === "ENOENT" ? `no such file (${configFile})` : code === "EISDIR" ? "a directory, not a file" : messageOf(e)}`,
    );
  }
  if (process.getuid?.() !== 0) throw new Error("cnitool conformance needs root: it creates network namespaces");
  const plugin = await resolvePlugin(pluginArg, io);
  const config = readPluginConfig(configText, path.basename(plugin), configFile);
  const cniPath = io.env["CNI_PATH"] || path.dirname(plugin);
  const timeoutSeconds = global.timeout === undefined ? 60 : Number(global.timeout);
  if (!(timeoutSeconds > 0)) throw new Error(`--timeout must be a positive number of seconds, not ${JSON.stringify(global.timeout)}`);
  const tap = flags.format === "tap";
  const started = new Date();

  const sandbox = new Sandbox({
    tag: `${process.pid.toString(36)}${Math.random().toString(36).slice(2, 5)}`,
    env: io.env,
    hostSetup: flags.hostSetup,
    netnsSetup: flags.netnsSetup,
    timeoutMs: timeoutSeconds * 1000,
  });
  const onSignal = (signal: NodeJS.Signals) => {
    sandbox.cleanup();
    io.stderr(`cnitool conformance: ${signal}: the run's namespaces are removed\n`);
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let results: CheckResult[];
  try {
    if (tap) {
      io.stdout(
        tapHeader([
          `cnitool conformance ${plugin}`,
          `config: ${configFile} (cniVersion ${String(config["cniVersion"])}, type ${String(config["type"])})`,
          `CNI_PATH: ${cniPath}`,
          `host namespace: ${sandbox.host.path}`,
        ]),
      );
    }
    try {
      await sandbox.start();
    } catch (e) {
      if (!(e instanceof SetupError)) throw e;
      if (tap) io.stdout(`Bail out! ${e.message.split("\n")[0]}\n`);
      throw e;
    }
    results = await runSuite({
      plugin,
      config,
      cniPath,
      ifName: global.ifname || "eth0",
      sandbox,
      ...(only ? { only } : {}),
      report: (r) => {
        if (tap) io.stdout(tapEntry(r));
      },
      note: (text) => {
        if (tap) io.stdout(`# ${text}\n`);
      },
    });
  } finally {
    sandbox.cleanup();
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
  if (tap) io.stdout(tapFooter(results));
  else {
    io.stdout(
      formatJUnit(
        {
          name: path.basename(plugin),
          timestamp: started,
          properties: { plugin, config: configFile, cniVersion: String(config["cniVersion"]), CNI_PATH: cniPath },
        },
        results,
      ),
    );
  }
  if (!runPassed(results)) throw new CommanderError(1, "cnitool.conformance", "");
}

/** Adds `conformance` to cnitool. */
export function addConformanceCommand(program: Command, io: ConformanceIo): void {
  program
    .command("conformance")
    .description(
      "Run one plugin executable through the CNI protocol, in network namespaces of its own, and report each " +
        "rule of the spec it keeps or breaks (TAP, or JUnit XML); exit 0 iff no check fails. Needs root. See docs/conformance.md.",
    )
    .argument("<plugin>", "the plugin executable: a path, or a name found in CNI_PATH")
    .requiredOption("--config <file>", "the plugin's config: a JSON object with cniVersion, name and type (from a conflist: its plugin of that type)")
    .option("--format <format>", "tap or junit", "tap")
    .option(
      "--only <pattern>",
      "run only the checks whose title or spec section matches this regular expression (case-insensitive unless it has a capital letter: VERSION selects the VERSION checks)",
    )
    .option(
      "--host-setup <command>",
      "a shell command run in the runner's host namespace before the checks ($CONFORMANCE_HOST_NETNS is its path); repeatable",
      collect,
      [],
    )
    .option(
      "--netns-setup <command>",
      "a shell command run in the runner's host namespace after each container namespace is made " +
        "($CONFORMANCE_NETNS is its path, $CONFORMANCE_NETNS_NAME its name, $CONFORMANCE_NETNS_INDEX its number); repeatable",
      collect,
      [],
    )
    .action(async (plugin: string, flags: Flags) => conformance(plugin, flags, program.opts<{ ifname?: string; timeout?: string }>(), io));
}
