// Makes dist/bin a CNI plugin directory: one link per program to one multicall executable.
//  - dist/tscni-js: the program, compiled with Bun into a standalone binary (no Node start-up per call);
//  - dist/tscni: a tiny C launcher that answers VERSION itself and hands every other call to tscni-js with
//    argv[0] kept (built when a C compiler is present; otherwise the links point at tscni-js directly).
// Without Bun (or with TSCNI_BUILD=node) the links point at the Node entry dist/cli/main.js.
// (The test plugins are linked by scripts/link-test-bins.mjs into dist-test/bin, outside the shipped program.)
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");
const main = path.join(dist, "cli/main.js");
const program = path.join(dist, "tscni-js");
const launcher = path.join(dist, "tscni");
const bun = path.join(root, "node_modules/.bin/bun");
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
chmodSync(main, 0o755);
rmSync(program, { force: true });
rmSync(launcher, { force: true });
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
writeFileSync(path.join(dist, "build-id"), buildId + "\n");

function buildStandalone() {
  const r = spawnSync(
    bun,
    [
      "build",
      "--compile",
      "--minify",
      "--bytecode",
      // One chunk per plugin (and per shared part), loaded when the call needs it: a call then loads its plugin's
      // code and not the whole program's, which is most of a call's start-up after Bun's own (bench: cold start).
      "--splitting",
      "--format",
      "esm",
      // A plugin must not pick up .env or bunfig.toml from whatever directory the runtime runs it in.
      "--no-compile-autoload-dotenv",
      "--no-compile-autoload-bunfig",
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
    ],
    { encoding: "utf8", cwd: root },
  );
  if (r.status !== 0) console.warn(`standalone build failed, using the Node entry point:\n${r.stderr || r.stdout}`);
  return r.status === 0;
}

// The launcher just built answers VERSION for a plugin name as its table says (a check that the build works here).
function answersVersion() {
  const [name, versions] = Object.entries(PLUGIN_VERSIONS)[0];
  const r = spawnSync(launcher, [], { argv0: name, env: { CNI_COMMAND: "VERSION" }, encoding: "utf8" });
  return r.status === 0 && r.stdout === versionAnswer(versions);
}

function buildLauncher() {
  const cc = ["cc", "gcc", "clang"].find((c) => spawnSync(c, ["--version"]).status === 0);
  if (!cc) return false;
  const rows = Object.entries(PLUGIN_VERSIONS).map(([name, versions]) => {
    return `  {${JSON.stringify(name)}, ${JSON.stringify(versionAnswer(versions))}, ${JSON.stringify(aboutAnswer(name, versions))}},`;
  });
  const headerDir = path.join(dist, "launcher");
  mkdirSync(headerDir, { recursive: true });
  writeFileSync(
    path.join(headerDir, "versions.h"),
    `/* generated by scripts/link-bins.mjs from src/plugins/catalog.ts */\nstatic const struct { const char *name; const char *json; const char *about; } PROGRAM_VERSIONS[] = {\n${rows.join("\n")}\n};\n` +
      `#define BUILD_ID ${JSON.stringify(buildId)}\n`,
  );
  // First without a C library (launcher/sys-nolibc.h says why: glibc's start-up is most of an exec here), then
  // against libc, statically linked where it allows (no dynamic loader per call), else dynamically.
  const source = path.join(root, "launcher/launcher.c");
  const compile = (extra) => spawnSync(cc, ["-O2", "-Wall", ...extra, "-o", launcher, source, "-I", headerDir], { encoding: "utf8" });
  const attempts = [
    ...(["x64", "arm64"].includes(process.arch)
      ? [
          [
            "-DTSCNI_NOLIBC",
            "-static",
            "-nostdlib",
            "-fno-pie",
            "-no-pie",
            "-ffreestanding",
            "-fno-stack-protector",
            "-fno-tree-loop-distribute-patterns",
            "-fno-asynchronous-unwind-tables",
          ],
        ]
      : []),
    ["-static"],
    [],
  ];
  let r;
  for (const flags of attempts) {
    r = compile(flags);
    if (r.status === 0 && answersVersion()) break;
    if (r.status === 0) r = { status: 1, stderr: `${launcher} built with ${flags.join(" ")} does not answer VERSION` };
  }
  if (r.status !== 0) console.warn(`launcher build failed, linking to the program directly:\n${r.stderr}`);
  return r.status === 0;
}

let target = main;
if (process.env.TSCNI_BUILD !== "node" && existsSync(bun) && buildStandalone()) {
  target = buildLauncher() ? launcher : program;
}

const bin = path.join(dist, "bin");
rmSync(bin, { recursive: true, force: true });
rmSync(path.join(dist, "test-bin"), { recursive: true, force: true }); // from builds before the test plugins moved out
mkdirSync(bin, { recursive: true });
for (const name of PROGRAM_NAMES) symlinkSync(path.relative(bin, target), path.join(bin, name));
console.log(`linked ${PROGRAM_NAMES.length} programs to ${path.relative(root, target)} in dist/bin`);
