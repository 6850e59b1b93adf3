/**
 * An etcd v3 JSON gateway in memory, for tests that need etcd's answers without an etcd: `POST /v3/kv/range` and
 * `/v3/kv/txn` (comparisons on CREATE, MOD, VERSION and VALUE; range, put and delete-range operations), with
 * revisions as etcd counts them (one per transaction that writes). Its state can be saved and put back, so a test
 * can give a call the store as it was at any moment (the crash simulator's cluster-ipam store does).
 * @module
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

interface Entry {
  value: Buffer;
  create: number;
  mod: number;
  version: number;
}

/** A saved state (see FakeEtcd.save). */
export interface FakeEtcdState {
  revision: number;
  entries: Array<[string, Entry]>;
}

const b64 = (v: unknown): Buffer => Buffer.from(typeof v === "string" ? v : "", "base64");
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
/** Keys are compared as etcd compares them: bytes. Stored as latin1 strings, which keep every byte and its order. */
const keyOf = (v: unknown): string => b64(v).toString("latin1");

export class FakeEtcd {
  private data = new Map<string, Entry>();
  private revision = 1;
  private server: Server | undefined;
  /** `http://127.0.0.1:<port>` once started. */
  endpoint = "";
  /** Called after each transaction that writes, before its answer is sent (the crash simulator kills a call there). */
  onWrite: (() => void) | undefined;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        let status = 200;
        let body: unknown;
        try {
          const input = obj(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}"));
          if (req.url === "/v3/kv/range") body = this.range(input);
          else if (req.url === "/v3/kv/txn") body = this.txn(input);
          else [status, body] = [404, { error: "not found", code: 5 }];
        } catch (e) {
          [status, body] = [400, { error: String(e), code: 3 }];
        }
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.server.unref();
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The whole state, to put back later (restore). */
  save(): FakeEtcdState {
    return { revision: this.revision, entries: [...this.data].map(([k, e]) => [k, { ...e }]) };
  }

  restore(state: FakeEtcdState): void {
    this.revision = state.revision;
    this.data = new Map(state.entries.map(([k, e]) => [k, { ...e }]));
  }

  /** Every key starting with `prefix`, with its value as text. */
  entries(prefix: string): Array<[string, string]> {
    return [...this.data]
      .filter(([k]) => k.startsWith(prefix))
      .map(([k, e]) => [Buffer.from(k, "latin1").toString("utf8"), e.value.toString("utf8")]);
  }

  /** The keys of a range request, in byte order. */
  private keysOf(r: Record<string, unknown>): string[] {
    const key = keyOf(r["key"]);
    if (r["range_end"] === undefined) return this.data.has(key) ? [key] : [];
    const end = keyOf(r["range_end"]);
    return [...this.data.keys()].filter((k) => k >= key && (end === "\0" || k < end)).sort();
  }

  private range(r: Record<string, unknown>): Record<string, unknown> {
    const keys = this.keysOf(r);
    const limit = Number(r["limit"] ?? 0);
    const shown = limit > 0 ? keys.slice(0, limit) : keys;
    const out: Record<string, unknown> = { header: { revision: String(this.revision) }, count: String(keys.length) };
    if (limit > 0 && keys.length > limit) out["more"] = true;
    if (r["count_only"] !== true && shown.length > 0) {
      out["kvs"] = shown.map((k) => {
        const e = this.data.get(k)!;
        return {
          key: Buffer.from(k, "latin1").toString("base64"),
          create_revision: String(e.create),
          mod_revision: String(e.mod),
          version: String(e.version),
          ...(r["keys_only"] === true ? {} : { value: e.value.toString("base64") }),
        };
      });
    }
    return out;
  }

  private holds(c: Record<string, unknown>): boolean {
    const e = this.data.get(keyOf(c["key"]));
    const target = c["target"] ?? "VERSION";
    let cmp: number;
    if (target === "VALUE") {
      if (!e) return false;
      cmp = Buffer.compare(e.value, b64(c["value"]));
    } else {
      const [mine, theirs] =
        target === "CREATE"
          ? [e?.create ?? 0, c["create_revision"]]
          : target === "MOD"
            ? [e?.mod ?? 0, c["mod_revision"]]
            : [e?.version ?? 0, c["version"]];
      cmp = Math.sign(mine - Number(theirs ?? 0));
    }
    const result = c["result"] ?? "EQUAL";
    return result === "EQUAL" ? cmp === 0 : result === "NOT_EQUAL" ? cmp !== 0 : result === "GREATER" ? cmp > 0 : cmp < 0;
  }

  private txn(t: Record<string, unknown>): Record<string, unknown> {
    const compare = Array.isArray(t["compare"]) ? t["compare"] : [];
    const succeeded = compare.every((c) => this.holds(obj(c)));
    const ops = (Array.isArray(t[succeeded ? "success" : "failure"]) ? (t[succeeded ? "success" : "failure"] as unknown[]) : []).map(obj);
    const writes = ops.some((op) => op["request_put"] !== undefined || op["request_delete_range"] !== undefined);
    const rev = writes ? this.revision + 1 : this.revision;
    const responses = ops.map((op) => {
      if (op["request_range"] !== undefined) return { response_range: this.range(obj(op["request_range"])) };
      if (op["request_put"] !== undefined) {
        const p = obj(op["request_put"]);
        const key = keyOf(p["key"]);
        const was = this.data.get(key);
        this.data.set(key, { value: b64(p["value"]), create: was?.create ?? rev, mod: rev, version: (was?.version ?? 0) + 1 });
        return { response_put: { header: { revision: String(rev) } } };
      }
      const keys = this.keysOf(obj(op["request_delete_range"]));
      for (const k of keys) this.data.delete(k);
      return { response_delete_range: { deleted: String(keys.length) } };
    });
    this.revision = rev;
    if (writes) this.onWrite?.();
    return { header: { revision: String(this.revision) }, succeeded, responses };
  }
}
