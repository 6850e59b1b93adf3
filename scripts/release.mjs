// `npm run release [-- --out DIR] [--rebuild] [--also PLATFORM...]`: writes a release into release/ (or DIR):
//  - tscni-<version>.tgz: the main npm package as `npm pack` makes it, declaring the platform package built here as
//    an optional dependency (npm installs it only where its os/cpu/libc match; cnitool install looks for it);
//  - tscni-<platform>-<arch>-<version>.tgz: @tscni/<platform>-<arch>, the native program and its launcher
//    (bin/tscni-js, bin/tscni: the launcher runs the program beside it);
//  - tscni-<version>-<platform>-<arch>.tar.gz: a complete plugin directory (program, launcher, a link per plugin,
//    cnitool), to unpack into /opt/cni/bin;
//  - SHA256SUMS over them.
// Two releases of one commit are byte for byte the same (docs/release.md): the build is (scripts/link-bins.mjs),
// npm pack is, and the plain tarball takes its file times from SOURCE_DATE_EPOCH or else the commit's time, its
// order from the names, its owners and modes fixed, and no time in its gzip header.
// The platform is this machine's: Bun compiles for another architecture only with that architecture's runtime,
// which npm installs only there. `--also linux-arm64` makes the main package declare a platform package of the
// same version built on another machine too (docs/release.md).
// dist/ is packaged as it is when it is current (a native program and launcher of one build, newer than everything
// they are built from); otherwise, or with --rebuild, `npm run build` makes it first.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { gzip } from "node:zlib";

/** Stops the release with what went wrong (no stack: the message says it all). */
function fail(message) {
  console.error(`release: ${message}`);
  process.exit(1);
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");
const { values: args } = parseArgs({ options: { out: { type: "string" }, rebuild: { type: "boolean" }, also: { type: "string", multiple: true } } });
const out = path.resolve(args.out ?? path.join(root, "release"));
for (const p of args.also ?? []) if (!/^[a-z0-9]+-[a-z0-9]+$/.test(p)) fail(`--also ${p}: want a platform such as linux-arm64`);
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

/** The time the plain tarball's files carry: SOURCE_DATE_EPOCH (reproducible-builds.org), else the commit's. */
function sourceDateEpoch() {
  const given = process.env.SOURCE_DATE_EPOCH;
  if (given !== undefined) {
    if (!/^\d+$/.test(given)) fail(`SOURCE_DATE_EPOCH=${given}: want seconds since 1970`);
    return given;
  }
  const r = spawnSync("git", ["-C", root, "log", "-1", "--format=%ct"], { encoding: "utf8" });
  if (r.status !== 0 || !/^\d+\s*$/.test(r.stdout)) fail("no git commit to date the release by: set SOURCE_DATE_EPOCH");
  return r.stdout.trim();
}
const epoch = sourceDateEpoch();
const { version } = pkg;

/** The newest modification time under `file` (a directory's files, recursively), skipping `skip`. */
function newest(file, skip = () => false) {
  if (skip(file)) return 0;
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(file).map((name) => newest(path.join(file, name), skip)));
}

/** Whether dist/ holds a native build made after the last change to its sources (tests are no source of it). */
function buildIsCurrent() {
  const outputs = ["tscni-js", "tscni", "build-id", "cli/main.js"].map((f) => path.join(dist, f));
  if (!outputs.every((f) => existsSync(f))) return false;
  const built = Math.min(...outputs.map((f) => statSync(f).mtimeMs));
  const isTest = (f) => /\.test\.ts$/.test(f) || ["testing", "integration"].includes(path.basename(f));
  const inputs = ["src", "launcher", "scripts/link-bins.mjs", "package.json", "package-lock.json", "tsconfig.base.json", "tsconfig.build.json"];
  return Math.max(...inputs.map((f) => newest(path.join(root, f), isTest))) < built;
}

/**
 * Writes `dir`'s files as a .tar.gz the same for every build of a commit: names sorted, times from the epoch,
 * owner root, and gzip by zlib (no file name or time in the header, as `gzip -n`).
 */
async function plainTarball(dir, file) {
  const tar = await new Promise((resolve, reject) => {
    const child = spawn(
      "tar",
      [
        "--sort=name",
        `--mtime=@${epoch}`,
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "--format=gnu",
        "-cf",
        "-",
        "-C",
        dir,
        ...readdirSync(dir).sort(),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const chunks = [];
    let errors = "";
    child.stdout.on("data", (d) => chunks.push(d));
    child.stderr.on("data", (d) => {
      errors += d;
    });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`tar failed:\n${errors}`))));
  });
  writeFileSync(file, await promisify(gzip)(tar));
}

const run = (cmd, argv, opts = {}) => {
  const r = spawnSync(cmd, argv, { encoding: "utf8", ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(" ")} failed:\n${r.stderr ?? ""}${r.stdout ?? ""}`);
  return r.stdout ?? "";
};
const runAsync = (cmd, argv, opts = {}) =>
  new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"], ...opts });
    let output = "";
    child.stdout.on("data", (d) => {
      output += d;
    });
    child.stderr.on("data", (d) => {
      output += d;
    });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(output) : reject(new Error(`${cmd} ${argv.join(" ")} failed:\n${output}`))));
  });

if (args.rebuild || !buildIsCurrent()) {
  console.log("release: building dist/ (npm run build)");
  if (spawnSync("npm", ["run", "--silent", "build"], { cwd: root, stdio: "inherit" }).status !== 0) fail("npm run build failed");
} else {
  console.log("release: dist/ is current; packaging it");
}

// What is packaged: a native program and launcher of one build, of this version.
const { describeDir } = await import(path.join(dist, "cli/native.js"));
const { PROGRAM_NAMES } = await import(path.join(dist, "plugins/catalog.js"));
const built = describeDir(dist);
const buildId = readFileSync(path.join(dist, "build-id"), "utf8").trim();
if (built.kind !== "native" || !built.launcher) {
  fail("dist/ has no native program and launcher (a release needs Bun, from npm ci, and a C compiler)");
}
if (built.build !== buildId || !built.launcher.sameBuild || built.version !== version) {
  fail(
    `dist/ is inconsistent: program build ${built.build} version ${built.version}, launcher of the same build: ` +
      `${built.launcher.sameBuild}, dist/build-id ${buildId}, package.json version ${version}; run npm run build`,
  );
}
const platform = `${built.platform}-${built.arch}`;
const platformPackage = `@tscni/${platform}`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const stage = mkdtempSync(path.join(os.tmpdir(), "tscni-release-"));
try {
  // The platform package: the program and launcher, for npm to install only where they run.
  const platformDir = path.join(stage, "platform");
  mkdirSync(path.join(platformDir, "bin"), { recursive: true });
  copyFileSync(path.join(dist, "tscni-js"), path.join(platformDir, "bin/tscni-js"));
  copyFileSync(path.join(dist, "tscni"), path.join(platformDir, "bin/tscni"));
  writeFileSync(
    path.join(platformDir, "package.json"),
    JSON.stringify(
      {
        name: platformPackage,
        version,
        description: `tscni's native program for ${platform} (build ${buildId}): installed by the tscni package, copied by \`cnitool install\``,
        license: pkg.license,
        os: [built.platform],
        cpu: [built.arch],
        // Bun's linux program is linked against glibc.
        ...(built.platform === "linux" ? { libc: ["glibc"] } : {}),
        files: ["bin/"],
      },
      null,
      2,
    ) + "\n",
  );
  writeFileSync(
    path.join(platformDir, "README.md"),
    `# ${platformPackage}\n\nThe native program of [tscni](https://www.npmjs.com/package/tscni) ${version} for ${platform}: ` +
      "`bin/tscni-js` (the Bun-compiled program) and `bin/tscni` (its C launcher). Install `tscni`, which depends on it, " +
      "and run `npx cnitool install --bin-dir /opt/cni/bin`.\n",
  );

  // The plugin directory of the plain tarball: the files, and links as `cnitool install` makes them.
  const pluginDir = path.join(stage, "plugins");
  mkdirSync(pluginDir);
  for (const file of ["tscni-js", "tscni"]) {
    copyFileSync(path.join(dist, file), path.join(pluginDir, file));
    chmodSync(path.join(pluginDir, file), 0o755); // not whatever the umask of the build left
  }
  for (const name of PROGRAM_NAMES) symlinkSync("tscni", path.join(pluginDir, name));
  const tarball = `tscni-${version}-${platform}.tar.gz`;

  // The main package: `npm pack` of the checkout, its package.json given the platform package as an optional dependency.
  const mainStage = path.join(stage, "main");
  mkdirSync(mainStage);
  const packed = run("npm", ["pack", "--silent", "--pack-destination", mainStage], { cwd: root }).trim().split("\n").pop();
  run("tar", ["-xzf", path.join(mainStage, packed), "-C", mainStage]);
  const mainDir = path.join(mainStage, "package");
  const mainManifest = JSON.parse(readFileSync(path.join(mainDir, "package.json"), "utf8"));
  const declared = [platform, ...(args.also ?? [])].map((p) => [`@tscni/${p}`, version]);
  mainManifest.optionalDependencies = { ...mainManifest.optionalDependencies, ...Object.fromEntries(declared) };
  writeFileSync(path.join(mainDir, "package.json"), JSON.stringify(mainManifest, null, 2) + "\n");

  // The two large archives are compressed at once (one core each).
  const npmPack = (dir) => runAsync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: dir }).then((o) => o.trim().split("\n").pop());
  const names = await Promise.all([npmPack(mainDir), npmPack(platformDir), plainTarball(pluginDir, path.join(out, tarball)).then(() => tarball)]);

  const sums = await Promise.all(
    [...names].sort().map(
      (name) =>
        new Promise((resolve, reject) => {
          const hash = createHash("sha256");
          createReadStream(path.join(out, name))
            .on("data", (d) => hash.update(d))
            .on("error", reject)
            .on("end", () => resolve(`${hash.digest("hex")}  ${name}\n`));
        }),
    ),
  );
  writeFileSync(path.join(out, "SHA256SUMS"), sums.join(""));
  console.log(`release: tscni ${version}, ${platform}, build ${buildId}, in ${out}:`);
  for (const name of [...names, "SHA256SUMS"]) console.log(`  ${name} (${(statSync(path.join(out, name)).size / 1e6).toFixed(1)} MB)`);
} catch (e) {
  console.error(`release: ${e.message}`);
  process.exitCode = 1;
} finally {
  rmSync(stage, { recursive: true, force: true });
}
