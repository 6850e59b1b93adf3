/**
 * The network layer's failure, as plugins see it: a NetOpError names the operation and the kernel's or the tool's
 * reason, and carries its kind (from the kernel's errno, or the tool's words for it), which callers switch on:
 * no caller reads an error's text.
 * @module
 */

/**
 * What kind of failure a NetOpError is, so callers switch on it instead of reading text: set from the kernel's
 * errno where a request went over netlink, and from a tool's words for it (one table per tool, below) where a tool
 * ran.
 */
export type NetErrorKind = "not-found" | "exists" | "busy" | "denied" | "unreachable" | "unsupported" | "tool-missing" | "other";

/** The kind of a kernel errno. */
export function kindOfErrno(errno: number): NetErrorKind {
  switch (errno) {
    case 2: // ENOENT
    case 3: // ESRCH (a route or neighbour that is not there)
    case 19: // ENODEV
      return "not-found";
    case 17: // EEXIST
      return "exists";
    case 16: // EBUSY
      return "busy";
    case 1: // EPERM
    case 13: // EACCES
      return "denied";
    case 100: // ENETDOWN
    case 101: // ENETUNREACH
    case 113: // EHOSTUNREACH
      return "unreachable";
    case 93: // EPROTONOSUPPORT
    case 95: // EOPNOTSUPP
    case 97: // EAFNOSUPPORT
      return "unsupported";
    default:
      return "other";
  }
}

type Words = ReadonlyArray<readonly [RegExp, NetErrorKind]>;
/** iproute2 (ip, bridge, tc): the kernel's strerror after "RTNETLINK answers:" or "Error:", and its own words for a missing device. */
const IPROUTE2_WORDS: Words = [
  [/cannot find device|does not exist|no such (file|device|process)|not found|cannot find/i, "not-found"],
  [/file exists|already exists/i, "exists"],
  [/device or resource busy/i, "busy"],
  [/operation not permitted|permission denied/i, "denied"],
  [/network is unreachable|no route to host|network is down/i, "unreachable"],
  [/not supported/i, "unsupported"],
];
/**
 * ip: iproute2's words, and its own for a generic netlink family the kernel does not have (`ip mptcp`, `ip l2tp`:
 * "Error talking to the kernel" on a line of its own after resolving the family failed, whatever strerror came
 * before; tc's "We have an error talking to the kernel" follows any refusal), and `ip mptcp`'s for EEXIST
 * ("too many addresses or duplicate one: -17.").
 */
const IP_WORDS: Words = [[/^Error talking to the kernel$/m, "unsupported"], [/: -17\b/, "exists"], ...IPROUTE2_WORDS];
/**
 * tc: iproute2's words, and the kernel's for a qdisc that is not there ("Invalid handle" deleting one a device
 * does not have; "Cannot delete qdisc with handle of zero" deleting the root qdisc of a device that has none) and
 * for one that is ("Exclusivity flag on, cannot modify": EEXIST).
 */
const TC_WORDS: Words = [
  [/invalid handle|cannot delete qdisc with handle of zero/i, "not-found"],
  [/exclusivity flag on/i, "exists"],
  ...IPROUTE2_WORDS,
];
/** iptables, ip6tables and their -restore: "No chain/target/match by that name", "Bad rule (does a matching rule exist...)". */
const IPTABLES_WORDS: Words = [
  [/no chain\/target\/match|bad rule|does not exist|doesn't exist|no such file|not found/i, "not-found"],
  [/chain already exists|file exists|already exists/i, "exists"],
  [/device or resource busy/i, "busy"],
  [/permission denied|operation not permitted/i, "denied"],
];
/** nft: the kernel's strerror for the object a command names. */
const NFT_WORDS: Words = [
  [/no such file or directory|does not exist|not found/i, "not-found"],
  [/file exists|already exists/i, "exists"],
  [/device or resource busy/i, "busy"],
  [/operation not permitted|permission denied/i, "denied"],
];
/** Each tool's words for the kinds (tools run with LC_ALL=C); GENERIC_WORDS are read after them, and alone for a tool not here or a failure no tool printed. */
const TOOL_WORDS: Record<string, Words> = {
  ip: IP_WORDS,
  bridge: IPROUTE2_WORDS,
  tc: TC_WORDS,
  iptables: IPTABLES_WORDS,
  ip6tables: IPTABLES_WORDS,
  "iptables-restore": IPTABLES_WORDS,
  "ip6tables-restore": IPTABLES_WORDS,
  nft: NFT_WORDS,
  // firewalld's error name for a source a zone has already.
  busctl: [[/\bZONE_ALREADY_SET\b/, "exists"]],
  // "0 flow entries have been deleted" (with exit status 1): there was nothing to delete.
  conntrack: [[/\b0 flow entries have been deleted/, "not-found"]],
};
const GENERIC_WORDS: Words = [
  [/cannot find device|does not exist|no such (file|device|process)|not found|cannot find|no chain\/target\/match|bad rule/i, "not-found"],
  [/file exists|already exists|chain already exists/i, "exists"],
  [/network is unreachable|no route to host|network is down/i, "unreachable"],
];

/** The kind a tool's failure text says: its own table first, then the words any tool may use. */
export function kindOfText(text: string, tool?: string): NetErrorKind {
  for (const [words, kind] of [...((tool && TOOL_WORDS[tool]) || []), ...GENERIC_WORDS]) if (words.test(text)) return kind;
  return "other";
}

/** A failed network operation: what was attempted, why the kernel or the tool refused, and what kind of failure it is. */
export class NetOpError extends Error {
  /** What kind of failure this is: given by whoever knew (the kernel's errno, the tool), else read from `reason`. */
  readonly kind: NetErrorKind;
  constructor(
    readonly operation: string,
    readonly reason: string,
    readonly exitCode: number | null = null,
    /** What the tool printed before failing (some tools, like grep, report partial success this way). */
    readonly stdout?: string,
    kind?: NetErrorKind,
    /** In a batch of steps (net/link/links.ts), the index of the step that failed. */
    readonly step?: number,
  ) {
    super(`${operation}: ${reason}`);
    this.name = "NetOpError";
    this.kind = kind ?? kindOfText(reason);
  }
  /** Whether the object does not exist (for idempotent deletes). */
  get isNotFound(): boolean {
    return this.kind === "not-found";
  }
  /** Whether the object exists already (for idempotent creates). */
  get isExists(): boolean {
    return this.kind === "exists";
  }
}

/** Rethrows a NetOpError as the failure of step `step` of a batch (any other error as it is). */
export const atStep =
  (step: number) =>
  (e: unknown): never => {
    if (e instanceof NetOpError && e.step === undefined) throw new NetOpError(e.operation, e.reason, e.exitCode, e.stdout, e.kind, step);
    throw e;
  };
