/**
 * The release as its users get it (scripts/release.mjs), built once from dist/ as `npm run build` left it, for
 * linux/amd64 and linux/arm64: SHA256SUMS and every .sha256 check, and the packages' versions and the build agree.
 * Every archive carries LICENSE and a NOTICE that credits everything the build compiled in (the npm packages of
 * Bun's metafile, the Bun runtime of its architecture), and an SPDX SBOM beside it. Installed from npm into an empty project,
 * `npx cnitool install --bin-dir D` copies the native program, and D keeps working once the project is deleted;
 * with the platform package gone, install links the Node build and says what that costs. The plain tarball,
 * unpacked elsewhere, is the same plugin directory. A working directory holds the native program and launcher of
 * the release's build and only links to them, answers VERSION in milliseconds, and runs host-local ADD and DEL in
 * a test namespace. The arm64 artifacts run under qemu-user (binfmt_misc, scripts/setup.sh): every plugin answers
 * VERSION, host-local ADD/DEL and bridge ADD/CHECK/DEL work in a test namespace, and the arm64 `cnitool install`
 * installs from its tarball. A second release, built again from scratch, is byte for byte the first. Run once,
 * in the exec pass: the resident pass would test the same release again.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { ProgramInfo } from "#cnitool/native.js";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import { docSnippet, substitute } from "#testing/doc-snippets.js";
import { missing, Netns, ROOT, runTag, skipReason } from "#testing/harness.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";

/** arm64 here: Debian's cross compiler builds its launcher, qemu-user (registered with binfmt_misc) runs it. */
const QEMU_LD_PREFIX = "/usr/aarch64-linux-gnu";
function arm64Missing(): string | undefined {
  if (process.arch !== "x64") return `the arm64 release is cross-built from x86_64 only (this is ${process.arch})`;
  if (spawnSync("aarch64-linux-gnu-gcc", ["--version"]).status !== 0) return "no aarch64-linux-gnu-gcc (scripts/setup.sh installs it)";
  if (!existsSync(`${QEMU_LD_PREFIX}/lib/ld-linux-aarch64.so.1`)) return "no arm64 C library in /usr/aarch64-linux-gnu (libc6-arm64-cross)";
  const binfmt = "/proc/sys/fs/binfmt_misc/qemu-aarch64";
  if (!existsSync(binfmt) || !readFileSync(binfmt, "utf8").startsWith("enabled"))
    return "qemu-aarch64 is not registered with binfmt_misc (scripts/setup.sh)";
  return undefined;
}

const nativeBuilt = existsSync(path.join(ROOT, "dist/tscni-js")) && existsSync(path.join(ROOT, "dist/tscni"));
const skip = RESIDENT_PASS
  ? "the release is tested once, in the exec pass"
  : skipReason(false, nativeBuilt ? undefined : "dist/ has no native program and launcher (Bun, from npm ci, and a C compiler)");
if (skip) console.log(`# skipping release tests: ${skip}`);

const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
const platform = `linux-${process.arch}`;
/** The architecture in Go's and Debian's word, as the plugin tarball is named (npm's x64 is amd64). */
const goArch = (arch: string) => (arch === "x64" ? "amd64" : arch);
const noArm64 = skip ? undefined : process.arch === "arm64" ? undefined : missing(arm64Missing());
if (noArm64) console.log(`# building and testing no arm64 release: ${noArm64}`);
/** What the release is made for: this machine's architecture, and arm64 when it can be built and run here. */
const arches = [...new Set([process.arch, ...(noArm64 ? [] : ["arm64"])])];

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}) => {
  // (QEMU_LD_PREFIX: where qemu-user finds the arm64 C library that Bun's arm64 runtime is linked against.)
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts, env: { QEMU_LD_PREFIX, ...process.env, ...opts.env }, timeout: 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
};

describe("the release", { skip }, () => {
  let dir: string;
  let release: string;
  let build: string;
  let ns: Netns;
  const tag = runTag();

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tscni-release-test-"));
    release = path.join(dir, "release");
    const made = run("node", [path.join(ROOT, "scripts/release.mjs"), "--out", release, ...arches.flatMap((a) => ["--arch", goArch(a)])], {
      cwd: ROOT,
    });
    assert.equal(made.code, 0, made.stderr + made.stdout);
    assert.match(made.stdout, /dist\/ is current; packaging it/, "the release packages what npm run build made, without compiling again");
    console.log(made.stdout.replace(/^/gm, "# ").trimEnd());
    build = readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();
    ns = Netns.create(`tscni-rel-${tag}`);
  });
  after(() => {
    ns?.delete();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The release's archives: npm's architecture words for the npm packages, Go's for the plugin tarballs. */
  const file = {
    main: `tscni-${version}.tgz`,
    platform: (arch: string = process.arch) => `tscni-linux-${arch}-${version}.tgz`,
    tarball: (arch: string = process.arch) => `tscni-plugins-linux-${goArch(arch)}-v${version}.tgz`,
  };
  const archives = () => [file.main, ...arches.flatMap((a) => [file.platform(a), file.tarball(a)])].sort();
  const manifestOf = (tgz: string) =>
    JSON.parse(run("tar", ["-xzOf", path.join(release, tgz), "package/package.json"]).stdout) as Record<string, unknown>;
  const fileOf = (tgz: string, name: string) => run("tar", ["-xzOf", path.join(release, tgz), name]).stdout;

  test("each archive has its .sha256 and SBOM beside it, SHA256SUMS covers archives and SBOMs, and sha256sum -c passes", () => {
    const sboms = archives().map((a) => `${a}.spdx.json`);
    assert.deepEqual(readdirSync(release).sort(), ["SHA256SUMS", ...archives(), ...archives().map((a) => `${a}.sha256`), ...sboms].sort());
    const listed = readFileSync(path.join(release, "SHA256SUMS"), "utf8")
      .trim()
      .split("\n")
      .map((l) => l.split("  ")[1]);
    assert.deepEqual(listed.sort(), [...archives(), ...sboms].sort());
    const checked = run("sha256sum", ["-c", "SHA256SUMS"], { cwd: release });
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    for (const archive of archives()) {
      const one = run("sha256sum", ["-c", `${archive}.sha256`], { cwd: release });
      assert.equal(one.stdout, `${archive}: OK\n`, one.stderr);
    }
  });

  test("the main package declares each platform package of its own version; each platform package says where it runs", () => {
    const main = manifestOf(file.main);
    assert.equal(main["version"], version);
    assert.deepEqual(main["optionalDependencies"], Object.fromEntries(arches.map((a) => [`@tscni/linux-${a}`, version])));
    for (const arch of arches) {
      const native = manifestOf(file.platform(arch));
      assert.equal(native["name"], `@tscni/linux-${arch}`);
      assert.equal(native["version"], version);
      assert.deepEqual([native["os"], native["cpu"], native["libc"]], [["linux"], [arch], ["glibc"]]);
      const files = run("tar", ["-tzf", path.join(release, file.platform(arch))])
        .stdout.split("\n")
        .filter(Boolean)
        .sort();
      assert.deepEqual(files, [
        "package/LICENSE",
        "package/NOTICE",
        "package/README.md",
        "package/bin/tscni",
        "package/bin/tscni-js",
        "package/package.json",
      ]);
    }
  });

  test("every archive carries LICENSE and a NOTICE crediting all the build compiled in; its SBOM lists the same", () => {
    const licence = readFileSync(path.join(ROOT, "LICENSE"), "utf8");
    assert.match(licence, /Apache License\s+Version 2\.0, January 2004/);
    // What the program is made of, read here from Bun's metafile (not by the release's own code): every npm package
    // among the bundle's inputs, and the Bun runtime (the installed Bun's version, of each architecture).
    const inputs = Object.keys((JSON.parse(readFileSync(path.join(ROOT, "dist/bundle-meta.json"), "utf8")) as { inputs: object }).inputs);
    const packageDirs = [...new Set(inputs.flatMap((i) => /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(i)?.[1] ?? []))];
    assert.ok(packageDirs.length > 0, "the bundle compiles in npm packages (commander at least)");
    const bundled = packageDirs.map((d) => {
      const dir = path.resolve(ROOT, d);
      const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name: string; version: string };
      const licenceFile = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
      assert.ok(licenceFile, `${manifest.name} has a licence file`);
      return { ...manifest, text: readFileSync(path.join(dir, licenceFile), "utf8").trim() };
    });
    const bun = (JSON.parse(readFileSync(path.join(ROOT, "node_modules/bun/package.json"), "utf8")) as { version: string }).version;

    assert.equal(fileOf(file.main, "package/LICENSE"), licence);
    assert.match(fileOf(file.main, "package/NOTICE"), /bundles no third-party code[\s\S]*commander/);
    for (const arch of arches) {
      const runtime = `@oven/bun-linux-${arch === "x64" ? "x64" : "aarch64"}`;
      for (const [archive, prefix] of [
        [file.platform(arch), "package/"],
        [file.tarball(arch), ""],
      ] as const) {
        assert.equal(fileOf(archive, `${prefix}LICENSE`), licence, `${archive} carries LICENSE`);
        const notice = fileOf(archive, `${prefix}NOTICE`);
        assert.ok(notice.includes(`Bun runtime ${bun} (${runtime} on npm)`), `${archive}'s NOTICE names its Bun runtime`);
        assert.match(notice, /JavaScriptCore[\s\S]*LGPL-2\.0-or-later/);
        assert.match(notice, /GNU LIBRARY GENERAL PUBLIC LICENSE\s+Version 2, June 1991/);
        assert.match(notice, /GNU LESSER GENERAL PUBLIC LICENSE\s+Version 2\.1, February 1999/);
        for (const p of bundled) {
          assert.ok(notice.includes(`${p.name} ${p.version}:`), `${archive}'s NOTICE credits ${p.name} ${p.version}, which the program bundles`);
          assert.ok(notice.includes(p.text), `${archive}'s NOTICE carries ${p.name}'s licence text`);
        }
        const sbom = JSON.parse(readFileSync(path.join(release, `${archive}.spdx.json`), "utf8")) as {
          spdxVersion: string;
          packages: Array<{ name: string; versionInfo?: string; checksums?: Array<{ algorithm: string; checksumValue: string }> }>;
        };
        assert.equal(sbom.spdxVersion, "SPDX-2.3");
        const sha256 = readFileSync(path.join(release, `${archive}.sha256`), "utf8").split(" ")[0];
        assert.deepEqual(sbom.packages[0]?.checksums, [{ algorithm: "SHA256", checksumValue: sha256 }]);
        const named = sbom.packages.map((p) => `${p.name} ${p.versionInfo ?? ""}`);
        for (const p of [...bundled, { name: runtime, version: bun }, { name: "tscni", version }])
          assert.ok(named.includes(`${p.name} ${p.version}`), `${archive}'s SBOM lists ${p.name} ${p.version}`);
        assert.ok(named.some((n) => n.startsWith("JavaScriptCore")));
      }
    }
  });

  /** A plugin call from D, in exec mode (no resident server), timed. */
  const call = (binDir: string, plugin: string, command: string, config: unknown, containerId = "rel") => {
    const started = process.hrtime.bigint();
    const r = run(path.join(binDir, plugin), [], {
      input: JSON.stringify(config),
      env: { CNI_COMMAND: command, CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: "eth0", CNI_PATH: binDir, TSCNI_RESIDENT: "exec" },
    });
    return { ...r, ms: Number(process.hrtime.bigint() - started) / 1e6 };
  };

  /**
   * What every installed directory must be: the native program of this release, working on its own. `arch`: the
   * program's (arm64 runs under qemu-user, and is not timed); `licences`: whether LICENSE and NOTICE are there too
   * (the tarball's directory).
   */
  function assertWorkingPluginDir(binDir: string, network: string, subnet: string, opts: { arch?: string; licences?: boolean } = {}): void {
    const arch = opts.arch ?? process.arch;
    const files = [...PROGRAM_NAMES, "tscni", "tscni-js", ...(opts.licences ? ["LICENSE", "NOTICE"] : [])];
    assert.deepEqual(readdirSync(binDir).sort(), files.sort(), "the program, its launcher, a link per program");
    for (const name of PROGRAM_NAMES) assert.equal(readlinkSync(path.join(binDir, name)), "tscni", `${name} links to the launcher beside it`);
    for (const name of ["tscni", "tscni-js"]) assert.ok(lstatSync(path.join(binDir, name)).isFile(), `${name} is a file, not a link elsewhere`);

    const asked = run(path.join(binDir, "cnitool"), ["version", "--json"]);
    assert.equal(asked.code, 0, asked.stderr);
    const info = JSON.parse(asked.stdout) as ProgramInfo;
    assert.deepEqual(
      { kind: info.kind, arch: info.arch, build: info.build, version: info.version, path: info.path, launcher: info.launcher },
      {
        kind: "native",
        arch,
        build,
        version,
        path: path.join(binDir, "tscni-js"),
        launcher: { path: path.join(binDir, "tscni"), sameBuild: true },
      },
    );

    const versions = Array.from({ length: 5 }, () => call(binDir, "bridge", "VERSION", { cniVersion: "1.0.0" }));
    for (const v of versions) assert.equal(JSON.parse(v.stdout).cniVersion, "1.1.0", v.stdout + v.stderr);
    const fastest = Math.min(...versions.map((v) => v.ms));
    if (arch === process.arch) assert.ok(fastest < 30, `VERSION took ${fastest.toFixed(1)} ms at best (the launcher answers it; Node takes ~70)`);

    const config = { cniVersion: "1.0.0", name: network, type: "host-local", ipam: { type: "host-local", subnet, dataDir: path.join(dir, "ipam") } };
    const added = call(binDir, "host-local", "ADD", config);
    assert.equal(added.code, 0, added.stdout + added.stderr);
    assert.equal(JSON.parse(added.stdout).ips[0].address, subnet.replace(/0\/24$/, "2/24"));
    assert.equal(call(binDir, "host-local", "DEL", config).code, 0);
    assert.deepEqual(
      readdirSync(path.join(dir, "ipam", network)).filter((f) => /^\d/.test(f)),
      [],
      "the address is released",
    );
    console.log(`# ${binDir}: VERSION ${fastest.toFixed(1)} ms, host-local ADD ${added.ms.toFixed(1)} ms`);
  }

  test("from npm: install copies the native program, which works once the project is gone; without it, the Node build, said", (t) => {
    const project = path.join(dir, "project");
    mkdirSync(project);
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "uses-tscni", private: true }));
    // README's npm route, as written: the release's files in the project's release/, the bin dir substituted.
    const [npmLine, installLine] = substitute(docSnippet("README.md", "install-npm"), {
      "tscni-linux-x64-0.1.0.tgz": file.platform(),
      "tscni-0.1.0.tgz": file.main,
      "/opt/cni/bin": path.join(dir, "from-npm"),
    })
      .trim()
      .split("\n");
    symlinkSync(release, path.join(project, "release"));
    const installed = run("sh", ["-ec", `${npmLine} --prefer-offline --no-audit --no-fund --loglevel=error`], { cwd: project });
    if (installed.code !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH/.test(installed.stderr)) {
      t.skip(missing(`the npm registry is unreachable (commander comes from it): ${installed.stderr.trim().split("\n")[0]}`));
      return;
    }
    assert.equal(installed.code, 0, installed.stderr + installed.stdout);

    const binDir = path.join(dir, "from-npm");
    const copied = run("sh", ["-ec", installLine!], { cwd: project });
    assert.equal(copied.code, 0, copied.stderr);
    assert.match(copied.stdout, new RegExp(`program: native, from @tscni/${platform} ${version.replaceAll(".", "\\.")}`));
    assert.equal(copied.stderr, "");

    // Where npm did not install the platform package (another platform, --omit=optional): the Node build, and why.
    rmSync(path.join(project, "node_modules/@tscni"), { recursive: true });
    const nodeDir = path.join(dir, "node-fallback");
    const linked = run("npx", ["--no-install", "cnitool", "install", "--bin-dir", nodeDir], { cwd: project });
    assert.equal(linked.code, 0, linked.stderr);
    assert.match(linked.stderr, new RegExp(`no native program \\(@tscni/${platform} is not installed\\)`));
    assert.match(linked.stderr, /every plugin call starts Node: ~\d+ ms for VERSION/);
    const entry = path.join(project, "node_modules/tscni/dist/cli/main.js");
    assert.equal(readlinkSync(path.join(nodeDir, "tscni")), entry);
    const fallback = JSON.parse(run(path.join(nodeDir, "cnitool"), ["version", "--json"]).stdout) as ProgramInfo;
    assert.deepEqual([fallback.kind, fallback.path, fallback.version], ["node", entry, version]);

    rmSync(project, { recursive: true });
    assertWorkingPluginDir(binDir, `relnpm${tag}`, "10.241.0.0/24");
    const gone = JSON.parse(run(path.join(binDir, "cnitool"), ["version", "--bin-dir", nodeDir, "--json"]).stdout) as ProgramInfo;
    assert.deepEqual([gone.kind, gone.present], ["node", false], "the Node build's directory is broken without the project");
  });

  test("README's tarball route, run as written in the release directory (its bin dir substituted): a working plugin directory, with its LICENSE and NOTICE", () => {
    const binDir = path.join(dir, "from-tarball");
    const block = substitute(docSnippet("README.md", "install-tarball"), {
      "/opt/cni/bin": binDir,
      "linux-amd64-v0.1.0": `linux-${goArch(process.arch)}-v${version}`,
    });
    const unpacked = run("sh", ["-ec", block], { cwd: release });
    assert.equal(unpacked.code, 0, unpacked.stderr + unpacked.stdout);
    assert.match(unpacked.stdout, /: OK$/m, "the checksum was checked");
    assertWorkingPluginDir(binDir, `reltar${tag}`, "10.242.0.0/24", { licences: true });
  });

  test("README's checkout route: dist/bin/cnitool install, as written (its bin dir substituted), installs this build", () => {
    const binDir = path.join(dir, "from-checkout");
    const [, second] = docSnippet("README.md", "install-checkout").trim().split("\n");
    const installed = run("sh", ["-ec", substitute(second!, { "/opt/cni/bin": binDir })], { cwd: ROOT });
    assert.equal(installed.code, 0, installed.stderr);
    assertWorkingPluginDir(binDir, `relchk${tag}`, "10.243.0.0/24");
  });

  describe("linux/arm64, under qemu-user", { skip: noArm64 }, () => {
    let binDir: string;
    before(() => {
      binDir = path.join(dir, "arm64");
      mkdirSync(binDir);
      const unpacked = run("tar", ["-xzf", path.join(release, file.tarball("arm64")), "-C", binDir]);
      assert.equal(unpacked.code, 0, unpacked.stderr);
    });

    test("the tarball's program and launcher are arm64, and every plugin answers VERSION", () => {
      for (const f of ["tscni", "tscni-js"]) assert.match(run("file", ["-b", path.join(binDir, f)]).stdout, /ARM aarch64/, f);
      for (const name of PROGRAM_NAMES.filter((n) => n !== "cnitool")) {
        const v = call(binDir, name, "VERSION", { cniVersion: "1.0.0" });
        assert.equal(v.code, 0, `${name}: ${v.stderr}`);
        assert.equal(JSON.parse(v.stdout).cniVersion, "1.1.0", `${name}: ${v.stdout}`);
      }
    });

    test("the unpacked directory works: cnitool version, host-local ADD/DEL", () => {
      assertWorkingPluginDir(binDir, `relarm${tag}`, "10.243.0.0/24", { arch: "arm64", licences: true });
    });

    test("bridge ADD, CHECK and DEL in a test namespace", () => {
      const bridge = `tscni-br${tag}`;
      const network = `relbr${tag}`;
      const config = {
        cniVersion: "1.0.0",
        name: network,
        type: "bridge",
        bridge,
        ipam: { type: "host-local", subnet: "10.244.0.0/24", dataDir: path.join(dir, "ipam") },
      };
      try {
        const added = call(binDir, "bridge", "ADD", config, "relbr");
        assert.equal(added.code, 0, added.stdout + added.stderr);
        const result = JSON.parse(added.stdout) as { ips: Array<{ address: string }>; interfaces: Array<{ name: string }> };
        assert.equal(result.ips[0]?.address, "10.244.0.2/24");
        const inside = run("ip", ["-n", ns.name, "-o", "-4", "addr", "show", "eth0"]);
        assert.match(inside.stdout, /10\.244\.0\.2\/24/, "the address is on eth0 in the namespace");
        const checked = call(binDir, "bridge", "CHECK", { ...config, prevResult: result }, "relbr");
        assert.equal(checked.code, 0, checked.stdout + checked.stderr);
        const deleted = call(binDir, "bridge", "DEL", config, "relbr");
        assert.equal(deleted.code, 0, deleted.stdout + deleted.stderr);
        assert.notEqual(run("ip", ["-n", ns.name, "link", "show", "eth0"]).code, 0, "eth0 is gone");
        console.log(`# arm64 bridge ADD under qemu-user: ${added.ms.toFixed(0)} ms`);
      } finally {
        run("ip", ["link", "del", bridge]);
      }
    });

    test("the arm64 cnitool install, run under qemu-user, installs from the tarball", () => {
      const installed = path.join(dir, "arm64-installed");
      const r = run(path.join(binDir, "cnitool"), ["install", "--bin-dir", installed]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`program: native, from ${binDir}`));
      for (const f of ["tscni", "tscni-js"]) assert.equal(readFileSync(path.join(installed, f)).equals(readFileSync(path.join(binDir, f))), true, f);
      assertWorkingPluginDir(installed, `relins${tag}`, "10.245.0.0/24", { arch: "arm64" });
    });
  });

  test("the installer image of the release: an index of amd64 and arm64, the arm64 image's cnitool running on its own glibc", (t) => {
    if (noArm64 || spawnSync("buildah", ["--version"]).error) {
      if (process.env["CI"] === "true") assert.fail(`CI=true: ${noArm64 ?? "buildah is not installed (scripts/setup.sh)"}`);
      t.skip(noArm64 ?? "buildah is not installed (bash scripts/setup.sh)");
      return;
    }
    const out = path.join(dir, "image");
    // As the release's checklist says: `npm run release:image` after `npm run release` (the arm64 glibc from setup.sh's cross packages).
    const made = run("node", [path.join(ROOT, "scripts/image.mjs"), "--release", release, "--out", out], { cwd: ROOT });
    assert.equal(made.code, 0, made.stderr + made.stdout);
    const layout = path.join(dir, "image-layout");
    mkdirSync(layout);
    assert.equal(run("tar", ["-xf", path.join(out, `tscni-installer-${version}.oci.tar`), "-C", layout]).code, 0);
    const blob = (digest: string) => path.join(layout, "blobs", ...digest.split(":"));
    const json = (digest: string) => JSON.parse(readFileSync(blob(digest), "utf8")) as Record<string, any>;
    const top = JSON.parse(readFileSync(path.join(layout, "index.json"), "utf8")) as Record<string, any>;
    const index = json(top["manifests"][0]["digest"]);
    const platforms = (index["manifests"] as Array<Record<string, any>>).map((m) => m["platform"]["architecture"]).sort();
    assert.deepEqual(platforms, ["amd64", "arm64"]);
    const arm = (index["manifests"] as Array<Record<string, any>>).find((m) => m["platform"]["architecture"] === "arm64")!;
    const manifest = json(arm["digest"]);
    assert.equal(json(manifest["config"]["digest"])["architecture"], "arm64");
    const rootfs = path.join(dir, "image-arm64");
    mkdirSync(rootfs);
    for (const layer of manifest["layers"] as Array<{ digest: string }>) assert.equal(run("tar", ["-xzf", blob(layer.digest), "-C", rootfs]).code, 0);
    assert.match(run("file", ["-b", path.join(rootfs, "tscni/bin/tscni-js")]).stdout, /ARM aarch64/);
    assert.ok(existsSync(path.join(rootfs, "lib/ld-linux-aarch64.so.1")), "the arm64 dynamic loader is in the image");
    // The image's own glibc, not the build machine's cross one: qemu-user looks up the loader under QEMU_LD_PREFIX.
    const v = run(path.join(rootfs, "tscni/bin/cnitool"), ["version", "--json"], { env: { ...process.env, QEMU_LD_PREFIX: rootfs } });
    assert.equal(v.code, 0, v.stderr);
    const info = JSON.parse(v.stdout) as ProgramInfo;
    assert.deepEqual([info.kind, info.version], ["native", version]);
  });

  test("is reproducible: a second release of the commit, built again from scratch, is byte for byte the same (every architecture)", () => {
    // Last: it builds dist/ again in place (the same bytes, which is what is tested).
    const epoch = Number(run("git", ["-C", ROOT, "log", "-1", "--format=%ct"]).stdout.trim());
    const listing = run("tar", ["--full-time", "-tvzf", path.join(release, file.tarball())], { env: { TZ: "UTC" } })
      .stdout.trim()
      .split("\n");
    const times = new Set(listing.map((l) => l.split(/\s+/).slice(3, 5).join(" ")));
    assert.deepEqual([...times], [new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 19)], "every file dated by the commit");
    assert.ok(
      listing.every((l) => l.includes(" 0/0 ")),
      "owned by root",
    );
    const again = path.join(dir, "release-again");
    const made = run("node", [path.join(ROOT, "scripts/release.mjs"), "--rebuild", "--out", again, ...arches.flatMap((a) => ["--arch", goArch(a)])], {
      cwd: ROOT,
    });
    assert.equal(made.code, 0, made.stderr + made.stdout);
    assert.equal(readFileSync(path.join(again, "SHA256SUMS"), "utf8"), readFileSync(path.join(release, "SHA256SUMS"), "utf8"));
    assert.equal(readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim(), build, "the build ID is the build's content, not a random number");
  });
});
