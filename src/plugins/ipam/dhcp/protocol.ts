/**
 * tscni's protocol between the dhcp plugin and the dhcp daemon, over the daemon's unix socket. Upstream uses
 * Go's net/rpc (gob over HTTP), which nothing but Go reads, so ours is its own and the two do not mix: our
 * plugin needs our daemon and Go's plugin needs Go's.
 *
 * One request per connection: the plugin sends one JSON object and a newline —
 * `{"protocol":"tscni-dhcp/1","method":"ADD","args":{"containerID","netns","ifName","args","path","stdinData"}}`
 * (`netns` absolute, `stdinData` the config bytes in base64) — and the daemon answers one JSON object and a
 * newline, `{"result":{...}}` (an IPAM result for ADD, `{}` otherwise) or `{"error":{"code","msg","details"}}`,
 * then closes. Methods are the CNI verbs ADD, CHECK, DEL, STATUS and GC.
 * @module
 */
import type net from "node:net";
import { isJsonObject, type JsonObject } from "#go-json/json.js";
import { type CniError, cniError, decodingFailure, ErrorCode, failure, messageOf, wrap } from "#spec/errors.js";
import type { CallerFile } from "#sys/caller-root.js";
import type { PeerRule } from "#sys/peer.js";
import * as path from "#sys/posix-path.js";

export const PROTOCOL = "tscni-dhcp/1";
export const METHODS = ["ADD", "CHECK", "DEL", "STATUS", "GC"] as const;
export type Method = (typeof METHODS)[number];

/** The CNI call as the daemon gets it. */
export interface WireArgs {
  containerID: string;
  netns: string;
  ifName: string;
  /** CNI_ARGS. */
  args: string;
  /** CNI_PATH. */
  path: string;
  stdinData: Buffer;
  /** Where the daemon opens `netns` as its caller sees it (never on the wire: the daemon resolves it). */
  view?: CallerFile;
}

export interface DaemonRequest {
  method: Method;
  args: WireArgs;
}

/** The most a request or a response may be (a config is a few kB). */
export const MAX_MESSAGE_BYTES = 4 << 20;

export function encodeRequest(req: DaemonRequest): string {
  const { stdinData, view: _view, ...rest } = req.args;
  return `${JSON.stringify({ protocol: PROTOCOL, method: req.method, args: { ...rest, stdinData: stdinData.toString("base64") } })}\n`;
}

/** A request that does not follow the protocol (code 6, naming what is wrong). */
const badRequest = (what: string): CniError => decodingFailure(`bad request to the dhcp daemon: ${what}`);

/** Decodes one request line; throws a CniError (code 6) naming what is wrong. */
export function decodeRequest(line: string): DaemonRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (e) {
    throw badRequest(`not JSON (${messageOf(e)})`);
  }
  if (!isJsonObject(raw)) throw badRequest("not a JSON object");
  if (raw["protocol"] !== PROTOCOL) throw badRequest(`protocol ${JSON.stringify(raw["protocol"])} is not ${PROTOCOL}`);
  const method = raw["method"];
  if (typeof method !== "string" || !(METHODS as readonly string[]).includes(method)) throw badRequest(`unknown method ${JSON.stringify(method)}`);
  const a = raw["args"];
  if (!isJsonObject(a)) throw badRequest("args is not an object");
  const text = (key: string): string => {
    const v = a[key] ?? "";
    if (typeof v !== "string") throw badRequest(`args.${key} is not a string`);
    return v;
  };
  const stdin = text("stdinData");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(stdin)) throw badRequest("args.stdinData is not base64");
  return {
    method: method as Method,
    args: {
      containerID: text("containerID"),
      netns: text("netns"),
      ifName: text("ifName"),
      args: text("args"),
      path: text("path"),
      stdinData: Buffer.from(stdin, "base64"),
    },
  };
}

export function encodeResult(result: JsonObject): string {
  return `${JSON.stringify({ result })}\n`;
}

export function encodeError(e: CniError): string {
  return `${JSON.stringify({ error: e.toJSON() })}\n`;
}

/** Why the daemon cannot be reached, in words that name the socket. */
function unreachable(socketPath: string, err: NodeJS.ErrnoException, code: number): CniError {
  const reason =
    err.code === "ENOENT"
      ? "the socket does not exist (is `dhcp daemon` running?)"
      : err.code === "ECONNREFUSED"
        ? "nothing listens on the socket (a stale socket of a daemon that stopped?)"
        : err.code === "EACCES"
          ? "permission denied (the daemon's socket is root's)"
          : err.code === "ENOTSOCK"
            ? "it is not a socket"
            : err.message;
  return cniError(code, `cannot reach the dhcp daemon at ${socketPath}: ${reason}`);
}

/** The dhcp plugin's rule for the daemon's listener (docs/trust.md): root, or the plugin's own user, of its user namespace, with at least its capabilities. */
export const DAEMON_LISTENER_RULE: PeerRule = { namespaces: ["user"], capabilities: "at-least", confinement: "none", ownUid: true };

/**
 * Why the server on `socket` is not to be sent the call (it would learn the container's namespace, config and
 * CNI_ARGS, and its answer would be taken as the result), or undefined when it is trusted: sys/peer.ts's
 * verifyListener with the daemon's rule as the listener — root of this process's user namespace (or this
 * process's own user) with at least this process's capabilities, judged on the process the kernel names; its
 * mount, network and pid namespaces and its confinement are its own (a daemon in a pod). Where the listener cannot
 * be identified (no FFI: the Node fallback), judged on the socket file's owner, not following a symbolic link.
 */
async function untrustedDaemon(socket: net.Socket, socketPath: string): Promise<string | undefined> {
  const { ownIdentity, peerCredentials, socketFd, verifyListener } = await import("#sys/peer.js");
  const fd = socketFd(socket);
  if (fd !== undefined && (await peerCredentials(fd))) {
    const verdict = await verifyListener(fd, ownIdentity(), DAEMON_LISTENER_RULE, { socketPath });
    return "refusal" in verdict ? `${verdict.refusal} (nothing was sent)` : undefined;
  }
  const trusted = (uid: number) => uid === 0 || uid === process.geteuid?.();
  const { lstatSync } = await import("node:fs");
  try {
    const st = lstatSync(socketPath);
    if (st.isSymbolicLink()) return "the socket path is a symbolic link (nothing was sent)";
    return trusted(st.uid) ? undefined : `the socket is owned by uid ${st.uid}, not root (nothing was sent)`;
  } catch (e) {
    return `its socket cannot be examined: ${messageOf(e)}`;
  }
}

/** Reads one newline-terminated message of at most MAX_MESSAGE_BYTES from `socket`. */
export function readLine(socket: net.Socket, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err?: Error) => {
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("error", onError);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const onData = (chunk: Buffer) => {
      const nl = chunk.indexOf(0x0a);
      chunks.push(nl >= 0 ? chunk.subarray(0, nl) : chunk);
      size += chunk.length;
      if (nl >= 0) finish();
      else if (size > MAX_MESSAGE_BYTES) finish(new Error(`${what} is over ${MAX_MESSAGE_BYTES} bytes`));
    };
    const onEnd = () => finish(new Error(`${what} ended before its newline`));
    const onError = (e: Error) => finish(e);
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("error", onError);
  });
}

/** How long STATUS waits for the daemon in all (connecting, the listener's check, the answer): runtimes poll it. */
export const STATUS_TIMEOUT_MS = 2000;

/**
 * Calls the daemon at `socketPath` and returns its result. A daemon that cannot be reached is code 11
 * ("try again later"), naming the socket; for STATUS it is code 51 (no ADD can be served, and the leases of the
 * network's containers are no longer renewed), and so is a daemon that does not answer STATUS within
 * STATUS_TIMEOUT_MS. The daemon's own errors keep their code. `netns` is made absolute first (the daemon runs
 * elsewhere).
 */
export async function callDaemon(socketPath: string, method: Method, args: WireArgs): Promise<JsonObject> {
  const code = method === "STATUS" ? ErrorCode.LimitedConnectivity : ErrorCode.TryAgainLater;
  const request = encodeRequest({ method, args: { ...args, netns: args.netns ? path.resolve(args.netns) : "" } });
  // (node:net is loaded here, not at start-up: a call refused on its config never needs it; docs/startup.md.)
  const { createConnection } = await import("node:net");
  const s = createConnection(socketPath);
  const timer =
    method === "STATUS"
      ? setTimeout(() => s.destroy(new Error(`no answer to STATUS within ${STATUS_TIMEOUT_MS} ms (a daemon that hangs?)`)), STATUS_TIMEOUT_MS)
      : undefined;
  try {
    return await exchange(s, socketPath, request, code);
  } finally {
    clearTimeout(timer);
  }
}

/** Sends `request` to the daemon once it is connected and trusted; its answer decoded. */
async function exchange(s: net.Socket, socketPath: string, request: string, code: number): Promise<JsonObject> {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    s.once("connect", () => resolve(s));
    s.once("error", (e: NodeJS.ErrnoException) => reject(unreachable(socketPath, e, code)));
  });
  const untrusted = await untrustedDaemon(socket, socketPath);
  if (untrusted) {
    socket.destroy();
    throw cniError(code, `will not call the dhcp daemon at ${socketPath}: ${untrusted}`);
  }
  if (socket.destroyed) throw cniError(code, `the dhcp daemon at ${socketPath} did not answer in time`);
  let line: string;
  try {
    socket.write(request);
    line = await readLine(socket, "the daemon's answer");
  } catch (e) {
    throw wrap(`the dhcp daemon at ${socketPath} did not answer`, e, code);
  } finally {
    socket.destroy();
  }
  let answer: unknown;
  try {
    answer = JSON.parse(line);
  } catch {
    const hint = line.startsWith("HTTP/") ? " (an HTTP server: Go's dhcp daemon? tscni's dhcp plugin needs tscni's `dhcp daemon`)" : "";
    throw failure(`the daemon at ${socketPath} does not speak ${PROTOCOL}${hint}`, line.slice(0, 200));
  }
  if (isJsonObject(answer) && isJsonObject(answer["error"])) {
    const e = answer["error"];
    throw cniError(
      typeof e["code"] === "number" ? e["code"] : ErrorCode.Internal,
      String(e["msg"] ?? ""),
      typeof e["details"] === "string" ? e["details"] : "",
    );
  }
  if (isJsonObject(answer) && isJsonObject(answer["result"])) return answer["result"];
  throw failure(`the daemon at ${socketPath} answered neither a result nor an error`, line.slice(0, 200));
}
