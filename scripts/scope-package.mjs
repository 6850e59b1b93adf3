// Writes <out>/package.json for a compiled tree (dist, dist-test): the source imports other folders by alias
// (`#net/link/links.js`, package.json "imports" -> ./src/net/*), and Node and Bun resolve an alias through the nearest
// package.json, which for a compiled module is this one, mapping each alias into the same tree. TypeScript reads
// the root package.json's aliases (the sources), so both builds and the sources agree on one list.
//   node scripts/scope-package.mjs dist
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = process.argv[2];
if (!out) throw new Error("usage: node scripts/scope-package.mjs <compiled tree>");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const imports = Object.fromEntries(
  Object.entries(pkg.imports ?? {}).map(([alias, target]) => {
    if (!target.startsWith("./src/")) throw new Error(`package.json imports ${alias}: ${target} is not under ./src/`);
    return [alias, `./${target.slice("./src/".length)}`];
  }),
);
writeFileSync(path.join(root, out, "package.json"), `${JSON.stringify({ type: "module", private: true, imports }, null, 2)}\n`);
