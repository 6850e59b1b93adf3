// Makes dist/bin a CNI plugin directory: one link per program to one multicall executable.
//  - dist/tscni-js: the program, compiled with Bun into a standalone binary (no Node start-up per call);
//  - dist/tscni: a tiny C launcher that answers VERSION itself and hands every other call to tscni-js with
//    argv[0] kept (built when a C compiler is present; otherwise the links point at tscni-js directly).
// Without Bun (or with TSCNI_BUILD=node) the links point at the Node entry dist/cli/main.js.
// `node scripts/link-bins.mjs --target linux-arm64 --out DIR` (the release, after `npm run build`) builds the same
// program and launcher for another architecture into DIR instead, and leaves dist/ alone (bun-runtime.mjs says
// where that architecture's Bun comes from). Each build also writes what went into it: Bun's metafile (the bundle's
// inputs, whose packages scripts/notices.mjs credits) and how the launcher was linked.
// (The test plugins are linked by scripts/link-test-bins.mjs into dist-test/bin, outside the shipped program.)

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ARCHES, bunRuntime } from "./bun-runtime.mjs";
import { BUN_COMPILE_FLAGS, compileLauncher, findCompiler, writeVersionsHeader } from "./native-build.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");
const main = path.join(dist, "cli/main.js");
const bun = path.join(root, "node_modules/.bin/bun");
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const { values: args } = parseArgs({ options: { target: { type: "string" }, out: { type: "string" } } });
const target = args.target ? ARCHES[args.target.replace(/^linux-/, "")] : undefined;
if (args.target && (!target || !args.target.startsWith("linux-"))) {
  console.error(`link-bins: --target ${args.target}: want linux-x64 or linux-arm64`);
  process.exit(1);
}
if (target && !args.out) {
  console.error("link-bins: --target needs --out DIR");
  process.exit(1);
}
/** Where this build's program, launcher and build records go: dist/, or --out for another architecture. */
const outDir = target ? path.resolve(args.out) : dist;
const program = path.join(outDir, "tscni-js");
const launcher = path.join(outDir, "tscni");
if (!target) chmodSync(main, 0o755);
mkdirSync(outDir, { recursive: true });
rmSync(program, { force: true });
rmSync(launcher, { force: true });
// (and the records of what they were made of, which a Node build does not have)
rmSync(path.join(outDir, "bundle-meta.json"), { force: true });
rmSync(path.join(outDir, "launcher/libc"), { force: true });
const { PLUGIN_VERSIONS, PROGRAM_NAMES } = await import(path.join(dist, "plugins/catalog.js"));
const { aboutAnswer, versionAnswer } = await import(path.join(dist, "plugins/registry.js"));

// The build ID ties the launcher to the program it was built with: a resident server of another build is not used.
// It is a hash of what the build is made of (the compiled JavaScript, the launcher's sources, the version, Bun's
// version), not a random number, so two builds of one commit are byte for byte the same (docs/release.md).
function contentId() {
  const hash = createHash("sha256");
  const add = (name, data) => hash.update(`${name}\0${data.length}\0`).update(data);
  const walk = (dir, rel = "") =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .forEach((e) => {
        const name = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) walk(path.join(dir, e.name), name);
        else if (e.isFile() && e.name.endsWith(".js")) add(`dist/${name}`, readFileSync(path.join(dir, e.name)));
      });
  walk(dist);
  for (const file of readdirSync(path.join(root, "launcher")).sort()) add(`launcher/${file}`, readFileSync(path.join(root, "launcher", file)));
  const bunPackage = path.join(root, "node_modules/bun/package.json");
  add("version", version);
  add("bun", existsSync(bunPackage) ? JSON.parse(readFileSync(bunPackage, "utf8")).version : "");
  return hash.digest("hex").slice(0, 16);
}
const buildId = contentId();
if (target) {
  // Another architecture's program of the build dist/ holds: the same compiled JavaScript, so the same build ID.
  const made = readFileSync(path.join(dist, "build-id"), "utf8").trim();
  if (made !== buildId) {
    console.error(`link-bins: dist/ changed since npm run build (build ${made}, now ${buildId}); run npm run build`);
    process.exit(1);
  }
} else {
  writeFileSync(path.join(dist, "build-id"), buildId + "\n");
}

function buildStandalone() {
  // Another architecture's Bun runtime, from npm (bun-runtime.mjs): given to Bun, which would otherwise download it.
  const cross =
    target && target.npm !== process.arch ? ["--target", `bun-linux-${target.bun}`, "--compile-executable-path", bunRuntime(target, root)] : [];
  const r = spawnSync(
    bun,
    [
      ...BUN_COMPILE_FLAGS,
      ...cross,
      // Compiled in, so a copy of the program (cnitool install) still knows its build and version.
      "--define",
      `TSCNI_BUILD_ID=${JSON.stringify(buildId)}`,
      "--define",
      `TSCNI_VERSION=${JSON.stringify(version)}`,
      // Paths relative to the checkout: Bun hashes the entry's path into a chunk's name, and a build must not
      // depend on the directory it is made in.
      path.relative(root, main),
      "--outfile",
      path.relative(root, program),
      // The bundle's inputs, among them the npm packages compiled in: what the release's notices must credit.
      `--metafile=${path.relative(root, path.join(outDir, "bundle-meta.json"))}`,
    ],
    { encoding: "utf8", cwd: root },
  );
  if (r.status !== 0 && target) {
    console.error(`link-bins: the ${args.target} build failed:\n${r.stderr || r.stdout}`);
    process.exit(1);
  }
  if (r.status !== 0) console.warn(`standalone build failed, using the Node entry point:\n${r.stderr || r.stdout}`);
  return r.status === 0;
}

/**
 * How to run a program of the target architecture here: directly (this machine's, or binfmt_misc hands it to
 * qemu-user), else through qemu-user by name, else not at all.
 */
function emulation() {
  if (!target) return [];
  const registered = `/proc/sys/fs/binfmt_misc/qemu-${target.qemu}`;
  if (existsSync(registered) && readFileSync(registered, "utf8").startsWith("enabled")) return [];
  const qemu = [`qemu-${target.qemu}-static`, `qemu-${target.qemu}`].find((q) => spawnSync(q, ["--version"]).status === 0);
  return qemu ? [qemu] : undefined;
}

// The launcher just built answers VERSION for a plugin name as its table says (a check that the build works here).
function answersVersion() {
  const [name, versions] = Object.entries(PLUGIN_VERSIONS)[0];
  const runner = emulation();
  if (!runner) {
    console.error(`link-bins: cannot run an ${args.target} launcher here to check it: install qemu-user-static (scripts/setup.sh)`);
    process.exit(1);
  }
  const [cmd, argv, argv0] = runner.length ? [runner[0], ["-0", name, launcher], runner[0]] : [launcher, [], name];
  const r = spawnSync(cmd, argv, { argv0, env: { CNI_COMMAND: "VERSION" }, encoding: "utf8" });
  return r.status === 0 && r.stdout === versionAnswer(versions);
}

function buildLauncher() {
  // Another architecture's launcher: Debian's cross compiler (gcc-aarch64-linux-gnu, with the kernel's headers
  // from linux-libc-dev-arm64-cross), and only the no-libc build, which needs no C library for that architecture.
  const compilers = target ? [`${target.gnu}-linux-gnu-gcc`] : undefined;
  const cc = findCompiler(compilers);
  if (!cc && target) {
    console.error(`link-bins: no ${compilers[0]} for the ${args.target} launcher: install gcc-${target.gnu}-linux-gnu (scripts/setup.sh)`);
    process.exit(1);
  }
  if (!cc) return false;
  const headerDir = path.join(outDir, "launcher");
  mkdirSync(headerDir, { recursive: true });
  writeVersionsHeader(headerDir, {
    rows: Object.entries(PLUGIN_VERSIONS).map(([name, versions]) => [name, versionAnswer(versions), aboutAnswer(name, versions)]),
    buildId,
    generatedBy: "scripts/link-bins.mjs from src/plugins/catalog.ts",
  });
  const built = compileLauncher({
    cc,
    root,
    headerDir,
    out: launcher,
    arch: target ? target.npm : process.arch,
    cross: !!target,
    works: answersVersion,
  });
  // What the launcher carries besides our code: nothing, glibc compiled in (-static), or glibc linked to.
  if (built.libc) writeFileSync(path.join(headerDir, "libc"), built.libc + "\n");
  else if (target) {
    console.error(`link-bins: the ${args.target} launcher build failed:\n${built.error}`);
    process.exit(1);
  } else console.warn(`launcher build failed, linking to the program directly:\n${built.error}`);
  return !!built.libc;
}

if (target) {
  if (!existsSync(bun)) {
    console.error("link-bins: no Bun in node_modules (npm ci)");
    process.exit(1);
  }
  buildStandalone();
  buildLauncher();
  console.log(`built ${path.relative(root, program)} and ${path.relative(root, launcher)} for ${args.target}, build ${buildId}`);
  process.exit(0);
}

let linkTarget = main;
if (process.env.TSCNI_BUILD !== "node" && existsSync(bun) && buildStandalone()) {
  linkTarget = buildLauncher() ? launcher : program;
}

const bin = path.join(dist, "bin");
rmSync(bin, { recursive: true, force: true });
rmSync(path.join(dist, "test-bin"), { recursive: true, force: true }); // from builds before the test plugins moved out
mkdirSync(bin, { recursive: true });
for (const name of PROGRAM_NAMES) symlinkSync(path.relative(bin, linkTarget), path.join(bin, name));
console.log(`linked ${PROGRAM_NAMES.length} programs to ${path.relative(root, linkTarget)} in dist/bin`);
