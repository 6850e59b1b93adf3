/**
 * A test helper run under Bun (`bun dist-test/testing/veth-batch-driver.js NETNS_PATH...`) inside a test's "host"
 * namespace: deletes eth0 in every given container namespace at once with deleteLinkWithAddresses, and prints as
 * JSON what each call gave, how long they all took, and what net/link/veth-batch.ts batched
 * (src/net/link/veth-batch.integration.test.ts).
 * @module
 */
import { deleteLinkWithAddresses } from "#net/link/link-addresses.js";
import { vethBatchStats } from "#net/link/veth-batch.js";
import { NetNS } from "#net/netns.js";

const paths = process.argv.slice(2);
const namespaces = await Promise.all(paths.map((p) => NetNS.open(p)));
const t0 = performance.now();
const results = await Promise.all(
  namespaces.map((ns) =>
    deleteLinkWithAddresses(ns, "eth0").then(
      (a) => a ?? null,
      (e: Error) => `error: ${e.message}`,
    ),
  ),
);
const ms = performance.now() - t0;
const again = await Promise.all(
  namespaces.map((ns) =>
    deleteLinkWithAddresses(ns, "eth0").then(
      (a) => a ?? null,
      (e: Error) => `error: ${e.message}`,
    ),
  ),
);
console.log(JSON.stringify({ ms, results, again, stats: vethBatchStats }));
