// `npm run release [-- --out DIR] [--rebuild] [--arch amd64 --arch arm64]`: writes a release into release/ (or DIR),
// for linux/amd64 and linux/arm64 (or the --arch given), from one machine:
//  - tscni-<version>.tgz: the main npm package as `npm pack` makes it, declaring the platform packages as optional
//    dependencies (npm installs the one whose os/cpu/libc match; cnitool install looks for it);
//  - tscni-linux-<x64|arm64>-<version>.tgz: @tscni/linux-<x64|arm64> (npm's architecture words), the native program
//    and its launcher (bin/tscni-js, bin/tscni: the launcher runs the program beside it);
//  - tscni-plugins-linux-<amd64|arm64>-v<version>.tgz: a complete plugin directory (program, launcher, a link per
//    plugin, cnitool), to unpack into /opt/cni/bin, named as the CNI project names its plugin tarballs;
//  - beside each of those, <file>.sha256 (one sha256sum line) and <file>.spdx.json (its SBOM, SPDX 2.3);
//  - SHA256SUMS over the archives and SBOMs.
// Every archive carries LICENSE and a NOTICE of what it embeds (scripts/notices.mjs, from the build's inputs).
// Two releases of one commit are byte for byte the same (docs/release.md): the builds are (scripts/link-bins.mjs),
// npm pack is, and the plain tarball takes its file times from SOURCE_DATE_EPOCH or else the commit's time, its
// order from the names, its owners and modes fixed, and no time in its gzip header.
// This machine's architecture is dist/ as `npm run build` made it; the other is built by
// `scripts/link-bins.mjs --target` (Bun's runtime for it from npm, Debian's cross compiler for the launcher, checked
// under qemu-user; scripts/setup.sh installs them).
// dist/ is packaged as it is when it is current (a native program and launcher of one build, newer than everything
// they are built from); otherwise, or with --rebuild, `npm run build` makes it first.
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
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
import { ARCHES } from "./bun-runtime.mjs";
import { nativeComponents, noticeText, sha256File, spdxDocument } from "./notices.mjs";
import { failer, run, sourceDateEpoch } from "./release-lib.mjs";

const fail = failer("release");

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");
const { values: args } = parseArgs({ options: { out: { type: "string" }, rebuild: { type: "boolean" }, arch: { type: "string", multiple: true } } });
const out = path.resolve(args.out ?? path.join(root, "release"));
const archNames = [...new Set(args.arch ?? ["amd64", "arm64"])];
for (const a of archNames) if (!["amd64", "arm64"].includes(a)) fail(`--arch ${a}: want amd64 or arm64`);
const arches = archNames.map((a) => ARCHES[a]);
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

const epoch = sourceDateEpoch(root, fail, "release");
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
  const outputs = ["tscni-js", "tscni", "build-id", "cli/main.js", "bundle-meta.json", "launcher/libc"].map((f) => path.join(dist, f));
  if (!outputs.every((f) => existsSync(f))) return false;
  const built = Math.min(...outputs.map((f) => statSync(f).mtimeMs));
  const isTest = (f) => /\.test\.ts$/.test(f) || ["testing", "integration"].includes(path.basename(f));
  const inputs = [
    "src",
    "launcher",
    "scripts/link-bins.mjs",
    "scripts/bun-runtime.mjs",
    "scripts/native-build.mjs",
    "scripts/tsc.mjs",
    "package.json",
    "package-lock.json",
    "tsconfig.base.json",
    "tsconfig.build.json",
  ];
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
const { describeDir, elfArch } = await import(path.join(dist, "cnitool/native.js"));
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
if (built.platform !== "linux") fail(`dist/ is built for ${built.platform}: a release is made on Linux`);

/** A file of out/ as a sha256sum line. */
const checksumLine = (name) => `${sha256File(path.join(out, name))}  ${name}\n`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const stage = mkdtempSync(path.join(os.tmpdir(), "tscni-release-"));
try {
  // Each architecture's program and launcher: this machine's from dist/, another's built for it now.
  const natives = arches.map((arch) => {
    let dir = dist;
    if (arch.npm !== process.arch) {
      dir = path.join(stage, `native-${arch.go}`);
      console.log(`release: building linux-${arch.npm} (scripts/link-bins.mjs --target)`);
      const r = spawnSync("node", [path.join(root, "scripts/link-bins.mjs"), "--target", `linux-${arch.npm}`, "--out", dir], {
        cwd: root,
        stdio: ["ignore", "inherit", "inherit"],
      });
      if (r.status !== 0) throw new Error(`the linux-${arch.npm} build failed`);
    }
    for (const file of ["tscni-js", "tscni"]) {
      const f = path.join(dir, file);
      if (elfArch(f) !== arch.npm) throw new Error(`${f} is built for ${elfArch(f)}, not ${arch.npm}`);
      if (!readFileSync(f).includes(buildId)) throw new Error(`${f} is not of build ${buildId}`);
    }
    return { arch, dir, components: nativeComponents(root, dir, arch) };
  });

  const licence = readFileSync(path.join(root, "LICENSE"));
  const archives = []; // [name, SBOM input]
  const jobs = [];
  const npmPack = (dir) => runAsync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: dir }).then((o) => o.trim().split("\n").pop());

  for (const { arch, dir, components } of natives) {
    const platform = `linux-${arch.npm}`; // npm's words: the platform package's name, os and cpu
    const platformPackage = `@tscni/${platform}`;
    // The platform package: the program and launcher, for npm to install only where they run.
    const platformDir = path.join(stage, `platform-${arch.npm}`);
    mkdirSync(path.join(platformDir, "bin"), { recursive: true });
    copyFileSync(path.join(dir, "tscni-js"), path.join(platformDir, "bin/tscni-js"));
    copyFileSync(path.join(dir, "tscni"), path.join(platformDir, "bin/tscni"));
    for (const file of ["tscni-js", "tscni"]) chmodSync(path.join(platformDir, "bin", file), 0o755);
    writeFileSync(path.join(platformDir, "LICENSE"), licence);
    writeFileSync(path.join(platformDir, "NOTICE"), noticeText({ version, artifact: `the npm package ${platformPackage}`, native: components }));
    writeFileSync(
      path.join(platformDir, "package.json"),
      JSON.stringify(
        {
          name: platformPackage,
          version,
          description: `tscni's native program for ${platform} (build ${buildId}): installed by the tscni package, copied by \`cnitool install\``,
          // tscni's Apache-2.0 and what the program embeds (Bun's runtime: MIT, LGPL, BSD, ...): NOTICE has them all.
          license: "SEE LICENSE IN NOTICE",
          os: ["linux"],
          cpu: [arch.npm],
          // Bun's linux program is linked against glibc.
          libc: ["glibc"],
          files: ["bin/", "LICENSE", "NOTICE"],
        },
        null,
        2,
      ) + "\n",
    );
    writeFileSync(
      path.join(platformDir, "README.md"),
      `# ${platformPackage}\n\nThe native program of [tscni](https://www.npmjs.com/package/tscni) ${version} for ${platform}: ` +
        "`bin/tscni-js` (the Bun-compiled program) and `bin/tscni` (its C launcher). Install `tscni`, which depends on it, " +
        "and run `npx cnitool install --bin-dir /opt/cni/bin`. NOTICE lists what the program embeds (the Bun runtime, " +
        "JavaScriptCore among it) and their licences.\n",
    );
    jobs.push(npmPack(platformDir).then((name) => archives.push([name, components])));

    // The plugin directory of the plain tarball: the files, links as `cnitool install` makes them, the licences.
    const pluginDir = path.join(stage, `plugins-${arch.go}`);
    mkdirSync(pluginDir);
    for (const file of ["tscni-js", "tscni"]) {
      copyFileSync(path.join(dir, file), path.join(pluginDir, file));
      chmodSync(path.join(pluginDir, file), 0o755); // not whatever the umask of the build left
    }
    for (const name of PROGRAM_NAMES) symlinkSync("tscni", path.join(pluginDir, name));
    const tarball = `tscni-plugins-linux-${arch.go}-v${version}.tgz`;
    writeFileSync(path.join(pluginDir, "LICENSE"), licence);
    writeFileSync(path.join(pluginDir, "NOTICE"), noticeText({ version, artifact: `the plugin tarball ${tarball}`, native: components }));
    for (const file of ["LICENSE", "NOTICE"]) chmodSync(path.join(pluginDir, file), 0o644);
    jobs.push(plainTarball(pluginDir, path.join(out, tarball)).then(() => archives.push([tarball, components])));
  }

  // The main package: `npm pack` of the checkout (LICENSE among its files), given a NOTICE and the platform packages
  // as optional dependencies.
  const mainStage = path.join(stage, "main");
  mkdirSync(mainStage);
  const packed = run("npm", ["pack", "--silent", "--pack-destination", mainStage], { cwd: root }).trim().split("\n").pop();
  run("tar", ["-xzf", path.join(mainStage, packed), "-C", mainStage]);
  const mainDir = path.join(mainStage, "package");
  const mainManifest = JSON.parse(readFileSync(path.join(mainDir, "package.json"), "utf8"));
  const declared = arches.map((arch) => [`@tscni/linux-${arch.npm}`, version]);
  mainManifest.optionalDependencies = { ...mainManifest.optionalDependencies, ...Object.fromEntries(declared) };
  mainManifest.files = [...mainManifest.files, "NOTICE"];
  writeFileSync(path.join(mainDir, "package.json"), JSON.stringify(mainManifest, null, 2) + "\n");
  const dependencies = { ...mainManifest.dependencies, ...mainManifest.optionalDependencies };
  writeFileSync(path.join(mainDir, "NOTICE"), noticeText({ version, artifact: "the npm package tscni", dependencies }));
  jobs.push(npmPack(mainDir).then((name) => archives.push([name, undefined])));

  // The archives are compressed at once (zlib's threads and npm's processes; a few seconds each).
  await Promise.all(jobs);
  archives.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

  const published = [];
  for (const [name, components] of archives) {
    const sha256 = sha256File(path.join(out, name));
    writeFileSync(path.join(out, `${name}.sha256`), `${sha256}  ${name}\n`);
    const sbom = `${name}.spdx.json`;
    const doc = spdxDocument({ artifact: name, sha256, version, epoch, native: components, dependencies: components ? {} : dependencies });
    writeFileSync(path.join(out, sbom), JSON.stringify(doc, null, 2) + "\n");
    published.push(name, sbom);
  }
  writeFileSync(path.join(out, "SHA256SUMS"), [...published].sort().map(checksumLine).join(""));
  console.log(`release: tscni ${version}, linux ${archNames.join(" ")}, build ${buildId}, in ${out}:`);
  for (const [name] of archives) console.log(`  ${name} (${(statSync(path.join(out, name)).size / 1e6).toFixed(1)} MB), .sha256, .spdx.json`);
  console.log("  SHA256SUMS");
} catch (e) {
  console.error(`release: ${e.message}`);
  process.exitCode = 1;
} finally {
  rmSync(stage, { recursive: true, force: true });
}
