/**
 * The fenced blocks of a doc that the tests run or check (docs/runtimes.md, docs/resident.md): a block's info
 * string is its language and its id (```` ```toml containerd-config ````); GitHub shows the language and ignores
 * the id. `text output` blocks are examples of output, not commands. src/docs-snippets.test.ts checks that every
 * block has an id that some test uses; the tests take a block by id and, where they must, point its paths at their
 * own directories with `substitute`, which fails when a path is not in the block (so a doc that changes fails the
 * test instead of passing it untested).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./harness.js";

export interface DocBlock {
  lang: string;
  id: string;
  text: string;
}

/** The fenced blocks of `doc` (a path from the repository's root), in order. */
export function docBlocks(doc: string): DocBlock[] {
  const text = readFileSync(path.join(ROOT, doc), "utf8");
  return [...text.matchAll(/^```(\S*)(?:[ \t]+(\S+))?[ \t]*\n([\s\S]*?)^```[ \t]*$/gm)].map((m) => ({
    lang: m[1] ?? "",
    id: m[2] ?? "",
    text: m[3]!,
  }));
}

/** The block of `doc` with this id. */
export function docSnippet(doc: string, id: string): string {
  const found = docBlocks(doc).filter((b) => b.id === id);
  if (found.length !== 1) throw new Error(`${doc}: ${found.length} blocks with the id ${id}, want 1`);
  return found[0]!.text;
}

/** `text` with each `from` replaced by its `to`; every `from` must occur. */
export function substitute(text: string, replacements: Record<string, string>): string {
  let out = text;
  for (const [from, to] of Object.entries(replacements)) {
    if (!out.includes(from)) throw new Error(`the snippet has no "${from}" to replace:\n${text}`);
    out = out.replaceAll(from, to);
  }
  return out;
}

/** The docs whose blocks are run by tests. */
export const TESTED_DOCS = ["README.md", "docs/runtimes.md", "docs/resident.md"] as const;

/** A parsed TOML or YAML document, walked by key. */
export type ParsedDoc = Record<string, any>;

/**
 * Parses a TOML block (Python's tomllib) or a YAML block (python3-yaml; every document, as a list) into JSON;
 * throws with Python's reason when it does not parse.
 */
export function parseSnippet(kind: "toml" | "yaml", text: string): unknown {
  const code =
    kind === "toml"
      ? "import sys, json, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))"
      : "import sys, json, yaml; print(json.dumps(list(yaml.safe_load_all(sys.stdin.read()))))";
  const r = spawnSync("python3", ["-c", code], { input: text, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`python3 could not parse the ${kind} block:\n${r.stderr}`);
  return JSON.parse(r.stdout);
}
