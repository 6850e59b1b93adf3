/**
 * firewalld over the system D-Bus, through systemd's `busctl` (no D-Bus library needed): whether firewalld
 * runs, the zone source calls the Go firewall plugin makes (`addSource`, `removeSource`, `querySource` on
 * `org.fedoraproject.FirewallD1.zone`), and a watch for its `Reloaded` signal. The bus is the system bus, or
 * `DBUS_SYSTEM_BUS_ADDRESS` when set.
 * @module
 */
import { existsSync } from "node:fs";
import { findTool } from "#sys/tool-path.js";
import { NetOpError } from "../errors.js";
import { runTool, type ToolResult } from "../tools.js";

export const FIREWALLD_NAME = "org.fedoraproject.FirewallD1";
const FIREWALLD_PATH = "/org/fedoraproject/FirewallD1";
const ZONE_INTERFACE = `${FIREWALLD_NAME}.zone`;

/** Runs busctl with these arguments (replaceable in tests); `address` is the call's DBUS_SYSTEM_BUS_ADDRESS. */
export type BusctlRunner = (args: string[], operation: string, address?: string) => Promise<ToolResult>;

// The bus comes from the call's environment (a resident server serves callers with their own), not busctl's.
const runBusctl: BusctlRunner = (args, operation, address) =>
  runTool("busctl", [address ? `--address=${address}` : "--system", "--json=short", "--timeout=10", ...args], operation);

/** The socket of the system bus, when the address is a plain unix path (the usual case). */
function systemBusSocket(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const address = env["DBUS_SYSTEM_BUS_ADDRESS"];
  if (!address) return "/run/dbus/system_bus_socket";
  const m = /(?:^|;)unix:(?:[^;]*,)?path=([^,;]+)/.exec(address);
  return m ? decodeURIComponent(m[1]!) : undefined;
}

/** The `data` of busctl's JSON answer. */
function answer(result: ToolResult): unknown[] {
  const parsed = JSON.parse(result.stdout) as { data?: unknown[] };
  return parsed.data ?? [];
}

export class Firewalld {
  constructor(
    private readonly busctl: BusctlRunner = runBusctl,
    private readonly env: Readonly<Record<string, string | undefined>> = {},
  ) {}

  /**
   * Whether firewalld owns its name on the system bus. No bus socket means no (without starting a process);
   * a bus that cannot be asked (busctl missing or failing) also means no.
   */
  async running(): Promise<boolean> {
    const socket = systemBusSocket(this.env);
    if (socket !== undefined && !existsSync(socket)) return false;
    try {
      const result = await this.busctl(
        ["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", "s", FIREWALLD_NAME],
        "ask the system bus whether firewalld runs",
        this.env["DBUS_SYSTEM_BUS_ADDRESS"] || undefined,
      );
      return answer(result)[0] === true;
    } catch {
      return false;
    }
  }

  private zoneCall(method: string, zone: string, source: string, operation: string): Promise<ToolResult> {
    return this.busctl(
      ["call", FIREWALLD_NAME, FIREWALLD_PATH, ZONE_INTERFACE, method, "ss", zone, source],
      operation,
      this.env["DBUS_SYSTEM_BUS_ADDRESS"] || undefined,
    );
  }

  /** Puts a source (`ip/32` or `ip/128`) into a zone; already being in it is fine. */
  async addSource(zone: string, source: string): Promise<void> {
    try {
      await this.zoneCall("addSource", zone, source, `add ${source} to firewalld zone ${zone}`);
    } catch (e) {
      if (!(e instanceof NetOpError && e.kind === "exists")) throw e; // firewalld's ZONE_ALREADY_SET
    }
  }

  async removeSource(zone: string, source: string): Promise<void> {
    await this.zoneCall("removeSource", zone, source, `remove ${source} from firewalld zone ${zone}`);
  }

  /** Whether a source is in a zone. */
  async querySource(zone: string, source: string): Promise<boolean> {
    return answer(await this.zoneCall("querySource", zone, source, `look up ${source} in firewalld zone ${zone}`))[0] === true;
  }
}

/** A watch on the bus; `stop` ends it (and its busctl). */
export interface BusWatch {
  stop(): void;
}

/**
 * Calls `onReloaded` whenever firewalld announces it reloaded (signal `Reloaded` of `org.fedoraproject.FirewallD1`, which
 * it sends after rebuilding its rules), through `busctl monitor` (a monitor of the bus: root may be one), killed
 * with this process (setpriv --pdeathsig, when util-linux has it) or by `stop`. Returns undefined when there is no
 * bus to watch (no socket); `onEnd` hears why a watch ended by itself (the bus went away, busctl failed).
 */
export function watchReloaded(
  env: Readonly<Record<string, string | undefined>>,
  onReloaded: () => void,
  onEnd: (reason: string) => void,
): BusWatch | undefined {
  const socket = systemBusSocket(env);
  if (socket !== undefined && !existsSync(socket)) return undefined;
  const busctl = findTool("busctl");
  if (!busctl) return undefined;
  const address = env["DBUS_SYSTEM_BUS_ADDRESS"];
  const args = [
    address ? `--address=${address}` : "--system",
    "--json=short",
    "monitor",
    `--match=type='signal',interface='${FIREWALLD_NAME}',member='Reloaded'`,
  ];
  const setpriv = findTool("setpriv");
  // (Loaded here, docs/startup.md: a plugin call never watches.)
  const { spawn } = process.getBuiltinModule("node:child_process");
  const child = setpriv
    ? spawn(setpriv, ["--pdeathsig", "KILL", "--", busctl, ...args], { stdio: ["ignore", "pipe", "pipe"] })
    : spawn(busctl, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stopped = false;
  let pending = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split("\n");
    pending = lines.pop()!;
    for (const line of lines) {
      try {
        const m = JSON.parse(line) as { type?: string; interface?: string; member?: string };
        if (m.type === "signal" && m.interface === FIREWALLD_NAME && m.member === "Reloaded") onReloaded();
      } catch {
        /* not a message */
      }
    }
  });
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-500)));
  child.on("error", (e) => !stopped && onEnd(`cannot run busctl: ${e.message}`));
  child.on("exit", (code, signal) => {
    const said = stderr.replace(/Monitoring bus message stream\.\s*/, "").trim();
    if (!stopped) onEnd(`busctl monitor ended (${code ?? signal})${said ? `: ${said}` : ""}`);
  });
  return {
    stop() {
      stopped = true;
      child.kill("SIGKILL");
    },
  };
}
