/**
 * Who is on the other end of a unix socket, and whether a privileged process may trust it: the rule every tscni
 * server applies to its callers and every tscni client applies to the listener before it sends a byte (docs/trust.md).
 *
 * A peer is judged on what /proc says of it, compared with this process: root (uid 0 in our user namespace), the
 * namespaces a rule names, its effective capabilities, and its confinement (seccomp mode and filter count,
 * no_new_privs, LSM label). Which /proc entry is the peer is not taken from the socket's pid alone (a pid is a
 * number in *our* pid namespace, and /proc may be another namespace's, as for a process in a child pid namespace
 * that kept the node's /proc): the kernel's pidfd of the peer (SO_PEERPIDFD, Linux >= 6.5) says which pid it
 * has in this /proc (fdinfo `Pid:`), before and after the reads, so the entry read was the peer throughout. Without
 * SO_PEERPIDFD, only a /proc of our own pid namespace is trusted, and the peer's start time must be unchanged
 * across the reads and not later than the connection.
 * Needs Bun's FFI (getsockopt); under Node no peer can be identified, so every peer is refused.
 * @module
 */
import { closeSync, lstatSync, readFileSync, statSync } from "node:fs";
import { bindLibc, type Libc } from "./libc.js";
import { type FileKey, holdsFlockNow } from "./lock-holders.js";

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const SO_PEERPIDFD = 77;

/** A socket peer's credentials as the kernel recorded them (at connect() for a caller, at listen() for a listener). */
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

export type NamespaceKind = "user" | "net" | "mnt" | "pid";
const KINDS: readonly NamespaceKind[] = ["user", "net", "mnt", "pid"];
const NAMESPACE_WORDS: Record<NamespaceKind, string> = { user: "user", net: "network", mnt: "mount", pid: "pid" };

/** What the peer rule compares of a process. */
export interface ProcessFacts {
  /** Effective uid, as /proc shows it (in the reader's user namespace). */
  euid: number | undefined;
  /** Each namespace as "dev:ino"; undefined when it cannot be read. */
  namespaces: Partial<Record<NamespaceKind, string>>;
  capEff: bigint;
  /** "<mode>/<filters>" of `Seccomp:` and `Seccomp_filters:` ("0/0": none). */
  seccomp: string;
  /** `NoNewPrivs:` ("0" or "1"). */
  noNewPrivs: string;
  /** The LSM label (`/proc/<pid>/attr/current`), or "(none: <code>)" where the kernel has none to give. */
  lsm: string;
}

/** The facts of this process, read once at start, that peers are compared with. */
export type OwnIdentity = ProcessFacts;

/**
 * What a peer must have in common with the judge. `capabilities`: "equal" (the peer could do exactly what the judge
 * does: a server acting for a caller must do no more and no less than the caller's own exec) or "at-least" (the
 * peer has every capability the judge has). `confinement`: "equal" (same seccomp mode and filter count, same
 * no_new_privs, same LSM label), "no-stricter" (the peer is not under a seccomp filter or no_new_privs the judge
 * is free of; LSM labels not compared) or "none".
 */
export interface PeerRule {
  namespaces: readonly NamespaceKind[];
  capabilities: "equal" | "at-least";
  confinement: "equal" | "no-stricter" | "none";
  /** Besides root, a peer running as this process's own effective uid is judged (a non-root user's own daemon). */
  ownUid?: boolean;
}

/**
 * A rule in the words of docs/trust.md's tables ("uid 0; user and network namespaces; capabilities at least
 * ours; confinement equal"): the document quotes this text for each rule it names, and a test holds the two together.
 */
export function describeRule(rule: PeerRule): string {
  const kinds = rule.namespaces.map((k) => NAMESPACE_WORDS[k]);
  const list = kinds.length <= 1 ? kinds.join("") : `${kinds.slice(0, -1).join(", ")} and ${kinds.at(-1)}`;
  const namespaces = kinds.length === 0 ? "no namespace compared" : `${list} namespace${kinds.length > 1 ? "s" : ""}`;
  const capabilities = rule.capabilities === "equal" ? "capabilities equal" : "capabilities at least ours";
  const confinement = { equal: "confinement equal", "no-stricter": "confinement no stricter", none: "confinement not compared" }[rule.confinement];
  return `${rule.ownUid ? "uid 0 or our own uid" : "uid 0"}; ${namespaces}; ${capabilities}; ${confinement}`;
}

/** The resident server's rule for its callers, and its callers' rule for it: the same process in all but pid. */
export const SAME_PROCESS_RULE: PeerRule = { namespaces: KINDS, capabilities: "equal", confinement: "equal" };

/**
 * Which rule refused a peer: not root, in other namespaces, other capabilities, other confinement, not the
 * holder of the server's lock, or no identity that could be relied on (unreadable credentials or process, a
 * process that left, is younger than the connection or not visible in this /proc).
 */
export type PeerRefusalKind = "not_root" | "namespace" | "capabilities" | "confinement" | "lock" | "identity";

/** A refusal: why, in words, and which rule. */
export interface PeerRefusal {
  refusal: string;
  kind: PeerRefusalKind;
}

/** The verdict on a peer: trusted (with its pid in this /proc), or refused. */
export type PeerVerdict = { pid: number } | PeerRefusal;

let ffi: Promise<Pick<Libc, "getsockopt" | "getpeername"> | null> | undefined;
const libc = () => (ffi ??= bindLibc(["getsockopt", "getpeername"]).then((b) => b?.fn ?? null));

/** The path the listener of connected unix socket `fd` bound (getpeername), whatever name we reached it by; undefined when unknown. */
async function peerBoundPath(fd: number): Promise<string | undefined> {
  const c = await libc();
  if (!c) return undefined;
  const addr = new Uint8Array(110);
  const length = new Uint32Array([addr.length]);
  if (c.getpeername(fd, addr, length) !== 0 || length[0]! <= 2 || length[0]! > addr.length) return undefined;
  const name = Buffer.from(addr.subarray(2, length[0]));
  const end = name.indexOf(0);
  return name.subarray(0, end < 0 ? name.length : end).toString("latin1");
}

/** The credentials of the peer of socket `fd`; undefined when they cannot be read here (no FFI: Node). */
export async function peerCredentials(fd: number): Promise<PeerCredentials | undefined> {
  const c = await libc();
  if (!c) return undefined;
  const ucred = new Uint8Array(12);
  const length = new Uint32Array([ucred.length]);
  if (c.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ucred, length) !== 0) return undefined;
  const view = new DataView(ucred.buffer);
  return { pid: view.getInt32(0, true), uid: view.getUint32(4, true), gid: view.getUint32(8, true) };
}

/** A pidfd naming the peer of socket `fd`, or undefined where the kernel has no SO_PEERPIDFD (or the peer is gone). */
async function peerPidfd(fd: number): Promise<number | undefined> {
  const c = await libc();
  if (!c) return undefined;
  const value = new Uint8Array(4);
  const length = new Uint32Array([4]);
  if (c.getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, value, length) !== 0) return undefined;
  return new DataView(value.buffer).getInt32(0, true);
}

/**
 * The pid that the process a pidfd names has in this /proc's pid namespace (fdinfo `Pid:`): 0 when it is not
 * visible there, -1 when it has exited, undefined when the fdinfo cannot be read.
 */
function pidfdProcPid(pidfd: number): number | undefined {
  try {
    const m = /(?:^|\n)Pid:\s*(-?\d+)/.exec(readFileSync(`/proc/self/fdinfo/${pidfd}`, "latin1"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The namespace `/proc/<pid>/ns/<kind>` names, as "dev:ino"; undefined when it cannot be read. */
function namespaceOf(pid: number | "self", kind: NamespaceKind): string | undefined {
  try {
    const s = statSync(`/proc/${pid}/ns/${kind}`);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

/** A `/proc/<pid>/status` field. */
export function statusField(status: string, field: string): string | undefined {
  const at = status.startsWith(`${field}:`) ? -1 : status.indexOf(`\n${field}:`);
  if (at === -1 && !status.startsWith(`${field}:`)) return undefined;
  const start = at + 1 + field.length + 1;
  const end = status.indexOf("\n", start);
  return status.slice(start, end < 0 ? undefined : end).trim();
}

/** The LSM label of `/proc/<pid>/attr/current`, or why there is none (both sides of a comparison read it alike). */
function lsmLabel(pid: number | "self"): string {
  try {
    return readFileSync(`/proc/${pid}/attr/current`, "latin1").replace(/\0/g, "").trim();
  } catch (e) {
    return `(none: ${(e as NodeJS.ErrnoException).code ?? "unreadable"})`;
  }
}

/**
 * The facts of process `pid` as /proc shows them now; undefined when its status cannot be read. `like`: facts of
 * this process, whose LSM label tells whether the kernel gives one at all (when it gives ours none, it gives
 * nobody one: the peer's is not read).
 */
export function readFacts(pid: number | "self", kinds: readonly NamespaceKind[] = KINDS, like?: ProcessFacts): ProcessFacts | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return undefined;
  }
  const euid = statusField(status, "Uid")?.split(/\s+/)[1];
  return {
    euid: euid === undefined ? undefined : Number(euid),
    namespaces: Object.fromEntries(kinds.map((k) => [k, namespaceOf(pid, k)])),
    capEff: BigInt(`0x${statusField(status, "CapEff") || "0"}`),
    seccomp: `${statusField(status, "Seccomp") ?? "0"}/${statusField(status, "Seccomp_filters") ?? "0"}`,
    noNewPrivs: statusField(status, "NoNewPrivs") ?? "0",
    lsm: like?.lsm.startsWith("(none: ") ? like.lsm : lsmLabel(pid),
  };
}

/** This process's facts (read it once, at start). */
export function ownIdentity(): OwnIdentity {
  const own = readFacts("self");
  if (!own) throw new Error("cannot read /proc/self/status: the peer rule needs /proc");
  return own;
}

/** Capability numbers set in `a` and not in `b`, for a refusal's words. */
function capsMissing(a: bigint, b: bigint): string {
  const missing: number[] = [];
  for (let bit = 0; bit < 64; bit++) if ((a >> BigInt(bit)) & 1n && !((b >> BigInt(bit)) & 1n)) missing.push(bit);
  return missing.join(",");
}

/** "the caller" -> "the caller's". */
const possessive = (who: string): string => `${who}'s`;

/** What a seccomp "<mode>/<filters>" says, for a refusal's words. */
const seccompWords = (s: string): string =>
  s.startsWith("0/") ? "no seccomp filter" : `seccomp mode ${s.split("/")[0]} with ${s.split("/")[1]} filter(s)`;

/**
 * The rule applied to a peer's facts (pure: no /proc here). `peer` names the other side in the words ("the caller",
 * "the listener"); `judge` this side ("the server", "this caller").
 */
export function judgeFacts(
  facts: ProcessFacts,
  own: OwnIdentity,
  rule: PeerRule,
  peer = "the caller",
  judge = "the server",
): PeerRefusal | undefined {
  const ownUid = rule.ownUid ? own.euid : undefined;
  if (facts.euid !== 0 && (ownUid === undefined || facts.euid !== ownUid)) {
    return { refusal: `${peer} runs as uid ${facts.euid ?? "?"}, not root`, kind: "not_root" };
  }
  if ((facts.capEff & own.capEff) !== own.capEff) {
    return { refusal: `${peer} lacks capabilities ${judge} has (${capsMissing(own.capEff, facts.capEff)})`, kind: "capabilities" };
  }
  if (rule.capabilities === "equal" && facts.capEff !== own.capEff) {
    return { refusal: `${peer} has capabilities ${judge} lacks (${capsMissing(facts.capEff, own.capEff)})`, kind: "capabilities" };
  }
  for (const kind of rule.namespaces) {
    const words = NAMESPACE_WORDS[kind];
    // (One whose namespaces cannot be read is one this process may not inspect: never the same process.)
    if (own.namespaces[kind] === undefined) return { refusal: `${judge} cannot read its own ${words} namespace`, kind: "namespace" };
    if (facts.namespaces[kind] === undefined) return { refusal: `${judge} cannot read ${possessive(peer)} ${words} namespace`, kind: "namespace" };
    if (facts.namespaces[kind] !== own.namespaces[kind]) return { refusal: `${peer} is in another ${words} namespace`, kind: "namespace" };
  }
  if (rule.confinement === "equal") {
    if (facts.seccomp !== own.seccomp)
      return { refusal: `${peer} runs under ${seccompWords(facts.seccomp)}, ${judge} under ${seccompWords(own.seccomp)}`, kind: "confinement" };
    if (facts.noNewPrivs !== own.noNewPrivs)
      return { refusal: `${peer} has no_new_privs ${facts.noNewPrivs}, ${judge} ${own.noNewPrivs}`, kind: "confinement" };
    if (facts.lsm !== own.lsm)
      return { refusal: `${peer}'s LSM label is ${JSON.stringify(facts.lsm)}, ${judge}'s ${JSON.stringify(own.lsm)}`, kind: "confinement" };
  } else if (rule.confinement === "no-stricter") {
    if (!facts.seccomp.startsWith("0/") && facts.seccomp !== own.seccomp) {
      return { refusal: `${peer} runs under ${seccompWords(facts.seccomp)}, ${judge} under ${seccompWords(own.seccomp)}`, kind: "confinement" };
    }
    if (facts.noNewPrivs === "1" && own.noNewPrivs !== "1")
      return { refusal: `${peer} has no_new_privs set and ${judge} has not`, kind: "confinement" };
  }
  return undefined;
}

/** The file descriptor under a connected net.Socket (Bun and Node keep it on the handle). */
export function socketFd(socket: object): number | undefined {
  const fd = (socket as { _handle?: { fd?: number } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/** A process's start time in clock ticks after boot (field 22 of /proc/<pid>/stat), or undefined. */
export function startTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const value = Number(fields[19]); // field 22 counts from 1 and includes pid and comm
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Clock ticks since boot now (the unit of startTime), from /proc/uptime. */
export function ticksSinceBoot(): number {
  const seconds = Number(readFileSync("/proc/uptime", "latin1").split(" ")[0]);
  return Math.ceil(seconds * 100) + 1; // USER_HZ is 100 on Linux; rounded up, so "not later" errs towards admitting
}

let ownProc: boolean | undefined;
/** Whether this process's /proc shows its own pid namespace (its NSpid has one entry: no namespace above it is shown). */
export function procIsOwnPidNamespace(): boolean {
  if (ownProc === undefined) {
    try {
      const nspid = statusField(readFileSync("/proc/self/status", "latin1"), "NSpid");
      ownProc = nspid === undefined ? true : nspid.split(/\s+/).length === 1 && Number(nspid) === process.pid;
    } catch {
      ownProc = false;
    }
  }
  return ownProc;
}

/** How a peer is named while it is judged: `read` gets the pid it has in this /proc. */
type Reader<T> = (procPid: number) => T | PeerRefusal;

const isRefusal = (v: unknown): v is PeerRefusal => typeof v === "object" && v !== null && "refusal" in v && "kind" in v;

/**
 * Reads what `read` needs of the peer of socket `fd`, on the /proc entry that is the peer throughout the read (see
 * the module comment). `acceptedAt` (performance.now() when a caller's connection was accepted) bounds the start
 * time where there is no pidfd; a listener has none (it listened before we connected).
 */
async function readPeer<T>(fd: number, peer: string, read: Reader<T>, acceptedAt?: number): Promise<{ pid: number; value: T } | PeerRefusal> {
  const pidfd = await peerPidfd(fd);
  if (pidfd !== undefined) {
    try {
      const before = pidfdProcPid(pidfd);
      if (before === 0) return { refusal: `${peer} is not visible in this process's /proc (another pid namespace's /proc)`, kind: "identity" };
      if (before === undefined || before < 0) return { refusal: `${peer} left before it was checked`, kind: "identity" };
      const value = read(before);
      if (isRefusal(value)) return value;
      // The entry read was the peer's only if the pidfd still names a live process of that pid.
      if (pidfdProcPid(pidfd) !== before) return { refusal: `${peer} left while it was checked`, kind: "identity" };
      return { pid: before, value };
    } finally {
      closeSync(pidfd);
    }
  }
  if (!procIsOwnPidNamespace()) {
    return {
      refusal: `this process's /proc is not its own pid namespace's, and the kernel names no peer by pidfd (SO_PEERPIDFD, Linux 6.5): ${peer} cannot be identified`,
      kind: "identity",
    };
  }
  const creds = await peerCredentials(fd);
  const pid = creds?.pid ?? 0;
  const started = pid > 0 ? startTime(pid) : undefined;
  if (started === undefined) return { refusal: `${peer}'s process cannot be read (it left?)`, kind: "identity" };
  const acceptedTicks = acceptedAt === undefined ? undefined : ticksSinceBoot() - Math.floor((performance.now() - acceptedAt) / 10);
  if (acceptedTicks !== undefined && started > acceptedTicks)
    return { refusal: `${peer}'s pid names a process younger than the connection`, kind: "identity" };
  const value = read(pid);
  if (isRefusal(value)) return value;
  if (startTime(pid) !== started) return { refusal: `${peer} left while it was checked`, kind: "identity" };
  return { pid, value };
}

/** The rule applied to the process at `procPid` (read from /proc now). */
function judgeProcessAt(procPid: number, own: OwnIdentity, rule: PeerRule, peer: string, judge: string): PeerRefusal | undefined {
  const facts = readFacts(procPid, rule.namespaces, own);
  if (!facts) return { refusal: `${peer}'s process cannot be read (it left?)`, kind: "identity" };
  return judgeFacts(facts, own, rule, peer, judge);
}

/**
 * Whether the caller on socket `fd` is served under `rule` (see the module comment). `acceptedAt`:
 * performance.now() when the connection was accepted.
 */
export async function admitPeer(fd: number, own: OwnIdentity, rule: PeerRule = SAME_PROCESS_RULE, acceptedAt?: number): Promise<PeerVerdict> {
  const verdict = await admitPeerWith(fd, own, rule, acceptedAt, () => undefined);
  return isRefusal(verdict) ? verdict : { pid: verdict.pid };
}

/**
 * admitPeer, and `during` run while the caller's /proc entry is known to be the caller's (to open something of it,
 * such as its root directory); its value comes with the verdict. A `during` that throws refuses the caller.
 */
export async function admitPeerWith<T>(
  fd: number,
  own: OwnIdentity,
  rule: PeerRule,
  acceptedAt: number | undefined,
  during: (procPid: number) => T,
): Promise<{ pid: number; value: T } | PeerRefusal> {
  const creds = await peerCredentials(fd);
  if (!creds) return { refusal: "the peer's credentials cannot be read (the server needs the standalone build)", kind: "identity" };
  // Before anything else: a peer that was not root when it connected is never served, whatever it is now.
  if (creds.uid !== 0 && !(rule.ownUid && creds.uid === own.euid)) return { refusal: `uid ${creds.uid} is not served (root only)`, kind: "not_root" };
  return readPeer(
    fd,
    "the caller",
    (pid): T | PeerRefusal => {
      const refusal = judgeProcessAt(pid, own, rule, "the caller", "the server");
      if (refusal) return refusal;
      try {
        return during(pid);
      } catch (e) {
        return { refusal: `the caller's process cannot be read (${e instanceof Error ? e.message : String(e)})`, kind: "identity" };
      }
    },
    acceptedAt,
  );
}

/** What a client asks of a listener besides the rule. */
export interface ListenerChecks {
  /** The server's lock file: the listener must hold a flock on it (unless it is PID 1, see verifyListener). */
  lockPath?: string;
  /**
   * The path the client connected to. A listener that is PID 1 is believed only with it: the path must be a socket
   * file itself, bound by PID 1 at exactly that path (activationRefusal).
   */
  socketPath?: string;
}

/**
 * Why the socket PID 1 listens on (connected as `fd`) is not the one at `checks.socketPath` made for us, or
 * undefined when it is. Socket activation makes PID 1 the listener of every socket unit's socket: being PID 1
 * proves nothing of which unit's socket this is, and a uid-0 process without capabilities can rename, link or
 * replace entries in a root-owned directory, and so put at our path a socket PID 1 made for a service it controls.
 * Ours is a socket file at the path itself (no symbolic link), bound by PID 1 at exactly that path (getpeername:
 * a hard link or a renamed socket of another unit names that unit's path). A socket PID 1 bound at exactly that
 * path is one a unit names by it (ListenStream=), and units are written by the node's administrator, not by a
 * uid-0 process without capabilities.
 */
async function activationRefusal(fd: number, checks: ListenerChecks): Promise<PeerRefusal | undefined> {
  const socketPath = checks.socketPath;
  if (socketPath === undefined) return { refusal: "the listener is PID 1, and which unit's socket it is cannot be told here", kind: "identity" };
  try {
    if (!lstatSync(socketPath).isSocket())
      return { refusal: `the listener is PID 1, but ${socketPath} is not a socket file itself (a link?)`, kind: "identity" };
  } catch {
    return { refusal: `the listener is PID 1, but ${socketPath} is gone`, kind: "identity" };
  }
  const bound = await peerBoundPath(fd);
  if (bound !== socketPath)
    return {
      refusal: `the listener is PID 1 with a socket made for ${bound === undefined ? "an unknown path" : JSON.stringify(bound)}, not ${socketPath} (another unit's socket)`,
      kind: "identity",
    };
  return undefined;
}

/**
 * Whether the listener on connected socket `fd` is to be sent anything (docs/trust.md): root under `rule`
 * compared with this process, on the process the kernel names, and the holder of the server's lock when
 * `checks.lockPath` is given (proven from its own descriptors, lock-holders.ts). The init of our pid namespace
 * (PID 1, in our user, network and mount namespaces, with at least our capabilities) is believed only for the
 * socket at `checks.socketPath` and only when that socket is provably the one made for us (activationRefusal).
 */
export async function verifyListener(fd: number, own: OwnIdentity, rule: PeerRule, checks: ListenerChecks = {}): Promise<PeerVerdict> {
  const creds = await peerCredentials(fd);
  if (!creds) return { refusal: "the listener's credentials cannot be read (the standalone build is needed)", kind: "identity" };
  if (creds.uid !== 0 && !(rule.ownUid && creds.uid === own.euid))
    return { refusal: `the listener runs as uid ${creds.uid}, not root`, kind: "not_root" };
  let init = false;
  const verdict = await readPeer(fd, "the listener", (pid): true | PeerRefusal => {
    if (pid === 1 && procIsOwnPidNamespace()) {
      const facts = readFacts(1, ["user", "net", "mnt"], own);
      if (!facts) return { refusal: "the listener (PID 1) cannot be read", kind: "identity" };
      init = true;
      return (
        judgeFacts(
          facts,
          own,
          { namespaces: ["user", "net", "mnt"], capabilities: "at-least", confinement: "none" },
          "the listener (PID 1)",
          "this caller",
        ) ?? true
      );
    }
    const refusal = judgeProcessAt(pid, own, rule, "the listener", "this caller");
    if (refusal) return refusal;
    if (checks.lockPath === undefined) return true;
    let lock: FileKey;
    try {
      const st = statSync(checks.lockPath);
      if (!st.isFile() || st.uid !== 0) return { refusal: `${checks.lockPath} is not a plain file of root's`, kind: "lock" };
      lock = st;
    } catch {
      return { refusal: `${checks.lockPath} does not exist: no server holds its lock`, kind: "lock" };
    }
    if (!holdsFlockNow(pid, lock)) return { refusal: `the listener (pid ${pid}) does not hold the server's lock ${checks.lockPath}`, kind: "lock" };
    return true;
  });
  if (isRefusal(verdict)) return verdict;
  if (init) {
    const refusal = await activationRefusal(fd, checks);
    if (refusal) return refusal;
  }
  return { pid: verdict.pid };
}

/** Whether process `pid` is in this process's namespace of kind `kind` (false when it cannot be told). */
export function sharesNamespace(pid: number, kind: NamespaceKind): boolean {
  const theirs = namespaceOf(pid, kind);
  return theirs !== undefined && theirs === namespaceOf("self", kind);
}
