/**
 * The server's metrics over HTTP, for a Prometheus scraper: `GET /metrics` (and HEAD) on a TCP address an operator
 * names (`cnitool daemon --metrics-address`; never by default), answered from memory; every other path is 404 and
 * every other method 405. Bounded: few connections, short timeouts, no request body read.
 * @module
 */
import http from "node:http";
import { EXPOSITION_CONTENT_TYPE } from "./metrics.js";

/** A TCP address to listen on: an IP literal and a port. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** A running endpoint. */
export interface MetricsEndpoint {
  /** Where it listens, as `http://host:port/metrics` (the real port when 0 was asked). */
  url: string;
  close(): Promise<void>;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * `host:port` (IPv4) or `[host]:port` (IPv6), the host an IP literal (no name is looked up), the port 0 to 65535
 * (0: any free one). Throws an error naming the flag's value otherwise.
 */
export function parseListenAddress(text: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  const host = m?.[1] ?? m?.[2] ?? "";
  const valid = m !== null && port <= 65535 && (m[1] !== undefined ? host.includes(":") : IPV4.test(host));
  if (!valid) throw new Error(`--metrics-address wants IP:PORT or [IPv6]:PORT, not ${JSON.stringify(text)}`);
  return { host, port };
}

/** Listens on `address` and answers GET /metrics with `render()`. */
export async function serveMetrics(address: ListenAddress, render: () => string): Promise<MetricsEndpoint> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/metrics") {
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("only /metrics is served here\n");
    } else if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain; charset=utf-8" }).end("GET or HEAD only\n");
    } else {
      const body = Buffer.from(render());
      res.writeHead(200, { "Content-Type": EXPOSITION_CONTENT_TYPE, "Content-Length": body.length, "Cache-Control": "no-store" });
      res.end(req.method === "GET" ? body : undefined);
    }
  });
  server.maxConnections = 16;
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: address.host, port: address.port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // Past listening, an error (a failed accept) leaves the endpoint as it is rather than the server's process.
  server.on("error", () => undefined);
  const bound = server.address();
  const port = bound && typeof bound === "object" ? bound.port : address.port;
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}
