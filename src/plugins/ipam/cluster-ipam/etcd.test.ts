import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import {
  decodeRange,
  decodeTxn,
  ETCD_IN_FLIGHT,
  EtcdClient,
  EtcdRequestError,
  EtcdUnavailableError,
  encode64,
  encodeRange,
  encodeTxn,
  etcdRequestsQueued,
  prefixEnd,
} from "./etcd.js";

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("etcd JSON gateway encoding", () => {
  test("keys and values are base64 of their UTF-8 bytes", () => {
    assert.equal(encode64("/tscni/ipam/ä"), Buffer.from("/tscni/ipam/ä", "utf8").toString("base64"));
  });

  test("prefix ends: the last byte below 0xff incremented, the rest cut", () => {
    assert.deepEqual([...prefixEnd("/a/")], [...Buffer.from("/a0")]);
    assert.deepEqual([...prefixEnd(Uint8Array.of(0x61, 0xff))], [0x62]);
    assert.deepEqual([...prefixEnd(Uint8Array.of(0xff, 0xff))], [0]);
  });

  test("a range request: prefix, explicit end, keys only, count only, limit", () => {
    assert.deepEqual(encodeRange({ key: "/p/", prefix: true, keysOnly: true }), { key: b64("/p/"), range_end: b64("/p0"), keys_only: true });
    assert.deepEqual(encodeRange({ key: "a", end: "b\u0000", countOnly: true, limit: 5 }), {
      key: b64("a"),
      range_end: b64("b\u0000"),
      count_only: true,
      limit: "5",
    });
    assert.deepEqual(encodeRange({ key: "k" }), { key: b64("k") });
  });

  test("a transaction: create-if-absent, value and revision compares; puts, deletes and reads in both branches", () => {
    const body = encodeTxn(
      [
        { key: "ip", createRevision: 0 },
        { key: "blk", value: "v" },
        { key: "m", modRevision: 7, result: "LESS" },
      ],
      [{ put: { key: "ip", value: "{}" } }, { deleteRange: { key: "h/", prefix: true } }],
      [{ range: { key: "ip" } }],
    );
    assert.deepEqual(body, {
      compare: [
        { key: b64("ip"), result: "EQUAL", target: "CREATE", create_revision: "0" },
        { key: b64("blk"), result: "EQUAL", target: "VALUE", value: b64("v") },
        { key: b64("m"), result: "LESS", target: "MOD", mod_revision: "7" },
      ],
      success: [{ request_put: { key: b64("ip"), value: b64("{}") } }, { request_delete_range: { key: b64("h/"), range_end: b64("h0") } }],
      failure: [{ request_range: { key: b64("ip") } }],
    });
    assert.deepEqual(encodeTxn([], [{ range: { key: "a" } }]), { success: [{ request_range: { key: b64("a") } }] });
  });

  test("responses: revisions as numbers, false and empty fields absent as the gateway leaves them out", () => {
    const range = decodeRange({
      header: { revision: "12" },
      count: "1",
      kvs: [{ key: b64("k"), create_revision: "3", mod_revision: "9", version: "2", value: b64("v") }, { key: b64("keyonly") }],
    });
    assert.deepEqual(range, {
      kvs: [
        { key: "k", value: "v", createRevision: 3, modRevision: 9, version: 2 },
        { key: "keyonly", value: "", createRevision: 0, modRevision: 0, version: 0 },
      ],
      count: 1,
      more: false,
      revision: 12,
    });
    assert.deepEqual(decodeRange({ header: { revision: "1" } }), { kvs: [], count: 0, more: false, revision: 1 });
    const failed = decodeTxn({
      header: { revision: "5" },
      responses: [{ response_range: { header: {}, kvs: [{ key: b64("ip"), value: b64("x"), create_revision: "4" }], count: "1" } }],
    });
    assert.equal(failed.succeeded, false);
    assert.equal(failed.responses[0]!.kind, "range");
    const ok = decodeTxn({
      succeeded: true,
      responses: [
        { response_put: { header: {} } },
        { response_delete_range: { header: {}, deleted: "2" } },
        { response_delete_range: { header: {} } },
      ],
    });
    assert.deepEqual(ok.responses, [{ kind: "put" }, { kind: "delete", deleted: 2 }, { kind: "delete", deleted: 0 }]);
  });
});

/** A fake gateway: answers each POST with what `answer` returns (status, body), recording requests. */
async function fakeGateway(answer: (path: string, body: unknown, n: number) => [number, unknown] | "hang" | "reset") {
  const seen: Array<{ path: string; body: unknown; auth: string | undefined }> = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString()));
    req.on("end", () => {
      const body = text ? (JSON.parse(text) as unknown) : undefined;
      seen.push({ path: req.url ?? "", body, auth: req.headers.authorization });
      const a = answer(req.url ?? "", body, seen.length);
      if (a === "hang") return;
      if (a === "reset") return req.socket.destroy();
      res.writeHead(a[0], { "content-type": "application/json" }).end(JSON.stringify(a[1]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const connection = (endpoints: string[], extra = {}) => ({ endpoints, dialTimeoutMs: 500, requestTimeoutMs: 1500, ...extra });

describe("etcd client", () => {
  test("posts the encoded request and decodes the answer", async (t) => {
    const gw = await fakeGateway(() => [200, { header: { revision: "3" }, kvs: [{ key: b64("a"), value: b64("1") }], count: "1" }]);
    t.after(gw.close);
    const client = new EtcdClient(connection([gw.url]));
    const r = await client.range({ key: "a" });
    assert.equal(r.kvs[0]!.value, "1");
    assert.deepEqual(gw.seen[0], { path: "/v3/kv/range", body: { key: b64("a") }, auth: undefined });
    assert.equal(client.requests, 1);
  });

  test("a member that resets or is unavailable (gRPC 14) is left for the next one", async (t) => {
    const bad = await fakeGateway(() => "reset");
    const busy = await fakeGateway(() => [503, { error: "etcdserver: leader changed", message: "etcdserver: leader changed", code: 14 }]);
    const good = await fakeGateway(() => [200, { succeeded: true, responses: [] }]);
    t.after(async () => Promise.all([bad.close(), busy.close(), good.close()]));
    for (let i = 0; i < 4; i++) {
      const r = await new EtcdClient(connection([bad.url, busy.url, good.url])).txn([], [{ put: { key: "k", value: "v" } }]);
      assert.equal(r.succeeded, true);
    }
  });

  test("nothing listening: EtcdUnavailableError within the request timeout, naming every endpoint", async () => {
    const gw = await fakeGateway(() => [200, {}]);
    const url = gw.url;
    await gw.close();
    const t0 = Date.now();
    const err = await new EtcdClient(connection([url, "http://127.0.0.1:9"], { requestTimeoutMs: 400 })).range({ key: "a" }).catch((e: unknown) => e);
    const took = Date.now() - t0;
    assert.ok(err instanceof EtcdUnavailableError, String(err));
    assert.match(err.message, /did not answer within 400 ms \(requestTimeoutMs\)/);
    assert.match(err.message, /ECONNREFUSED/);
    assert.ok(took >= 350 && took < 1200, `took ${took} ms`);
  });

  test("with a call budget, a request that ran out of its deadline is sent again and succeeds", async (t) => {
    const gw = await fakeGateway((_p, _b, n) => (n === 1 ? "hang" : [200, { header: { revision: "2" }, count: "0" }]));
    t.after(gw.close);
    const client = new EtcdClient(connection([gw.url], { requestTimeoutMs: 300, callTimeoutMs: 5000 }));
    const r = await client.range({ key: "a" });
    assert.equal(r.revision, 2);
    assert.equal(client.requests, 2);
  });

  test("with a call budget and nothing listening: it keeps trying until the budget is spent, then says so", async () => {
    const gw = await fakeGateway(() => [200, {}]);
    const url = gw.url;
    await gw.close();
    const t0 = Date.now();
    const client = new EtcdClient(connection([url], { requestTimeoutMs: 200, callTimeoutMs: 1200 }));
    const err = await client.range({ key: "a" }).catch((e: unknown) => e);
    const took = Date.now() - t0;
    assert.ok(err instanceof EtcdUnavailableError, String(err));
    assert.match(
      err.message,
      /^etcd did not answer within 1200 ms \(callTimeoutMs\), in \d+ rounds; the last: etcd did not answer within 200 ms \(requestTimeoutMs\): .*ECONNREFUSED/,
    );
    assert.ok(took >= 1100 && took < 2500, `took ${took} ms`);
    assert.ok(client.requests > 3, `${client.requests} requests`);
  });

  test(`under load at most ${ETCD_IN_FLIGHT} requests are in flight; the rest wait their turn and none fails`, async (t) => {
    let inFlight = 0;
    let most = 0;
    const server = http.createServer((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      req.resume();
      req.on("end", () =>
        setTimeout(() => {
          inFlight--;
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ header: { revision: "1" } }));
        }, 30),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Each request alone would have 200 ms, less than the whole burst takes: the queue must not eat into it.
    const calls = Array.from({ length: ETCD_IN_FLIGHT * 5 }, () =>
      new EtcdClient(connection([url], { requestTimeoutMs: 200, callTimeoutMs: 10_000 })).range({ key: "a" }),
    );
    await new Promise((r) => setImmediate(r));
    assert.ok(etcdRequestsQueued() > 0, "some wait their turn");
    const results = await Promise.allSettled(calls);
    assert.deepEqual(
      results.filter((r) => r.status === "rejected"),
      [],
    );
    assert.ok(most <= ETCD_IN_FLIGHT, `${most} in flight at once`);
    assert.equal(etcdRequestsQueued(), 0);
  });

  test("a member that accepts but never answers: the request times out (code 11 material)", async (t) => {
    const gw = await fakeGateway(() => "hang");
    t.after(gw.close);
    const t0 = Date.now();
    const err = await new EtcdClient(connection([gw.url], { requestTimeoutMs: 300 })).range({ key: "a" }).catch((e: unknown) => e);
    assert.ok(err instanceof EtcdUnavailableError);
    assert.ok(Date.now() - t0 < 1000);
  });

  test("a request etcd refuses (not retryable) fails at once with its message", async (t) => {
    const gw = await fakeGateway(() => [
      400,
      { error: "etcdserver: too many operations in txn request", message: "etcdserver: too many operations in txn request", code: 3 },
    ]);
    t.after(gw.close);
    const err = await new EtcdClient(connection([gw.url])).txn([], []).catch((e: unknown) => e);
    assert.ok(err instanceof EtcdRequestError);
    assert.equal(err.grpcCode, 3);
    assert.equal(gw.seen.length, 1);
  });

  test("with a user: authenticates once, sends the token, and renews it when etcd says it is invalid", async (t) => {
    let tokens = 0;
    const gw = await fakeGateway((path, _body, n) => {
      if (path === "/v3/auth/authenticate") return [200, { header: {}, token: `tok${++tokens}` }];
      if (n === 3) return [401, { error: "etcdserver: invalid auth token", message: "etcdserver: invalid auth token", code: 16 }];
      return [200, { header: {} }];
    });
    t.after(gw.close);
    const client = new EtcdClient(connection([gw.url], { username: "root", password: "pw" }));
    await client.range({ key: "a" });
    await client.range({ key: "b" });
    assert.deepEqual(
      gw.seen.map((s) => [s.path, s.auth]),
      [
        ["/v3/auth/authenticate", undefined],
        ["/v3/kv/range", "tok1"],
        ["/v3/kv/range", "tok1"],
        ["/v3/auth/authenticate", undefined],
        ["/v3/kv/range", "tok2"],
      ],
    );
    assert.deepEqual(gw.seen[0]!.body, { name: "root", password: "pw" });
  });

  test("bad credentials are a request error (not unavailability)", async (t) => {
    const gw = await fakeGateway(() => [
      400,
      {
        error: "etcdserver: authentication failed, invalid user ID or password",
        message: "etcdserver: authentication failed, invalid user ID or password",
        code: 3,
      },
    ]);
    t.after(gw.close);
    const err = await new EtcdClient(connection([gw.url], { username: "root", password: "bad" })).range({ key: "a" }).catch((e: unknown) => e);
    assert.ok(err instanceof EtcdRequestError);
    assert.match(err.message, /authentication as "root" failed: etcdserver: authentication failed/);
    assert.equal(err.auth, true);
  });
});
