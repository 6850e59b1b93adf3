import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { MANIFESTS } from "./manifests.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const FOLDERS = ["main", "ipam", "meta"].flatMap((group) =>
  readdirSync(path.join(HERE, group), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => path.join(group, d.name)),
);

test("every plugin folder has a manifest, listed once, named as its folder", () => {
  assert.deepEqual(MANIFESTS.map((m) => m.name).sort(), FOLDERS.map((f) => path.basename(f)).sort());
  for (const folder of FOLDERS) assert.ok(existsSync(path.join(HERE, folder, "manifest.js")), `${folder}/manifest.ts`);
});

test("a manifest's loaders are its folder's modules: main always, restore, subcommands and cnitool's commands when it has them", async () => {
  for (const m of MANIFESTS) {
    const folder = FOLDERS.find((f) => path.basename(f) === m.name)!;
    assert.equal(m.restorer !== undefined, existsSync(path.join(HERE, folder, "restore.js")), `${m.name}: a restorer iff restore.ts`);
    assert.equal(typeof (await m.load()).plugin.funcs.add, "function", `${m.name} loads its plugin`);
    if (m.restorer) assert.equal(typeof (await m.restorer()).restorer.restore, "function", `${m.name} loads its restorer`);
    for (const [name, load] of Object.entries(m.commands ?? {})) assert.equal(typeof (await load()).main, "function", `${m.name} ${name}`);
    for (const [name, tool] of Object.entries(m.toolCommands ?? {})) assert.equal(typeof (await tool.load()), "function", `cnitool ${name}`);
    assert.ok(m.versions.length > 0, `${m.name} speaks some version`);
  }
});
