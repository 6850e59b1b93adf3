// Makes dist/bin a CNI plugin directory: one link per program to one multicall executable. That executable is
// the standalone build (dist/tscni, compiled with Bun: no Node start-up per plugin call) when Bun is available,
// else the Node entry point dist/cli/main.js. Test helpers go to dist/test-bin. TSCNI_BUILD=node forces Node.
import { chmodSync, existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const main = path.join(root, "dist/cli/main.js");
const standalone = path.join(root, "dist/tscni");
const bun = path.join(root, "node_modules/.bin/bun");
chmodSync(main, 0o755);
rmSync(standalone, { force: true });

let target = main;
if (process.env.TSCNI_BUILD !== "node" && existsSync(bun)) {
  const r = spawnSync(bun, [
    "build", "--compile", "--minify", "--bytecode",
    // A plugin must not pick up .env or bunfig.toml from whatever directory the runtime runs it in.
    "--no-compile-autoload-dotenv", "--no-compile-autoload-bunfig",
    main, "--outfile", standalone,
  ], { encoding: "utf8" });
  if (r.status === 0) target = standalone;
  else console.warn(`standalone build failed, using the Node entry point:\n${r.stderr || r.stdout}`);
}

const { PROGRAMS } = await import(path.join(root, "dist/cli/registry.js"));
for (const dir of ["bin", "test-bin"]) {
  rmSync(path.join(root, "dist", dir), { recursive: true, force: true });
  mkdirSync(path.join(root, "dist", dir), { recursive: true });
}
for (const [name, entry] of Object.entries(PROGRAMS)) {
  const dir = path.join(root, "dist", entry.test ? "test-bin" : "bin");
  symlinkSync(path.relative(dir, target), path.join(dir, name));
}
console.log(`linked ${Object.keys(PROGRAMS).length} programs to ${path.relative(root, target)} in dist/bin and dist/test-bin`);
