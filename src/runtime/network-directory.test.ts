/**
 * The watched config directory: files created, rewritten, half-written, deleted and renamed into place take
 * effect without a restart; the directory deleted and recreated is survived; an invalid file is reported and
 * ignored until it is valid.
 */

import assert from "node:assert/strict";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { useTempDirs } from "#testing/temp.js";
import { NetworkDirectory } from "./network-directory.js";

const tempDir = useTempDirs("tscni-netdir-");
const conflist = (name: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ cniVersion: "1.0.0", name, plugins: [{ type: "bridge", ...extra }] });

/** Waits until `probe` holds (the watcher's debounce and fs events take a moment). */
async function eventually(probe: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await sleep(20);
  }
}

describe("NetworkDirectory", () => {
  const open: NetworkDirectory[] = [];
  afterEach(() => open.splice(0).forEach((d) => d.close()));
  const watchDir = async (dir: string) => {
    const d = new NetworkDirectory(dir, { debounceMs: 20 });
    open.push(d);
    await d.start();
    return d;
  };
  const names = (d: NetworkDirectory) => d.snapshot.networks.map((n) => n.list.name);

  test("loads in file-name order; a file created later is picked up", async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, "20-b.conflist"), conflist("b"));
    writeFileSync(path.join(dir, "10-a.conflist"), conflist("a"));
    const d = await watchDir(dir);
    assert.deepEqual(names(d), ["a", "b"]);
    writeFileSync(path.join(dir, "05-c.conf"), JSON.stringify({ cniVersion: "1.0.0", name: "c", type: "bridge" }));
    await eventually(() => names(d).join() === "c,a,b", "the new file");
  });

  test("a rewrite changes the network; a half-written file is reported, then loads once complete", async () => {
    const dir = tempDir();
    const file = path.join(dir, "10-a.conflist");
    writeFileSync(file, conflist("a", { bridge: "br1" }));
    const d = await watchDir(dir);
    writeFileSync(file, conflist("a", { bridge: "br2" }).slice(0, 30));
    await eventually(() => d.snapshot.errors.length === 1, "the partial file reported");
    assert.equal(d.snapshot.errors[0]!.file, file);
    assert.match(d.snapshot.errors[0]!.error.message, /unexpected end of JSON input/);
    assert.deepEqual(names(d), [], "an invalid file is ignored, not fatal");
    writeFileSync(file, conflist("a", { bridge: "br2" }));
    await eventually(() => d.network("a")?.plugins[0]?.raw["bridge"] === "br2", "the completed file");
    assert.deepEqual(d.snapshot.errors, []);
  });

  test("a file written elsewhere and renamed into place (ansible-style) is picked up; a deleted one is dropped", async () => {
    const dir = tempDir();
    const d = await watchDir(dir);
    const tmp = path.join(dir, ".tmp-write");
    writeFileSync(tmp, conflist("renamed"));
    renameSync(tmp, path.join(dir, "30-renamed.conflist"));
    await eventually(() => names(d).includes("renamed"), "the renamed file");
    rmSync(path.join(dir, "30-renamed.conflist"));
    await eventually(() => names(d).length === 0, "the deleted file gone");
  });

  test("the directory deleted and recreated is survived", async () => {
    const base = tempDir();
    const dir = path.join(base, "net.d");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "10-a.conflist"), conflist("a"));
    const d = await watchDir(dir);
    assert.deepEqual(names(d), ["a"]);
    rmSync(dir, { recursive: true });
    await eventually(() => !d.snapshot.exists, "the directory gone");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "10-b.conflist"), conflist("b"));
    await eventually(() => names(d).join() === "b", "the recreated directory's network");
    writeFileSync(path.join(dir, "20-c.conflist"), conflist("c"));
    await eventually(() => names(d).join() === "b,c", "a file in the recreated directory");
  });

  test("a directory that does not exist yet is watched for", async () => {
    const base = tempDir();
    const dir = path.join(base, "later");
    const d = await watchDir(dir);
    assert.equal(d.snapshot.exists, false);
    mkdirSync(dir);
    writeFileSync(path.join(dir, "10-a.conflist"), conflist("a"));
    await eventually(() => names(d).join() === "a", "the network in the new directory");
  });

  test("reading the snapshot never touches the disk", async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, "10-a.conflist"), conflist("a"));
    const d = await watchDir(dir);
    const loads = d.loadCount;
    for (let i = 0; i < 100; i++) d.snapshot, d.network("a");
    assert.equal(d.loadCount, loads);
  });
});
