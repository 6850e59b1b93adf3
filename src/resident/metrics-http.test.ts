import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseListenAddress, serveMetrics } from "./metrics-http.js";

describe("metrics over HTTP", () => {
  test("the address is an IP literal and a port", () => {
    assert.deepEqual(parseListenAddress("127.0.0.1:9464"), { host: "127.0.0.1", port: 9464 });
    assert.deepEqual(parseListenAddress("[::1]:0"), { host: "::1", port: 0 });
    assert.deepEqual(parseListenAddress("0.0.0.0:65535"), { host: "0.0.0.0", port: 65535 });
    for (const bad of ["9464", "localhost:9464", "127.0.0.1", "127.0.0.1:65536", "256.0.0.1:80", "::1:80", "[127.0.0.1]:80", "127.0.0.1:80/x", ""]) {
      assert.throws(() => parseListenAddress(bad), /--metrics-address wants IP:PORT or \[IPv6\]:PORT/, bad);
    }
  });

  test("GET /metrics gives the text; HEAD its headers; other methods 405, other paths 404", async () => {
    let renders = 0;
    const endpoint = await serveMetrics({ host: "127.0.0.1", port: 0 }, () => `x_total ${++renders}\n`);
    try {
      assert.match(endpoint.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const got = await fetch(endpoint.url);
      assert.equal(got.status, 200);
      assert.equal(got.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
      assert.equal(await got.text(), "x_total 1\n");
      assert.equal(await (await fetch(`${endpoint.url}?name[]=x`)).text(), "x_total 2\n", "a query string is ignored");
      const head = await fetch(endpoint.url, { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), "");
      const post = await fetch(endpoint.url, { method: "POST", body: "x" });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get("allow"), "GET, HEAD");
      await post.text();
      const other = await fetch(endpoint.url.replace("/metrics", "/"));
      assert.equal(other.status, 404);
      await other.text();
    } finally {
      await endpoint.close();
    }
    await assert.rejects(fetch(endpoint.url), "closed");
  });

  test("an address that cannot be had is an error", async () => {
    const first = await serveMetrics({ host: "127.0.0.1", port: 0 }, () => "");
    try {
      const port = Number(new URL(first.url).port);
      await assert.rejects(
        serveMetrics({ host: "127.0.0.1", port }, () => ""),
        /EADDRINUSE/,
      );
    } finally {
      await first.close();
    }
  });
});
