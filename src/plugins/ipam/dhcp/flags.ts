/**
 * The `dhcp daemon` command line, read as Go's flag package reads upstream's: `-name value`, `-name=value`
 * (one or two dashes), booleans as `-name` or `-name=false`, parsing stopping at the first non-flag or `--`,
 * durations in Go's syntax (`10s`, `1m2s`, `500ms`). Upstream's flags with their defaults, plus `-leasedir`.
 * @module
 */

export interface DaemonFlags {
  pidfile: string;
  hostprefix: string;
  socketpath: string;
  broadcast: boolean;
  /** Milliseconds. */
  timeout: number;
  resendmax: number;
  resendtimeout: number;
  leasedir: string;
}

export const DEFAULT_LEASE_DIR = "/var/lib/cni/dhcp";

type FlagSpec = { kind: "string" | "bool" | "duration"; usage: string; default: string };

const FLAGS: Record<keyof DaemonFlags, FlagSpec> = {
  broadcast: { kind: "bool", usage: "broadcast DHCP leases (set the BOOTP broadcast flag)", default: "false" },
  hostprefix: { kind: "string", usage: "optional prefix to host root (for the netns paths, the socket and the lease directory)", default: "" },
  leasedir: { kind: "string", usage: "directory where leases are kept across restarts", default: DEFAULT_LEASE_DIR },
  pidfile: { kind: "string", usage: "optional path to write daemon PID to", default: "" },
  resendmax: { kind: "duration", usage: "optional dhcp client max resend delay between requests", default: "1m2s" },
  resendtimeout: { kind: "duration", usage: "optional dhcp client resend timeout, no more retries after this timeout", default: "3m28s" },
  socketpath: { kind: "string", usage: "optional dhcp server socketpath", default: "/run/cni/dhcp.sock" },
  timeout: { kind: "duration", usage: "optional dhcp client timeout duration for each request", default: "10s" },
};

/** A command-line mistake: the message, then the usage, as Go's flag package prints them (exit status 2). */
export class FlagError extends Error {}

/** `-h` or `-help`: the usage (exit status 0). */
export class HelpRequested extends Error {}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a Go duration (`300ms`, `1.5h`, `2h45m`, `0`); undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  const part = /^(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (s) {
    const m = part.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNITS[m[2]!]!;
    s = s.slice(m[0].length);
  }
  return sign * total;
}

/** The usage text Go's flag package prints for these flags. */
export function usage(): string {
  const lines = ["Usage of daemon:"];
  for (const [name, f] of Object.entries(FLAGS)) {
    lines.push(`  -${name}${f.kind === "bool" ? "" : ` ${f.kind}`}`);
    const shownDefault =
      f.kind === "string" ? (f.default ? ` (default ${JSON.stringify(f.default)})` : "") : f.kind === "bool" ? "" : ` (default ${f.default})`;
    lines.push(`    \t${f.usage}${shownDefault}`);
  }
  return `${lines.join("\n")}\n`;
}

function setFlag(out: DaemonFlags, name: keyof DaemonFlags, value: string): void {
  const spec = FLAGS[name];
  if (spec.kind === "string") {
    (out[name] as string) = value;
  } else if (spec.kind === "bool") {
    const v = {
      "1": true,
      t: true,
      T: true,
      true: true,
      TRUE: true,
      True: true,
      "0": false,
      f: false,
      F: false,
      false: false,
      FALSE: false,
      False: false,
    }[value];
    if (v === undefined) throw new FlagError(`invalid boolean value ${JSON.stringify(value)} for -${name}: parse error`);
    (out[name] as boolean) = v;
  } else {
    const ms = parseGoDuration(value);
    if (ms === undefined) throw new FlagError(`invalid value ${JSON.stringify(value)} for flag -${name}: parse error`);
    if (ms < 0) throw new FlagError(`invalid value ${JSON.stringify(value)} for flag -${name}: a negative duration`);
    (out[name] as number) = ms;
  }
}

/** Parses the arguments after `daemon`; throws FlagError or HelpRequested. */
export function parseDaemonFlags(args: readonly string[]): DaemonFlags {
  const out = {} as DaemonFlags;
  for (const [name, spec] of Object.entries(FLAGS) as Array<[keyof DaemonFlags, FlagSpec]>) setFlag(out, name, spec.default);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.length < 2 || !arg.startsWith("-")) break; // the first non-flag ends the flags
    if (arg === "--") break;
    const body = arg.startsWith("--") ? arg.slice(2) : arg.slice(1);
    if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new FlagError(`bad flag syntax: ${arg}`);
    const eq = body.indexOf("=");
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === "h" || name === "help") throw new HelpRequested();
    if (!Object.hasOwn(FLAGS, name)) throw new FlagError(`flag provided but not defined: -${name}`);
    const key = name as keyof DaemonFlags;
    if (eq >= 0) setFlag(out, key, body.slice(eq + 1));
    else if (FLAGS[key].kind === "bool") setFlag(out, key, "true");
    else {
      if (i + 1 >= args.length) throw new FlagError(`flag needs an argument: -${name}`);
      setFlag(out, key, args[++i]!);
    }
  }
  return out;
}
