// Makes dist/bin a CNI plugin directory: one link per program to the multicall entry point
// (test helpers go to dist/test-bin instead).
import { chmodSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const main = path.join(root, "dist/cli/main.js");
chmodSync(main, 0o755);
const { PROGRAMS } = await import(path.join(root, "dist/cli/registry.js"));
for (const dir of ["bin", "test-bin"]) {
  rmSync(path.join(root, "dist", dir), { recursive: true, force: true });
  mkdirSync(path.join(root, "dist", dir), { recursive: true });
}
for (const [name, entry] of Object.entries(PROGRAMS)) {
  const dir = path.join(root, "dist", entry.test ? "test-bin" : "bin");
  symlinkSync(path.relative(dir, main), path.join(dir, name));
}
console.log(`linked ${Object.keys(PROGRAMS).length} programs into dist/bin and dist/test-bin`);
