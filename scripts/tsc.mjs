// The compiler of the builds (`npm run build`, `npm run build:test`): TypeScript 7 (the devDependency `typescript7`,
// npm's typescript@7, a native program), which emits the same JavaScript as 5.9 here in a fraction of its time
// (CONTRIBUTING.md, "TypeScript 7"); 5.9 where 7's platform package is not installed. What needs a compiler API
// (TypeDoc, scripts/crash-mutants.mjs) uses 5.9's: TypeScript 7.0 has no stable one. The type tests run both.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
let command;
try {
  const { default: getExePath } = await import(path.join(root, "node_modules/typescript7/lib/getExePath.js"));
  command = [getExePath(), args];
} catch (e) {
  console.warn(`scripts/tsc.mjs: TypeScript 7 is not there (${e.message}); compiling with 5.9`);
  command = [process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), ...args]];
}
const r = spawnSync(command[0], command[1], { stdio: "inherit" });
process.exit(r.status ?? 1);
