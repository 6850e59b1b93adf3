import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { renderConf } from "./dnsmasq.js";
import {
  baseDir,
  DEFAULT_BASE_DIR,
  networkDir,
  otherNetworkUses,
  readState,
  removeNetworkDir,
  withNetworkLock,
  writeConfIfMissing,
  writeState,
} from "./state.js";

describe("dnsname network directory", () => {
  const tempDir = useTempDirs("tscni-dnsname-");

  test("the base directory is Go's: under an absolute XDG_RUNTIME_DIR, else /run (a relative one is ignored, as XDG says)", () => {
    assert.equal(baseDir({}), DEFAULT_BASE_DIR);
    assert.equal(DEFAULT_BASE_DIR, "/run/containers/cni/dnsname");
    assert.equal(baseDir({ XDG_RUNTIME_DIR: "/run/user/0/" }), "/run/user/0/containers/cni/dnsname");
    assert.equal(baseDir({ XDG_RUNTIME_DIR: "" }), DEFAULT_BASE_DIR);
    assert.equal(baseDir({ XDG_RUNTIME_DIR: "rel/dir" }), DEFAULT_BASE_DIR);
    const d = networkDir("/b", "net1");
    assert.deepEqual(
      [d.dir, d.conf, d.hosts, d.pidFile, d.lock, d.records],
      ["/b/net1", "/b/net1/dnsmasq.conf", "/b/net1/addnhosts", "/b/net1/pidfile", "/b/net1/lock", "/b/net1/tscni-attachments.json"],
    );
  });

  test("the lock: made with the directory (0700) on ADD; with no directory, DEL's and CHECK's do nothing", async () => {
    const d = networkDir(path.join(tempDir(), "a", "b"), "n");
    assert.equal(await withNetworkLock(d, false, async () => "ran"), undefined);
    assert.ok(!existsSync(d.dir));
    assert.equal(await withNetworkLock(d, true, async () => "ran"), "ran");
    assert.equal(statSync(d.dir).mode & 0o777, 0o700);
    assert.equal(statSync(path.dirname(d.dir)).mode & 0o777, 0o700);
    assert.ok(statSync(d.lock).isFile());
  });

  test("another process holding flock on <dir>/lock (as Go's dnsname does) keeps us out until it lets go", async () => {
    const d = networkDir(tempDir(), "n");
    mkdirSync(d.dir, { recursive: true });
    const holder = spawn("flock", [d.lock, "sh", "-c", "echo held; sleep 0.4"], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise((resolve) => holder.once("exit", resolve));
    await new Promise((resolve) => holder.stdout.once("data", resolve));
    const t0 = Date.now();
    await withNetworkLock(d, true, async () => undefined);
    assert.ok(Date.now() - t0 >= 250, `waited ${Date.now() - t0} ms`);
    await exited;
  });

  test("calls of one process run one at a time; a holder that removes the directory lets the next start afresh", async () => {
    const d = networkDir(tempDir(), "n");
    const order: string[] = [];
    const first = withNetworkLock(d, true, async () => {
      order.push("first in");
      await new Promise((resolve) => setTimeout(resolve, 50));
      removeNetworkDir(d);
      order.push("first out");
    });
    const second = withNetworkLock(d, false, async () => order.push("second (no directory: never)"));
    const third = withNetworkLock(d, true, async () => {
      order.push("third in");
      return existsSync(d.lock);
    });
    await first;
    assert.equal(await second, undefined);
    assert.equal(await third, true, "the third locks a new lock file in a new directory");
    assert.deepEqual(order, ["first in", "first out", "third in"]);
  });

  test("hosts file and records: written whole (hosts 0644, records 0600), read back; no records means no records file", () => {
    const d = networkDir(tempDir(), "n");
    mkdirSync(d.dir);
    assert.deepEqual(readState(d), { lines: [], records: [] });
    const rec = { containerID: "c", ifName: "eth0", name: "web", aliases: [], addresses: ["10.0.0.2"] };
    writeState(d, ["10.0.0.2\tweb"], [rec]);
    assert.equal(readFileSync(d.hosts, "utf8"), "10.0.0.2\tweb\n");
    assert.equal(statSync(d.hosts).mode & 0o777, 0o644);
    assert.equal(statSync(d.records).mode & 0o777, 0o600);
    assert.deepEqual(readState(d), { lines: ["10.0.0.2\tweb"], records: [rec] });
    writeState(d, ["10.0.0.3\tdb"], []);
    assert.ok(!existsSync(d.records));
  });

  test("dnsmasq.conf is written once (an existing one is kept, as Go); another network naming the same bridge is found", () => {
    const base = tempDir();
    const a = networkDir(base, "a");
    const b = networkDir(base, "b");
    mkdirSync(a.dir);
    mkdirSync(b.dir);
    assert.ok(writeConfIfMissing(a, renderConf(a, "dns.podman", "br0")));
    assert.ok(!writeConfIfMissing(a, renderConf(a, "other", "br9")));
    assert.match(readState(a).confText!, /interface=br0/);
    assert.ok(!otherNetworkUses(a, "br0"), "its own network does not count");
    writeFileSync(b.conf, renderConf(b, "dns.podman", "br0"));
    assert.ok(otherNetworkUses(a, "br0"));
    assert.ok(!otherNetworkUses(a, "br1"));
  });
});
