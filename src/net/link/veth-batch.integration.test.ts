/**
 * net/link/veth-batch.ts in one process (under Bun, as the resident server runs it): the container ends of many veth
 * pairs deleted at once go in a few batches, each call still gets its own link's addresses, and a second DEL finds
 * nothing; a veth whose peer is not in the caller's namespace, and a link that is not a veth, are deleted on their
 * own as before. Namespaces are the test's own (a "host" and its containers).
 */

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { ROOT, runTag, skipReason } from "#testing/harness.js";

const BUN = path.join(ROOT, "node_modules/.bin/bun");
const DRIVER = path.join(ROOT, "dist-test/testing/veth-batch-driver.js");
const skip = skipReason(false, existsSync(BUN) ? undefined : "Bun is not installed (node_modules/.bin/bun)");
const tag = runTag();
const created: string[] = [];
after(() => {
  for (const n of created.reverse()) spawnSync("ip", ["netns", "delete", n]);
});

const ip = (line: string) => execFileSync("ip", line.split(" "));

describe("veth pairs deleted in batches", { skip }, () => {
  test("40 DELs at once: a few batches, each its own addresses, nothing left, the second DEL finds nothing", () => {
    const host = `tscni-vbh-${tag}`;
    const stray = `tscni-vbs-${tag}`;
    const n = 40;
    const ctrs = Array.from({ length: n }, (_, i) => `tscni-vb${i}-${tag}`);
    const lines = [`netns add ${host}`, `netns add ${stray}`, ...ctrs.map((c) => `netns add ${c}`)];
    lines.forEach(ip);
    created.push(host, stray, ...ctrs);
    // 38 veths with their peer in the host; one with its peer in another namespace; and one whose peer is in the
    // container itself.
    ctrs
      .flatMap((c, i) => {
        if (i === n - 2) return [`-n ${stray} link add h${i} type veth peer name eth0 netns ${c}`, `-n ${c} addr add 10.77.${i}.2/24 dev eth0`];
        if (i === n - 1) return [`-n ${c} link add eth0 type veth peer name other0`, `-n ${c} addr add 10.77.${i}.2/24 dev eth0`];
        return [`-n ${host} link add h${i} type veth peer name eth0 netns ${c}`, `-n ${c} addr add 10.77.${i}.2/24 dev eth0`];
      })
      .forEach(ip);
    const r = spawnSync("ip", ["netns", "exec", host, BUN, DRIVER, ...ctrs.map((c) => `/run/netns/${c}`)], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { ms: number; results: unknown[]; again: unknown[]; stats: { batches: number; veths: number } };
    assert.deepEqual(
      out.results,
      ctrs.map((_, i) => [`10.77.${i}.2/24`]),
    );
    assert.deepEqual(
      out.again,
      ctrs.map(() => null),
      "a second DEL finds nothing",
    );
    assert.equal(out.stats.veths, n - 2, "every veth with its peer in the host was batched, the other two were not");
    assert.ok(out.stats.batches < n / 4, `${out.stats.batches} batches for ${out.stats.veths} veths`);
    assert.equal(execFileSync("ip", ["-n", host, "-o", "link", "show", "type", "veth"], { encoding: "utf8" }), "", "no host peer left");
    assert.equal(execFileSync("ip", ["-n", stray, "-o", "link", "show", "type", "veth"], { encoding: "utf8" }), "", "the stray pair went too");
    for (const c of ctrs) assert.doesNotMatch(execFileSync("ip", ["-n", c, "-o", "link"], { encoding: "utf8" }), /eth0/);
    console.log(`${n} DELs at once: ${out.ms.toFixed(0)} ms, ${out.stats.batches} batches`);
  });
});
