/**
 * What a crash can leave of the files a call writes. A call's file operations are recorded where tscni writes
 * state (sys/state.ts: create, write, fsync, rename, unlink, mkdir, rmdir), over a directory whose earlier contents
 * are on disk for good (the base). From the record, the states a crash leaves:
 * - a process killed after operation k: every operation up to k done, as the page cache holds it (nothing lost);
 * - a power loss after operation k, under POSIX rules: synced data stays; data written and not synced may be lost,
 *   zero-length or partly written; a directory entry made, renamed or removed and not synced (fsync of its
 *   directory) may or may not have reached the disk — any subset of those, applied in order (strict POSIX allows
 *   it; journaling file systems keep an order, a subset of which this covers).
 * Data written and not synced comes out whole or cut at several offsets (empty, one byte, half, one byte short).
 * The states of the last operations before the crash are enumerated exhaustively (the older ones having reached the
 * disk), and the states over every uncertain operation are sampled (seeded, so runs repeat) beyond a limit; the
 * simulator deduplicates them.
 * @module
 */
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { StateOp } from "#sys/state.js";

/** A directory tree: relative path -> a directory, or a file's bytes. */
export type Tree = Map<string, "dir" | Buffer>;

/** Reads the tree under `root`. */
export function readTree(root: string): Tree {
  const tree: Tree = new Map();
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(path.join(root, r));
      if (st.isDirectory()) {
        tree.set(r, "dir");
        walk(r);
      } else if (st.isFile()) {
        tree.set(r, readFileSync(path.join(root, r)));
      }
    }
  };
  walk("");
  return tree;
}

/** Writes `tree` under the empty directory `root`. */
export function writeTree(root: string, tree: Tree): void {
  for (const [rel, v] of [...tree].sort(([a], [b]) => a.split("/").length - b.split("/").length || (a < b ? -1 : 1))) {
    const p = path.join(root, rel);
    if (v === "dir") mkdirSync(p, { recursive: true, mode: 0o755 });
    else {
      mkdirSync(path.dirname(p), { recursive: true, mode: 0o755 });
      writeFileSync(p, v, { mode: 0o600 });
    }
  }
}

/** A fingerprint of a tree (to count distinct states once). */
export function treeKey(tree: Tree): string {
  const h = createHash("sha256");
  for (const [rel, v] of [...tree].sort(([a], [b]) => (a < b ? -1 : 1))) {
    h.update(rel)
      .update("\0")
      .update(v === "dir" ? "/" : v)
      .update("\0");
  }
  return h.digest("hex");
}

/** `op` with its paths relative to `root`; undefined for an operation outside it. */
export function relativeOp(op: StateOp, root: string): StateOp | undefined {
  const rel = (p: string) => {
    const r = path.relative(root, p);
    return r.startsWith("..") || path.isAbsolute(r) ? undefined : r;
  };
  if (op.op === "rename") {
    const from = rel(op.from);
    const to = rel(op.to);
    return from !== undefined && to !== undefined ? { op: "rename", from, to } : undefined;
  }
  const p = rel(op.path);
  return p === undefined ? undefined : { ...op, path: p };
}

const parentOf = (rel: string): string => (rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "");
const parentExists = (tree: Tree, rel: string): boolean => parentOf(rel) === "" || tree.get(parentOf(rel)) === "dir";

/** Applies one operation to `tree` as the page cache sees it (data in full). */
function applyFully(tree: Tree, op: StateOp): void {
  switch (op.op) {
    case "mkdir":
      if (parentExists(tree, op.path) && !tree.has(op.path)) tree.set(op.path, "dir");
      break;
    case "create":
      if (parentExists(tree, op.path)) tree.set(op.path, Buffer.alloc(0));
      break;
    case "write":
      if (tree.has(op.path) && tree.get(op.path) !== "dir") tree.set(op.path, op.data);
      break;
    case "rename": {
      const v = tree.get(op.from);
      if (v === undefined || v === "dir" || !parentExists(tree, op.to)) break;
      tree.delete(op.from);
      tree.set(op.to, v);
      break;
    }
    case "unlink":
      if (tree.get(op.path) !== "dir") tree.delete(op.path);
      break;
    case "rmdir":
      for (const k of [...tree.keys()]) if (k === op.path || k.startsWith(`${op.path}/`)) tree.delete(k);
      break;
    case "fsync":
    case "fsyncDir":
      break;
  }
}

/** The state after a process killed once `ops[0..count)` were done. */
export function killedAfter(base: Tree, ops: readonly StateOp[], count: number): Tree {
  const tree: Tree = new Map(base);
  for (const op of ops.slice(0, count)) applyFully(tree, op);
  return tree;
}

/** A small deterministic random generator (mulberry32), so sampled states repeat from run to run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const isMetadata = (op: StateOp): boolean => op.op === "mkdir" || op.op === "create" || op.op === "rename" || op.op === "unlink" || op.op === "rmdir";

/**
 * How a file's unsynced data came out of a power loss: whole, or cut at one of several offsets (empty, one byte,
 * half — inside a key —, one byte short).
 */
type DataFate = "full" | "empty" | "one" | "half" | "short";
const FATES: readonly DataFate[] = ["full", "empty", "one", "half", "short"];
const cut = (data: Buffer, fate: DataFate): Buffer =>
  fate === "full"
    ? data
    : fate === "empty"
      ? Buffer.alloc(0)
      : fate === "one"
        ? data.subarray(0, Math.min(1, data.length))
        : fate === "half"
          ? data.subarray(0, data.length >> 1)
          : data.subarray(0, Math.max(0, data.length - 1));

/** The combinations of a power loss: how many there are within a window, and each as a tree. */
interface Choices {
  /** Uncertain metadata operations and unsynced writes (indices into the operations done). */
  metadata: number[];
  writes: number[];
  build(keep: ReadonlySet<number>, fates: ReadonlyMap<number, DataFate>, from: number): Tree;
}

function choicesOf(base: Tree, done: readonly StateOp[]): Choices {
  // Metadata operations made durable by a later fsync of their directory (or, for a file's own inode, its fsync).
  const durable = new Set<number>();
  done.forEach((op, i) => {
    if (op.op !== "fsyncDir") return;
    for (let j = 0; j < i; j++) {
      const o = done[j]!;
      const dirs = o.op === "rename" ? [parentOf(o.from), parentOf(o.to)] : isMetadata(o) ? [parentOf((o as { path: string }).path)] : [];
      if (dirs.includes(op.path)) durable.add(j);
    }
  });
  const metadata = done.map((op, i) => (isMetadata(op) && !durable.has(i) ? i : -1)).filter((i) => i >= 0);
  // Files whose last write is not followed by an fsync of the file.
  const synced = new Set<number>();
  done.forEach((op, i) => {
    if (op.op !== "fsync") return;
    for (let j = i - 1; j >= 0; j--) {
      const o = done[j]!;
      if (o.op === "write" && o.path === op.path) {
        synced.add(j);
        break;
      }
    }
  });
  const writes = done.map((op, i) => (op.op === "write" && !synced.has(i) ? i : -1)).filter((i) => i >= 0);
  const uncertain = new Set(metadata);
  // Operations before `from` reached the disk whole (written back long before the power went).
  const build = (keep: ReadonlySet<number>, fates: ReadonlyMap<number, DataFate>, from: number): Tree => {
    const tree: Tree = new Map(base);
    done.forEach((op, i) => {
      if (i >= from && uncertain.has(i) && !keep.has(i)) return;
      if (i >= from && op.op === "write" && fates.has(i)) {
        applyFully(tree, { ...op, data: cut(op.data, fates.get(i)!) });
        return;
      }
      // A rename carries the data it was given; an unsynced write before it is decided above.
      applyFully(tree, op);
    });
    return tree;
  };
  return { metadata, writes, build };
}

/** Every combination of `metadata` kept or not and `writes`' fates (from index `from` on). */
function enumerate(c: Choices, metadata: number[], writes: number[], from: number): Tree[] {
  const out: Tree[] = [];
  for (let m = 0; m < 2 ** metadata.length; m++) {
    const keep = new Set(metadata.filter((_, b) => (m >> b) & 1));
    for (let d = 0; d < FATES.length ** writes.length; d++) {
      const fates = new Map<number, DataFate>();
      let x = d;
      for (const w of writes) {
        fates.set(w, FATES[x % FATES.length]!);
        x = Math.floor(x / FATES.length);
      }
      out.push(c.build(keep, fates, from));
    }
  }
  return out;
}

/** At most this many states of a power loss are enumerated exhaustively at one point. */
export const EXHAUSTIVE_LIMIT = 125;

/**
 * The states a power loss after `ops[0..count)` can leave (see the module comment), in two classes:
 * - `recent`: every combination over the last operations — those from `recentFrom` (the start of the call the
 *   crash cut, or of the last call), as many of them as keep the count under EXHAUSTIVE_LIMIT — the operations
 *   before them having reached the disk (the realistic case: only the last few operations are uncertain);
 * - `sampled`: `limit` states (seeded) over every uncertain operation, or all of them while they are fewer.
 */
export function powerLossStates(
  base: Tree,
  ops: readonly StateOp[],
  count: number,
  limit: number,
  random: () => number,
  recentFrom = 0,
): { recent: Tree[]; sampled: Tree[] } {
  const done = ops.slice(0, count);
  const c = choicesOf(base, done);
  let from = Math.max(0, Math.min(recentFrom, count));
  const size = (f: number) => 2 ** c.metadata.filter((i) => i >= f).length * FATES.length ** c.writes.filter((i) => i >= f).length;
  while (size(from) > EXHAUSTIVE_LIMIT) from++;
  const recent = enumerate(
    c,
    c.metadata.filter((i) => i >= from),
    c.writes.filter((i) => i >= from),
    from,
  );
  if (size(0) <= limit) return { recent, sampled: from === 0 ? [] : enumerate(c, c.metadata, c.writes, 0) };
  const sampled: Tree[] = [];
  for (let n = 0; n < limit; n++) {
    const keep = new Set(c.metadata.filter(() => random() < 0.5));
    const fates = new Map(c.writes.map((w) => [w, FATES[Math.floor(random() * FATES.length)]!] as const));
    sampled.push(c.build(keep, fates, 0));
  }
  return { recent, sampled };
}

/** Every state of a power loss after `ops[0..count)`, at most `limit` of them (sampled beyond). */
export function powerLossAfter(base: Tree, ops: readonly StateOp[], count: number, limit: number, random: () => number): Tree[] {
  const { recent, sampled } = powerLossStates(base, ops, count, limit, random, 0);
  return sampled.length ? sampled : recent.length <= limit ? recent : recent.slice(0, limit);
}
