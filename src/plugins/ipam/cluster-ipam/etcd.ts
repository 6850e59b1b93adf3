/**
 * A small etcd v3 client over etcd's JSON gateway (`POST /v3/kv/range`, `/v3/kv/txn`, `/v3/auth/authenticate`;
 * keys and values base64 in JSON, 64-bit numbers as strings, false and zero fields left out), spoken with the
 * runtime's own HTTP client (node:http and node:https, which Node and Bun both have), so a plugin exec loads no
 * gRPC stack (docs/cluster-ipam.md has the measurement). node:https rather than `fetch`: Node's fetch cannot
 * present a client certificate without the undici package, and etcd clusters are usually run with mutual TLS.
 *
 * The request encoding is pure (encode/decode functions below, unit-tested); `EtcdClient` adds the transport:
 * several endpoints tried in turn (a member that refuses, resets or does not accept within `dialTimeoutMs` is
 * left for the next, and with several endpoints one attempt gets at most its share of the deadline), and one
 * deadline per request (`requestTimeoutMs`) across all attempts. Under load a call waits instead of failing: at
 * most ETCD_IN_FLIGHT requests of this process (the resident server: of the whole node) are in flight at once, the
 * rest wait their turn in order, and a request that ran out of its deadline is sent again, with growing pauses,
 * until the call's own budget (`callTimeoutMs`, from the client's creation; by default the request's deadline:
 * no second round) is spent; then it fails with `EtcdUnavailableError`. Requests may be sent twice (an attempt
 * whose answer was lost is repeated on another member), so callers only send what is safe to repeat: guarded
 * transactions and reads.
 * @module
 */
import type http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { noteAnswer } from "#sys/progress.js";

// ---- the request encoding ----------------------------------------------------------------------------

/** A key-value pair as read (key and value as UTF-8 text; revisions as numbers). */
export interface KeyValue {
  key: string;
  /** Empty when the range asked for keys only. */
  value: string;
  createRevision: number;
  modRevision: number;
  version: number;
}

/** A range read: one key, or `[key, end)`; `prefix` reads every key starting with `key`. */
export interface RangeOp {
  range: { key: string; end?: string; prefix?: boolean; keysOnly?: boolean; countOnly?: boolean; limit?: number; serializable?: boolean };
}
export interface PutOp {
  put: { key: string; value: string };
}
export interface DeleteOp {
  deleteRange: { key: string; end?: string; prefix?: boolean };
}
export type RequestOp = RangeOp | PutOp | DeleteOp;

/**
 * A comparison of a transaction. `createRevision: 0` is "the key does not exist" (create-if-absent);
 * `value` compares the value's bytes; `modRevision` the revision of its last change.
 */
export type Compare =
  | { key: string; createRevision: number; result?: CompareResult }
  | { key: string; modRevision: number; result?: CompareResult }
  | { key: string; value: string; result?: CompareResult };
export type CompareResult = "EQUAL" | "GREATER" | "LESS" | "NOT_EQUAL";

/** What one operation of a transaction answered. */
export type OpResponse = { kind: "range"; kvs: KeyValue[]; count: number; more: boolean } | { kind: "put" } | { kind: "delete"; deleted: number };

export interface RangeResult {
  kvs: KeyValue[];
  count: number;
  more: boolean;
  revision: number;
}

export interface TxnResult {
  succeeded: boolean;
  /** One per operation of the branch that ran, in order. */
  responses: OpResponse[];
  revision: number;
}

/** The base64 of a key or value's UTF-8 bytes, as the gateway wants it. */
export const encode64 = (text: string | Uint8Array): string => Buffer.from(text).toString("base64");
const decode64 = (b64: unknown): string => (typeof b64 === "string" ? Buffer.from(b64, "base64").toString("utf8") : "");

/**
 * The end of the range of every key starting with `prefix` (etcd's GetPrefixRangeEnd): the prefix with its last
 * byte below 0xff incremented and the rest cut; all keys ("\0") when every byte is 0xff.
 */
export function prefixEnd(prefix: string | Uint8Array): Uint8Array {
  const bytes = Uint8Array.from(Buffer.from(prefix));
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = bytes.slice(0, i + 1);
      end[i]! += 1;
      return end;
    }
  }
  return Uint8Array.of(0);
}

/** The gateway's RangeRequest. */
export function encodeRange(r: RangeOp["range"]): Record<string, unknown> {
  const body: Record<string, unknown> = { key: encode64(r.key) };
  if (r.prefix) body["range_end"] = encode64(prefixEnd(r.key));
  else if (r.end !== undefined) body["range_end"] = encode64(r.end);
  if (r.keysOnly) body["keys_only"] = true;
  if (r.countOnly) body["count_only"] = true;
  if (r.limit) body["limit"] = String(r.limit);
  // Served by the member asked, without confirming leadership (a read-only txn of such ranges is too): may be stale.
  if (r.serializable) body["serializable"] = true;
  return body;
}

function encodeOp(op: RequestOp): Record<string, unknown> {
  if ("range" in op) return { request_range: encodeRange(op.range) };
  if ("put" in op) return { request_put: { key: encode64(op.put.key), value: encode64(op.put.value) } };
  const d: Record<string, unknown> = { key: encode64(op.deleteRange.key) };
  if (op.deleteRange.prefix) d["range_end"] = encode64(prefixEnd(op.deleteRange.key));
  else if (op.deleteRange.end !== undefined) d["range_end"] = encode64(op.deleteRange.end);
  return { request_delete_range: d };
}

function encodeCompare(c: Compare): Record<string, unknown> {
  const out: Record<string, unknown> = { key: encode64(c.key), result: c.result ?? "EQUAL" };
  if ("createRevision" in c) Object.assign(out, { target: "CREATE", create_revision: String(c.createRevision) });
  else if ("modRevision" in c) Object.assign(out, { target: "MOD", mod_revision: String(c.modRevision) });
  else Object.assign(out, { target: "VALUE", value: encode64(c.value) });
  return out;
}

/** The gateway's TxnRequest: if every comparison holds, `success` runs, else `failure`; atomically. */
export function encodeTxn(compare: readonly Compare[], success: readonly RequestOp[], failure: readonly RequestOp[] = []): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (compare.length) body["compare"] = compare.map(encodeCompare);
  if (success.length) body["success"] = success.map(encodeOp);
  if (failure.length) body["failure"] = failure.map(encodeOp);
  return body;
}

const num = (v: unknown): number => (typeof v === "string" || typeof v === "number" ? Number(v) : 0);
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

function decodeKvs(list: unknown): KeyValue[] {
  return (Array.isArray(list) ? list : []).map((raw) => {
    const kv = obj(raw);
    return {
      key: decode64(kv["key"]),
      value: decode64(kv["value"]),
      createRevision: num(kv["create_revision"]),
      modRevision: num(kv["mod_revision"]),
      version: num(kv["version"]),
    };
  });
}

/** Decodes a RangeResponse (absent fields are the proto zero values the gateway leaves out). */
export function decodeRange(body: unknown): RangeResult {
  const r = obj(body);
  return { kvs: decodeKvs(r["kvs"]), count: num(r["count"]), more: r["more"] === true, revision: num(obj(r["header"])["revision"]) };
}

/** Decodes a TxnResponse. */
export function decodeTxn(body: unknown): TxnResult {
  const r = obj(body);
  const responses = (Array.isArray(r["responses"]) ? r["responses"] : []).map((raw): OpResponse => {
    const op = obj(raw);
    if (op["response_range"] !== undefined) {
      const range = decodeRange(op["response_range"]);
      return { kind: "range", kvs: range.kvs, count: range.count, more: range.more };
    }
    if (op["response_delete_range"] !== undefined) return { kind: "delete", deleted: num(obj(op["response_delete_range"])["deleted"]) };
    return { kind: "put" };
  });
  return { succeeded: r["succeeded"] === true, responses, revision: num(obj(r["header"])["revision"]) };
}

// ---- the client ---------------------------------------------------------------------------------------

/** How to reach etcd (validated by the plugin's config parser). */
export interface EtcdConnection {
  /** `http://host:port` or `https://host:port`, tried in turn. */
  endpoints: readonly string[];
  /** PEM contents (not paths) for https endpoints: client certificate and key, and the CA to trust. */
  tls?: { cert?: string | Buffer; key?: string | Buffer; ca?: string | Buffer };
  username?: string;
  password?: string;
  /** How long one endpoint may take to accept a connection before the next is tried. */
  dialTimeoutMs: number;
  /** How long one request may take in all, over every endpoint tried. */
  requestTimeoutMs: number;
  /**
   * How long the client's requests may wait for etcd in all, turns and repeats included, from its creation (one
   * client per plugin call); absent: `requestTimeoutMs` per request, never repeated.
   */
  callTimeoutMs?: number;
}

/** At most this many etcd requests of one process are in flight; the others wait their turn (back-pressure). */
export const ETCD_IN_FLIGHT = 16;

/** The process's turns at etcd: a counting semaphore whose waiters are served in order. */
class Turns {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(limit: number) {
    this.free = limit;
  }
  /** Resolves when a turn is taken (true) or `deadline` passes first (false). */
  take(deadline: number): Promise<boolean> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const granted = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(
        () => {
          const i = this.waiting.indexOf(granted);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve(false);
        },
        Math.max(0, deadline - Date.now()),
      );
      this.waiting.push(granted);
    });
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
  /** Requests waiting for a turn now. */
  get queued(): number {
    return this.waiting.length;
  }
}

const turns = new Turns(ETCD_IN_FLIGHT);
/** How many requests of this process wait for a turn at etcd now (for tests and the benchmark). */
export const etcdRequestsQueued = (): number => turns.queued;

/** etcd could not be reached or did not answer in time (the CNI error is code 11, try again later). */
export class EtcdUnavailableError extends Error {
  /** `endpointsNamed`: the message says what each endpoint answered (a request's time ran out after tries). */
  constructor(
    message: string,
    readonly endpointsNamed = false,
  ) {
    super(message);
    this.name = "EtcdUnavailableError";
  }
}

/** The least of a call's budget a new round of a request is begun with. */
const MIN_ROUND_MS = 50;

/** etcd answered with an error that retrying will not fix (a bad request, bad credentials). */
export class EtcdRequestError extends Error {
  /** `auth`: the configured user could not authenticate. */
  constructor(
    message: string,
    readonly grpcCode: number,
    readonly auth = false,
  ) {
    super(message);
    this.name = "EtcdRequestError";
  }
}

/** gRPC codes the gateway reports that mean "this member cannot serve now": Unavailable, DeadlineExceeded, Aborted. */
const RETRYABLE_GRPC = new Set([14, 4, 10]);
const GRPC_UNAUTHENTICATED = 16;
/** Node's codes for certificate problems: retrying another member would not help. */
const TLS_ERROR = /^(CERT_|ERR_TLS_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_SSL_)/;

/**
 * node:http or node:https, loaded on the first request (docs/startup.md: a call refused on its config, or one that
 * never reaches etcd, does not pay for them).
 */
const httpModule = (secure: boolean): typeof http =>
  secure ? (process.getBuiltinModule("node:https") as unknown as typeof http) : process.getBuiltinModule("node:http");

/** One keep-alive agent per TLS identity per process, so in-process calls (a runtime, tests) share connections. */
const agents = new Map<string, http.Agent>();
function agentFor(secure: boolean, tls: EtcdConnection["tls"]): http.Agent {
  const id = secure ? `https:${String(tls?.cert ?? "")}:${String(tls?.key ?? "")}:${String(tls?.ca ?? "")}` : "http";
  let agent = agents.get(id);
  if (!agent) {
    agent = secure
      ? new (process.getBuiltinModule("node:https").Agent)({
          keepAlive: true,
          maxSockets: 64,
          ...(tls?.cert ? { cert: tls.cert } : {}),
          ...(tls?.key ? { key: tls.key } : {}),
          ...(tls?.ca ? { ca: tls.ca } : {}),
        })
      : new (httpModule(false).Agent)({ keepAlive: true, maxSockets: 64 });
    agents.set(id, agent);
  }
  return agent;
}

/** The least time one attempt gets when the budget is shared among several endpoints. */
const MIN_ATTEMPT_MS = 1000;

/** An attempt's failure: whether the next endpoint may do better. */
class AttemptError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly grpcCode = 0,
  ) {
    super(message);
  }
}

/** Requests sent by every client of this process (round trips), for tests and the benchmark. */
let totalRequests = 0;
export const etcdRequestsSent = (): number => totalRequests;

export class EtcdClient {
  /** Requests this client sent (each attempt on an endpoint is one). */
  requests = 0;
  private current: number;
  private token: string | undefined;
  private authenticating: Promise<void> | undefined;

  /** When this client's requests stop waiting (undefined: each request has its own deadline, sent once). */
  private readonly callDeadline: number | undefined;

  constructor(readonly connection: EtcdConnection) {
    // Spread the calls of many nodes over the members; a failed member moves every later request on.
    this.current = Math.floor(Math.random() * connection.endpoints.length);
    this.callDeadline =
      connection.callTimeoutMs !== undefined && connection.callTimeoutMs > connection.requestTimeoutMs
        ? Date.now() + connection.callTimeoutMs
        : undefined;
  }

  range(r: RangeOp["range"]): Promise<RangeResult> {
    return this.call("/v3/kv/range", encodeRange(r)).then(decodeRange);
  }

  txn(compare: readonly Compare[], success: readonly RequestOp[], failure: readonly RequestOp[] = []): Promise<TxnResult> {
    return this.call("/v3/kv/txn", encodeTxn(compare, success, failure)).then(decodeTxn);
  }

  /** Reads several ranges at one revision in one round trip (a transaction with only reads). */
  async ranges(ops: ReadonlyArray<RangeOp["range"]>): Promise<RangeResult[]> {
    if (ops.length === 0) return [];
    const r = await this.txn(
      [],
      ops.map((range) => ({ range })),
    );
    return r.responses.map((resp) =>
      resp.kind === "range"
        ? { kvs: resp.kvs, count: resp.count, more: resp.more, revision: r.revision }
        : { kvs: [], count: 0, more: false, revision: r.revision },
    );
  }

  /**
   * POSTs `body` to `path` in one of the process's turns; a request that ran out of its deadline is sent again
   * while the call's budget lasts.
   */
  private async call(path: string, body: Record<string, unknown>): Promise<unknown> {
    let explained: string | undefined; // the last round's failure that names the members' reasons
    for (let round = 0; ; round++) {
      const budget = this.callDeadline ?? Date.now() + this.connection.requestTimeoutMs;
      if (!(await turns.take(budget))) {
        throw new EtcdUnavailableError(
          `etcd did not answer within ${this.connection.callTimeoutMs ?? this.connection.requestTimeoutMs} ms ` +
            `(${this.callDeadline !== undefined ? "callTimeoutMs" : "requestTimeoutMs"}): no turn among this node's ${ETCD_IN_FLIGHT} requests in flight`,
        );
      }
      let failure: unknown;
      try {
        return await this.callOnce(path, body);
      } catch (e) {
        failure = e;
      } finally {
        turns.give();
      }
      const left = (this.callDeadline ?? 0) - Date.now();
      if (failure instanceof EtcdUnavailableError && failure.endpointsNamed) explained = failure.message;
      // (A round needs time to be worth sending: one begun with the last milliseconds would only time out, and
      // its "no answer within 1 ms" would hide what the members said.)
      if (!(failure instanceof EtcdUnavailableError) || left <= MIN_ROUND_MS) {
        if (failure instanceof EtcdUnavailableError && this.callDeadline !== undefined) {
          throw new EtcdUnavailableError(
            `etcd did not answer within ${this.connection.callTimeoutMs} ms (callTimeoutMs), in ${round + 1} rounds; ` +
              `the last: ${explained ?? failure.message}`,
          );
        }
        throw failure;
      }
      // Waiting out the pause without a turn: the others go meanwhile.
      await sleep(Math.min(100 * 2 ** Math.min(round, 4), left - MIN_ROUND_MS));
    }
  }

  /** One round of a request: authenticating first when a user is configured. */
  private async callOnce(path: string, body: Record<string, unknown>): Promise<unknown> {
    const deadline = Math.min(Date.now() + this.connection.requestTimeoutMs, this.callDeadline ?? Infinity);
    if (this.connection.username !== undefined && this.token === undefined) await this.authenticate(deadline);
    try {
      return await this.send(path, body, deadline);
    } catch (e) {
      // A simple token expires after a while; one fresh token is worth a second try.
      if (e instanceof EtcdRequestError && e.grpcCode === GRPC_UNAUTHENTICATED && this.connection.username !== undefined) {
        this.token = undefined;
        await this.authenticate(deadline);
        return this.send(path, body, deadline);
      }
      throw e;
    }
  }

  private authenticate(deadline: number): Promise<void> {
    this.authenticating ??= this.send(
      "/v3/auth/authenticate",
      { name: this.connection.username, password: this.connection.password ?? "" },
      deadline,
      false,
    )
      .then((r) => {
        const token = obj(r)["token"];
        if (typeof token !== "string" || token === "") throw new EtcdRequestError("etcd returned no token (is authentication enabled?)", 0);
        this.token = token;
      })
      .catch((e: unknown) => {
        if (e instanceof EtcdRequestError)
          throw new EtcdRequestError(`authentication as ${JSON.stringify(this.connection.username)} failed: ${e.message}`, e.grpcCode, true);
        throw e;
      })
      .finally(() => (this.authenticating = undefined));
    return this.authenticating;
  }

  /** Tries the endpoints in turn until one answers or the deadline passes. */
  private async send(path: string, body: Record<string, unknown>, deadline: number, withToken = true): Promise<unknown> {
    const payload = JSON.stringify(body);
    const { endpoints } = this.connection;
    const failures: string[] = [];
    for (let attempt = 0; ; attempt++) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const endpoint = endpoints[this.current % endpoints.length]!;
      // With several members, one attempt gets a share of the budget, so a member that accepted but hangs (a
      // follower waiting for an election, a socket to a member that just died) leaves time for the others.
      const share = endpoints.length > 1 ? Math.max(MIN_ATTEMPT_MS, Math.floor(this.connection.requestTimeoutMs / endpoints.length)) : left;
      try {
        return await this.attempt(endpoint, path, payload, Math.min(left, share), withToken);
      } catch (e) {
        if (!(e instanceof AttemptError)) throw e;
        if (!e.retryable) throw new EtcdRequestError(e.message, e.grpcCode);
        failures.push(`${endpoint}: ${e.message}`);
        this.current = (this.current + 1) % endpoints.length;
        // After every endpoint failed once, pause a little before the next round (members may be electing a leader).
        if ((attempt + 1) % endpoints.length === 0) {
          const pause = Math.min(50 * 2 ** Math.floor(attempt / endpoints.length), 500, Math.max(0, deadline - Date.now()));
          if (pause > 0) await sleep(pause);
        }
      }
    }
    const last = [...new Map(failures.map((f) => [f.slice(0, f.indexOf(": ")), f])).values()];
    throw new EtcdUnavailableError(
      `etcd did not answer within ${this.connection.requestTimeoutMs} ms (requestTimeoutMs)` + (last.length ? `: ${last.join("; ")}` : ""),
      last.length > 0,
    );
  }

  private attempt(endpoint: string, path: string, payload: string, timeoutMs: number, withToken: boolean): Promise<unknown> {
    this.requests++;
    totalRequests++;
    const url = new URL(path, endpoint);
    const secure = url.protocol === "https:";
    const headers: Record<string, string | number> = { "content-type": "application/json", "content-length": Buffer.byteLength(payload) };
    if (withToken && this.token) headers["authorization"] = this.token;
    return new Promise((resolve, reject) => {
      let settled = false;
      const timers: NodeJS.Timeout[] = [];
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        for (const t of timers) clearTimeout(t);
        fn();
      };
      const fail = (message: string, retryable: boolean, grpcCode = 0) => finish(() => reject(new AttemptError(message, retryable, grpcCode)));
      const req = httpModule(secure).request(url, { method: "POST", headers, agent: agentFor(secure, this.connection.tls) }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (e) => fail(`reading the answer: ${e.message}`, true));
        res.on("end", () => {
          noteAnswer(); // a member answered: in the server, calls waiting for a place keep waiting (sys/progress.ts)
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : {};
          } catch {
            return fail(`HTTP ${res.statusCode}: not JSON: ${text.slice(0, 120)}`, (res.statusCode ?? 0) >= 500);
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return finish(() => resolve(json));
          const err = obj(json);
          const grpcCode = num(err["code"]);
          const message = String(err["message"] ?? err["error"] ?? text.slice(0, 120));
          fail(message || `HTTP ${status}`, RETRYABLE_GRPC.has(grpcCode) || (grpcCode === 0 && status >= 500), grpcCode);
        });
      });
      req.on("error", (e: NodeJS.ErrnoException) => {
        const code = e.code ?? "";
        fail(code && !e.message.includes(code) ? `${e.message} (${code})` : e.message, !TLS_ERROR.test(code));
      });
      req.on("socket", (socket) => {
        if (!(socket as { connecting?: boolean }).connecting) return;
        const dial = setTimeout(
          () => {
            req.destroy();
            fail(`no connection within ${this.connection.dialTimeoutMs} ms (dialTimeoutMs)`, true);
          },
          Math.min(this.connection.dialTimeoutMs, timeoutMs),
        );
        timers.push(dial);
        socket.once("connect", () => clearTimeout(dial)); // TCP connect: the TLS handshake counts as the request
      });
      timers.push(
        setTimeout(() => {
          req.destroy();
          fail(`no answer within the request's remaining ${timeoutMs} ms`, true);
        }, timeoutMs),
      );
      req.end(payload);
    });
  }
}
