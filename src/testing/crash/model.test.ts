import assert from "node:assert/strict";
import { test } from "node:test";
import type { StateOp } from "#sys/state.js";
import { killedAfter, powerLossAfter, powerLossStates, seeded, type Tree, treeKey } from "./model.js";

const show = (t: Tree) =>
  [...t]
    .map(([k, v]) => `${k}=${v === "dir" ? "/" : v.toString()}`)
    .sort()
    .join(" ");
const replace: StateOp[] = [
  { op: "create", path: ".f.tmp", exclusive: true },
  { op: "write", path: ".f.tmp", data: Buffer.from("new!") },
  { op: "rename", from: ".f.tmp", to: "f" },
];
const base: Tree = new Map([["f", Buffer.from("old")]]);

test("a kill after each operation: what the page cache holds", () => {
  assert.deepEqual(
    [0, 1, 2, 3].map((k) => show(killedAfter(base, replace, k))),
    ["f=old", ".f.tmp= f=old", ".f.tmp=new! f=old", "f=new!"],
  );
});

test("a power loss after an atomic replace: the old file, or the new one whole, empty or cut short; maybe the temporary", () => {
  const states = new Set(powerLossAfter(base, replace, 3, 1000, seeded(1)).map(show));
  assert.deepEqual([...states].sort(), [
    ".f.tmp= f=old",
    ".f.tmp=n f=old",
    ".f.tmp=ne f=old",
    ".f.tmp=new f=old",
    ".f.tmp=new! f=old",
    "f=",
    "f=n",
    "f=ne",
    "f=new",
    "f=new!",
    "f=old",
  ]);
});

test("the last operations are enumerated in full, the older ones taken as on disk", () => {
  const two: StateOp[] = [...replace, { op: "create", path: "g", exclusive: true }, { op: "write", path: "g", data: Buffer.from("gg") }];
  const { recent, sampled } = powerLossStates(base, two, 5, 1000, seeded(1), 3);
  // f's replacement is on disk; g is absent, empty, cut (one byte, half, one short) or whole.
  assert.deepEqual([...new Set(recent.map(show))].sort(), ["f=new!", "f=new! g=", "f=new! g=g", "f=new! g=gg"]);
  // Every combination of both calls, beyond.
  assert.ok(new Set(sampled.map(show)).has(".f.tmp=new! f=old g=g"));
});

test("synced data and a synced directory entry stay", () => {
  const durable: StateOp[] = [...replace.slice(0, 2), { op: "fsync", path: ".f.tmp" }, replace[2]!, { op: "fsyncDir", path: "" }];
  const states = new Set(powerLossAfter(base, durable, 5, 1000, seeded(1)).map(show));
  assert.deepEqual([...states], ["f=new!"]);
});

test("too many choices are sampled, seeded: the same states every run", () => {
  const many: StateOp[] = Array.from({ length: 12 }, (_, i) => [
    { op: "create", path: `x${i}`, exclusive: true } as StateOp,
    { op: "write", path: `x${i}`, data: Buffer.from(`data${i}`) } as StateOp,
  ]).flat();
  const a = powerLossAfter(new Map(), many, many.length, 20, seeded(7)).map(treeKey);
  const b = powerLossAfter(new Map(), many, many.length, 20, seeded(7)).map(treeKey);
  assert.equal(a.length, 20);
  assert.deepEqual(a, b);
});
