// `npm run release:image [-- --release DIR] [--out DIR] [--sysroot ARCH=DIR...]`: after `npm run release`, builds
// the installer image from the release's plugin tarball(s), offline, with buildah, and writes into release/ (or DIR):
//  - tscni-installer-<version>.oci.tar: an OCI archive (an OCI image layout, tarred) whose index names
//    `tscni/installer:<version>`, an image index with one image per plugin tarball (amd64, and arm64 when that
//    tarball is there);
//  - tscni-installer-<version>.oci.tar.sha256: its `sha256sum` line.
// Each image is FROM scratch: the release's plugin directory at /tscni/bin (the tarball as it is), and the few
// glibc files the native program is linked against (its ELF NEEDED entries and interpreter, read with readelf and
// copied from the sysroot: / for this machine's architecture, `--sysroot arm64=DIR` for another's, e.g. a
// `dpkg-deb -x libc6_*_arm64.deb DIR`). The launcher is static. Its entrypoint is `cnitool install`, its default
// arguments `--bin-dir /host/opt/cni/bin`: the DaemonSet of docs/runtimes.md mounts the node's /opt/cni/bin there.
// Reproducible: the image's files and config are dated SOURCE_DATE_EPOCH (else the commit's time), and the archive
// is tarred with sorted names, that time, and owner root; two runs over the same tarballs give the same bytes.
// The plugin tarballs are found by name, as the release names them today (tscni-<version>-linux-<x64|arm64>.tar.gz)
// and as it will (tscni-plugins-linux-<amd64|arm64>-v<version>.tgz); a SHA256SUMS or <tarball>.sha256 beside one
// is checked first.
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { sha256File } from "./notices.mjs";
import { failer, run, sourceDateEpoch } from "./release-lib.mjs";

const fail = failer("image");

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({
  options: { release: { type: "string" }, out: { type: "string" }, sysroot: { type: "string", multiple: true }, name: { type: "string" } },
});
const releaseDir = path.resolve(args.release ?? path.join(root, "release"));
const out = path.resolve(args.out ?? releaseDir);
const imageName = args.name ?? "tscni/installer";

/** The OCI architecture of a release's name for it. */
const OCI_ARCH = { x64: "amd64", amd64: "amd64", arm64: "arm64", aarch64: "arm64" };
/** Where each architecture's glibc lives on Debian (multiarch), for resolving NEEDED names in a sysroot. */
const TRIPLET = { amd64: "x86_64-linux-gnu", arm64: "aarch64-linux-gnu" };
const HOST_ARCH = OCI_ARCH[process.arch];

/** A plugin tarball's version and OCI architecture, from today's name or the coming one; undefined for other files. */
function parseTarballName(name) {
  const today = /^tscni-(\d[^/]*)-linux-(x64|arm64)\.tar\.gz$/.exec(name);
  if (today) return { version: today[1], arch: OCI_ARCH[today[2]] };
  const coming = /^tscni-plugins-linux-(amd64|arm64|x64|aarch64)-v(\d[^/]*)\.t(?:ar\.)?gz$/.exec(name);
  if (coming) return { version: coming[2], arch: OCI_ARCH[coming[1]] };
  return undefined;
}

const sha256 = sha256File;

/** Checks `file` against a SHA256SUMS line or a `<file>.sha256` beside it, when there is one. */
function checkSum(file) {
  const name = path.basename(file);
  const lines = [path.join(path.dirname(file), "SHA256SUMS"), `${file}.sha256`]
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, "utf8").split("\n"))
    .map((l) => /^([0-9a-f]{64}) [ *]?(.+)$/.exec(l.trim()))
    .filter((m) => m && path.basename(m[2]) === name);
  if (lines.length === 0) return "no checksum beside it";
  const actual = sha256(file);
  for (const m of lines) if (m[1] !== actual) throw new Error(`${file}: sha256 ${actual}, but its checksum file says ${m[1]}`);
  return "checksum ok";
}

/**
 * The file `file` (an absolute path inside `sysroot`) is, following its links inside the sysroot (an unpacked
 * libc6 .deb links /lib64/ld-linux-x86-64.so.2 to an absolute path, which must not lead to this machine's file).
 */
function inSysroot(sysroot, file) {
  let at = file;
  for (let hops = 0; hops < 40; hops++) {
    let stat;
    try {
      stat = lstatSync(path.join(sysroot, at));
    } catch {
      return undefined;
    }
    if (!stat.isSymbolicLink()) return path.join(sysroot, at);
    const target = readlinkSync(path.join(sysroot, at));
    at = path.isAbsolute(target) ? target : path.join(path.dirname(at), target);
  }
  return undefined;
}

/** The shared libraries (and interpreter) an ELF file needs, found in `sysroot`, recursively: image path -> file. */
function glibcFiles(elf, arch, sysroot) {
  const dirs = [`lib/${TRIPLET[arch]}`, `usr/lib/${TRIPLET[arch]}`, "lib64", "usr/lib64", "lib", "usr/lib"];
  const found = new Map(); // image path -> file in the sysroot
  const visit = (file) => {
    const dynamic = run("readelf", ["-d", "-l", "-W", file]);
    const interp = /\[Requesting program interpreter: (\S+)\]/.exec(dynamic);
    if (interp && !found.has(interp[1])) {
      const at = inSysroot(sysroot, interp[1]);
      if (!at) throw new Error(`${path.basename(elf)} (${arch}) needs the interpreter ${interp[1]}, not in ${sysroot}`);
      found.set(interp[1], at);
    }
    for (const [, lib] of dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)) {
      if ([...found.keys()].some((k) => path.basename(k) === lib)) continue;
      const dir = dirs.find((d) => inSysroot(sysroot, `/${d}/${lib}`));
      if (!dir) throw new Error(`${path.basename(elf)} (${arch}) needs ${lib}, not in ${sysroot}'s ${dirs.join(", ")} (give --sysroot ${arch}=DIR)`);
      const at = inSysroot(sysroot, `/${dir}/${lib}`);
      found.set(`/${dir}/${lib}`, at);
      visit(at);
    }
  };
  visit(elf);
  return found;
}

/**
 * The notice of the GNU C Library files an image holds, from the Debian package they come from (the machine's libc6
 * for its own architecture, libc6-<arch>-cross for Debian's cross sysroot, else a libc6 copyright file inside a
 * given sysroot): its name and version, its copyright file and the LGPL text. The image then carries what the
 * LGPL asks of a redistributor of these files (the licence, the copyright, where the source is); none found fails
 * the build, as the release fails for a bundled package without a notice.
 */
function glibcNotice(arch, sysroot) {
  const pkg = sysroot === "/" ? "libc6" : sysroot === `/usr/${TRIPLET[arch]}` ? `libc6-${arch}-cross` : undefined;
  const copyright = pkg ? `/usr/share/doc/${pkg}/copyright` : path.join(sysroot, "usr/share/doc/libc6/copyright");
  if (!existsSync(copyright)) throw new Error(`no copyright file for ${arch}'s glibc (${copyright}): the image would ship it without a notice`);
  const version = pkg ? run("dpkg-query", ["-W", "-f", "${Version}", pkg]) : "unknown (from the given sysroot)";
  const lgpl = "/usr/share/common-licenses/LGPL-2.1";
  if (!existsSync(lgpl)) throw new Error(`${lgpl} is missing: the image would ship glibc without its licence text`);
  return { pkg: pkg ?? "libc6", version, copyright, lgpl };
}

/** An SPDX 2.3 document of the image archive: the image of each architecture, its plugin tarball and its glibc. */
function imageSbom(archiveName, archiveSha, epoch, parts) {
  const id = (s) => `SPDXRef-${s.replace(/[^A-Za-z0-9.-]/g, "-")}`;
  const packages = [
    {
      SPDXID: id("image"),
      name: `${imageName}`,
      versionInfo: version,
      downloadLocation: "NOASSERTION",
      filesAnalyzed: false,
      licenseConcluded: "NOASSERTION",
      licenseDeclared: "Apache-2.0 AND LGPL-2.1-or-later",
      copyrightText: "NOASSERTION",
      checksums: [{ algorithm: "SHA256", checksumValue: archiveSha }],
      packageFileName: archiveName,
    },
  ];
  const relationships = [{ spdxElementId: "SPDXRef-DOCUMENT", relationshipType: "DESCRIBES", relatedSpdxElement: id("image") }];
  for (const p of parts) {
    packages.push({
      SPDXID: id(`tscni-plugins-${p.arch}`),
      name: "tscni",
      versionInfo: version,
      downloadLocation: "NOASSERTION",
      filesAnalyzed: false,
      licenseConcluded: "NOASSERTION",
      licenseDeclared: "Apache-2.0",
      copyrightText: "NOASSERTION",
      checksums: [{ algorithm: "SHA256", checksumValue: p.tarballSha }],
      packageFileName: p.tarball,
      comment: `the plugin directory at /tscni/bin of the ${p.arch} image (its own SBOM: ${p.tarball}.spdx.json)`,
    });
    packages.push({
      SPDXID: id(`glibc-${p.arch}`),
      name: "glibc",
      versionInfo: p.glibc.version,
      supplier: "Organization: Debian",
      downloadLocation: "NOASSERTION",
      filesAnalyzed: false,
      licenseConcluded: "NOASSERTION",
      licenseDeclared: "LGPL-2.1-or-later",
      copyrightText: "NOASSERTION",
      comment: `Debian's ${p.glibc.pkg} ${p.glibc.version}: ${p.libs.join(" ")} in the ${p.arch} image; notice at /tscni/licenses/glibc/`,
    });
    relationships.push(
      { spdxElementId: id("image"), relationshipType: "CONTAINS", relatedSpdxElement: id(`tscni-plugins-${p.arch}`) },
      { spdxElementId: id("image"), relationshipType: "CONTAINS", relatedSpdxElement: id(`glibc-${p.arch}`) },
    );
  }
  return {
    spdxVersion: "SPDX-2.3",
    dataLicense: "CC0-1.0",
    SPDXID: "SPDXRef-DOCUMENT",
    name: archiveName,
    documentNamespace: `https://spdx.org/spdxdocs/${archiveName}-${archiveSha}`,
    creationInfo: { created: new Date(Number(epoch) * 1000).toISOString().replace(/\.\d+Z$/, "Z"), creators: ["Tool: tscni scripts/image.mjs"] },
    packages,
    relationships,
  };
}

const tarballs = existsSync(releaseDir)
  ? readdirSync(releaseDir)
      .map((name) => ({ name, ...parseTarballName(name) }))
      .filter((t) => t.arch)
  : [];
if (tarballs.length === 0) fail(`no plugin tarball (tscni-<version>-linux-<arch>.tar.gz) in ${releaseDir}: run npm run release first`);
const versions = [...new Set(tarballs.map((t) => t.version))];
if (versions.length !== 1) fail(`${releaseDir} holds plugin tarballs of several versions: ${versions.join(", ")}`);
const [version] = versions;
for (const arch of new Set(tarballs.map((t) => t.arch))) {
  const of = tarballs.filter((t) => t.arch === arch).map((t) => t.name);
  if (of.length > 1) fail(`${releaseDir} holds two ${arch} plugin tarballs: ${of.join(", ")}`);
}
const sysroots = new Map([[HOST_ARCH, "/"]]);
for (const s of args.sysroot ?? []) {
  const m = /^(amd64|arm64)=(.+)$/.exec(s);
  if (!m) fail(`--sysroot ${s}: want amd64=DIR or arm64=DIR`);
  sysroots.set(m[1], path.resolve(m[2]));
}
// Debian's cross C library (libc6-<arch>-cross, which scripts/setup.sh installs for the arm64 release) is a sysroot
// of that architecture's glibc laid out as /lib: the files the image needs, from a package of Debian's, offline.
for (const [arch, triplet] of Object.entries(TRIPLET)) {
  const cross = `/usr/${triplet}`;
  if (!sysroots.has(arch) && existsSync(path.join(cross, "lib/libc.so.6"))) sysroots.set(arch, cross);
}
for (const t of tarballs) {
  if (!sysroots.has(t.arch)) fail(`${t.name} is for ${t.arch}: give its glibc with --sysroot ${t.arch}=DIR (docs/release.md)`);
}
for (const tool of ["buildah", "readelf", "tar"]) {
  if (spawnSync(tool, ["--version"]).error) fail(`${tool} is not installed (bash scripts/setup.sh installs buildah; readelf is binutils)`);
}

const epoch = sourceDateEpoch(root, fail, "image");
const archive = `tscni-installer-${version}.oci.tar`;
const stage = mkdtempSync(path.join(os.tmpdir(), "tscni-image-"));
// buildah's own storage, private to this run: nothing is left in the machine's images, and nothing of theirs is used.
const buildah = (...argv) =>
  run("buildah", ["--root", path.join(stage, "storage"), "--runroot", path.join(stage, "run"), "--storage-driver", "vfs", ...argv], {
    env: { ...process.env, BUILDAH_ISOLATION: "chroot" },
  });
try {
  const list = `localhost/tscni-installer-list:${version}`;
  buildah("manifest", "create", list);
  const made = [];
  const parts = [];
  for (const t of [...tarballs].sort((a, b) => a.arch.localeCompare(b.arch))) {
    const tarball = path.join(releaseDir, t.name);
    const checked = checkSum(tarball);
    const sysroot = sysroots.get(t.arch);
    // The program's glibc files, read from the tarball's tscni-js.
    const unpacked = path.join(stage, `plugins-${t.arch}`);
    mkdirSync(unpacked);
    run("tar", ["-xzf", tarball, "-C", unpacked, "--wildcards", "--no-anchored", "tscni-js"]);
    const program = run("find", [unpacked, "-name", "tscni-js", "-type", "f"]).split("\n")[0];
    if (!program) throw new Error(`${t.name} holds no tscni-js`);
    const libs = glibcFiles(program, t.arch, sysroot);
    const libRoot = path.join(stage, `glibc-${t.arch}`);
    for (const [at, from] of libs) {
      mkdirSync(path.join(libRoot, path.dirname(at)), { recursive: true });
      copyFileSync(from, path.join(libRoot, at)); // the file a link points to, under the name the loader asks for
    }
    // What the LGPL asks of glibc's redistributor, in the image beside the files (glibcNotice).
    const glibc = glibcNotice(t.arch, sysroot);
    const notices = path.join(libRoot, "tscni/licenses/glibc");
    mkdirSync(notices, { recursive: true });
    copyFileSync(glibc.copyright, path.join(notices, "copyright"));
    copyFileSync(glibc.lgpl, path.join(notices, "LGPL-2.1"));
    writeFileSync(
      path.join(libRoot, "tscni/licenses/README"),
      `This image holds tscni ${version} (/tscni/bin: its LICENSE, Apache-2.0, and its NOTICE of what the program embeds)\n` +
        `and, for that program, these files of the GNU C Library from Debian's ${glibc.pkg} ${glibc.version}:\n` +
        `${[...libs.keys()].sort().join("\n")}\n` +
        "under the GNU Lesser General Public License 2.1 or later (glibc/LGPL-2.1; its copyright and the other licences of\n" +
        "its parts: glibc/copyright). Their source is Debian's glibc source package of that version (sources.debian.org).\n",
    );
    parts.push({ arch: t.arch, tarball: t.name, tarballSha: sha256(tarball), glibc, libs: [...libs.keys()].sort() });
    const ctr = buildah("from", "--arch", t.arch, "--os", "linux", "scratch");
    buildah("add", "--chown", "0:0", ctr, tarball, "/tscni/bin/"); // a local tar archive is unpacked, as Dockerfile's ADD
    buildah("copy", "--chown", "0:0", ctr, `${libRoot}/`, "/");
    buildah(
      "config",
      "--arch",
      t.arch,
      "--os",
      "linux",
      "--entrypoint",
      JSON.stringify(["/tscni/bin/cnitool", "install"]),
      "--cmd",
      "--bin-dir /host/opt/cni/bin",
      "--env",
      "PATH=/tscni/bin",
      "--workingdir",
      "/",
      "--created-by",
      "scripts/image.mjs: FROM scratch, the plugin tarball at /tscni/bin, glibc from the build's sysroot",
      "--label",
      `org.opencontainers.image.title=tscni installer`,
      "--label",
      `org.opencontainers.image.version=${version}`,
      "--label",
      "org.opencontainers.image.description=Copies tscni's CNI plugins into /host/opt/cni/bin (cnitool install)",
      "--label",
      "org.opencontainers.image.licenses=Apache-2.0 AND LGPL-2.1-or-later",
      ctr,
    );
    const image = `localhost/tscni-installer-${t.arch}:${version}`;
    buildah("commit", "--quiet", "--format", "oci", "--timestamp", epoch, "--rm", ctr, image);
    buildah("manifest", "add", "--arch", t.arch, "--os", "linux", list, `containers-storage:${image}`);
    made.push(`${t.arch} (${t.name}, ${checked}; glibc: ${[...libs.keys()].map((k) => path.basename(k)).join(" ")})`);
  }
  // The index and its images as an OCI layout, then tarred the same way every time.
  const layout = path.join(stage, "layout");
  buildah("manifest", "push", "--all", "--format", "oci", list, `oci:${layout}:${imageName}:${version}`);
  mkdirSync(out, { recursive: true });
  const entries = readdirSync(layout).sort();
  run("tar", [
    "--sort=name",
    `--mtime=@${epoch}`,
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--format=gnu",
    "-cf",
    path.join(out, archive),
    "-C",
    layout,
    ...entries,
  ]);
  const archiveSha = sha256(path.join(out, archive));
  writeFileSync(path.join(out, `${archive}.sha256`), `${archiveSha}  ${archive}\n`);
  writeFileSync(path.join(out, `${archive}.spdx.json`), `${JSON.stringify(imageSbom(archive, archiveSha, epoch, parts), null, 2)}\n`);
  const index = JSON.parse(readFileSync(path.join(layout, "index.json"), "utf8"));
  console.log(
    `image: ${imageName}:${version}, index ${index.manifests[0].digest}, in ${path.join(out, archive)} (${(statSync(path.join(out, archive)).size / 1e6).toFixed(1)} MB):`,
  );
  for (const m of made) console.log(`  ${m}`);
} catch (e) {
  console.error(`image: ${e.message}`);
  process.exitCode = 1;
} finally {
  // vfs storage holds files of root's, under a private root: buildah removes its containers; the rest is plain files.
  rmSync(stage, { recursive: true, force: true });
}
