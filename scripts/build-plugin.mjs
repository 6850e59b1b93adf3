#!/usr/bin/env node
// tscni-build-plugin: builds a CNI plugin written with tscni (docs/plugin-author.md) into a native program the way
// tscni's own are built (native-build.mjs): its JavaScript compiled by Bun into a standalone program, `<name>-js`,
// and the C launcher `<name>` in front of it, which answers VERSION (every runtime's probe) and the about text
// itself, and execs the program for every other call. `<name>` is the plugin's type, the out file's name.
//
//   tscni-build-plugin <entry.mjs|.mts|.ts|.js> --out <dir>/<name>
//
// Bun is the project's (`npm install --save-dev bun`) or on PATH; without a C compiler the program alone is
// installed as <name>. Both files are replaced atomically (a runtime may be running the old ones).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { BUN_COMPILE_FLAGS, compileLauncher, findCompiler, writeVersionsHeader } from "./native-build.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const usage = "usage: tscni-build-plugin <entry.mjs|.mts|.ts|.js> --out <dir>/<plugin type>";

function fail(message) {
  console.error(`tscni-build-plugin: ${message}`);
  process.exit(1);
}

let parsed;
try {
  parsed = parseArgs({ allowPositionals: true, options: { out: { type: "string", short: "o" }, help: { type: "boolean", short: "h" } } });
} catch (e) {
  fail(`${e.message}\n${usage}`);
}
if (parsed.values.help) {
  console.log(usage);
  process.exit(0);
}
const [entry, ...extra] = parsed.positionals;
if (!entry || extra.length || !parsed.values.out) fail(usage);
if (!existsSync(entry)) fail(`${entry}: no such file`);
const out = path.resolve(parsed.values.out);
const name = path.basename(out);
const programName = `${name}-js`;
const program = path.join(path.dirname(out), programName);
if (!existsSync(path.dirname(out))) fail(`${path.dirname(out)}: no such directory`);

/** Bun: the project's (node_modules/.bin, up from here), tscni's own (a checkout's), or on PATH. */
function findBun() {
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const bun = path.join(dir, "node_modules/.bin/bun");
    if (existsSync(bun)) return bun;
    if (path.dirname(dir) === dir) break;
  }
  const own = path.join(root, "node_modules/.bin/bun");
  if (existsSync(own)) return own;
  return spawnSync("bun", ["--version"]).status === 0 ? "bun" : undefined;
}
const bun = findBun();
if (!bun) fail("needs Bun to compile the plugin: npm install --save-dev bun");

// Built beside its destination, then renamed over it: the directory is the same file system.
const work = mkdtempSync(path.join(path.dirname(out), `.${name}.build-`));
try {
  const built = path.join(work, programName);
  const r = spawnSync(bun, [...BUN_COMPILE_FLAGS, path.resolve(entry), "--outfile", built], { encoding: "utf8" });
  if (r.status !== 0) fail(`bun build failed:\n${r.stderr || r.stdout}`);

  // The program's own answers, which the launcher gives without starting it.
  const ask = (env) => spawnSync(built, [], { input: '{"cniVersion":"1.0.0"}', env: { PATH: process.env.PATH ?? "", ...env }, encoding: "utf8" });
  const version = ask({ CNI_COMMAND: "VERSION" });
  if (version.status !== 0 || !version.stdout.includes('"supportedVersions"')) {
    fail(`${entry} built, but does not answer VERSION (exit ${version.status}):\n${version.stdout}${version.stderr}`);
  }
  const about = ask({}).stderr;

  const cc = findCompiler();
  let launcher;
  if (cc) {
    launcher = path.join(work, name);
    writeVersionsHeader(work, {
      rows: [[name, version.stdout, about]],
      buildId: createHash("sha256").update(readFileSync(built)).digest("hex").slice(0, 16),
      defines: {
        PROGRAM_FILE: programName,
        SERVED: 0,
        PROGRAM_MISSING: `${name}: this plugin is a launcher, and the program it runs is missing: `,
        PROGRAM_MISSING_HINT: `install ${name} and ${programName} together (tscni-build-plugin --out <dir>/${name})`,
      },
      generatedBy: "tscni-build-plugin",
    });
    const answers = () => {
      const a = spawnSync(launcher, [], { argv0: name, env: { CNI_COMMAND: "VERSION" }, encoding: "utf8" });
      return a.status === 0 && a.stdout === version.stdout;
    };
    // (its program must be beside it for it to answer)
    const made = compileLauncher({ cc, root, headerDir: work, out: launcher, arch: process.arch, works: answers });
    if (!made.libc) {
      console.warn(`tscni-build-plugin: the launcher did not build, installing the program alone:\n${made.error}`);
      launcher = undefined;
    }
  } else {
    console.warn("tscni-build-plugin: no C compiler (cc, gcc, clang): installing the program alone, which starts Bun for VERSION too");
  }
  if (launcher) {
    renameSync(built, program);
    renameSync(launcher, out);
    console.log(`built ${out} (launcher) and ${program}`);
  } else {
    renameSync(built, out);
    rmSync(program, { force: true });
    console.log(`built ${out}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
