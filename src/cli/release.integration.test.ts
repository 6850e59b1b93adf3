/**
 * The release as its users get it (scripts/release.mjs), built once from dist/ as `npm run build` left it:
 * SHA256SUMS checks, and the packages' versions and the build agree. Installed from npm into an empty project,
 * `npx cnitool install --bin-dir D` copies the native program, and D keeps working once the project is deleted;
 * with the platform package gone, install links the Node build and says what that costs. The plain tarball,
 * unpacked elsewhere, is the same plugin directory. A working directory holds the native program and launcher of
 * the release's build and only links to them, answers VERSION in milliseconds, and runs host-local ADD and DEL in
 * a test namespace. A second release, built again from scratch, is byte for byte the first. Run once, in the
 * exec pass: the resident pass would test the same release again.
 */
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { missing, Netns, ROOT, runTag, skipReason } from "#testing/harness.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import type { ProgramInfo } from "./native.js";

const nativeBuilt = existsSync(path.join(ROOT, "dist/tscni-js")) && existsSync(path.join(ROOT, "dist/tscni"));
const skip = RESIDENT_PASS
  ? "the release is tested once, in the exec pass"
  : skipReason(false, nativeBuilt ? undefined : "dist/ has no native program and launcher (Bun, from npm ci, and a C compiler)");
if (skip) console.log(`# skipping release tests: ${skip}`);

const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
const platform = `linux-${process.arch}`;

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}) => {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts, env: { ...process.env, ...opts.env }, timeout: 300_000 });
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
    const made = run("node", [path.join(ROOT, "scripts/release.mjs"), "--out", release], { cwd: ROOT });
    assert.equal(made.code, 0, made.stderr + made.stdout);
    assert.match(made.stdout, /dist\/ is current; packaging it/, "the release packages what npm run build made, without compiling again");
    build = readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();
    ns = Netns.create(`tscni-rel-${tag}`);
  });
  after(() => {
    ns?.delete();
    rmSync(dir, { recursive: true, force: true });
  });

  const file = {
    main: `tscni-${version}.tgz`,
    platform: `tscni-${platform}-${version}.tgz`,
    tarball: `tscni-${version}-${platform}.tar.gz`,
  };
  const manifestOf = (tgz: string) =>
    JSON.parse(run("tar", ["-xzOf", path.join(release, tgz), "package/package.json"]).stdout) as Record<string, unknown>;

  test("SHA256SUMS covers the three archives, and sha256sum -c passes", () => {
    assert.deepEqual(readdirSync(release).sort(), ["SHA256SUMS", file.main, file.tarball, file.platform].sort());
    const listed = readFileSync(path.join(release, "SHA256SUMS"), "utf8")
      .trim()
      .split("\n")
      .map((l) => l.split("  ")[1]);
    assert.deepEqual(listed.sort(), [file.main, file.tarball, file.platform].sort());
    const checked = run("sha256sum", ["-c", "SHA256SUMS"], { cwd: release });
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  });

  test("the main package declares the platform package of its own version; the platform package says where it runs", () => {
    const main = manifestOf(file.main);
    const native = manifestOf(file.platform);
    assert.equal(main["version"], version);
    assert.deepEqual(main["optionalDependencies"], { [`@tscni/${platform}`]: version });
    assert.equal(native["name"], `@tscni/${platform}`);
    assert.equal(native["version"], version);
    assert.deepEqual([native["os"], native["cpu"], native["libc"]], [["linux"], [process.arch], ["glibc"]]);
    const files = run("tar", ["-tzf", path.join(release, file.platform)])
      .stdout.split("\n")
      .filter(Boolean)
      .sort();
    assert.deepEqual(files, ["package/README.md", "package/bin/tscni", "package/bin/tscni-js", "package/package.json"]);
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

  /** What every installed directory must be: the native program of this release, working on its own. */
  function assertWorkingPluginDir(binDir: string, network: string, subnet: string): void {
    assert.deepEqual(readdirSync(binDir).sort(), [...PROGRAM_NAMES, "tscni", "tscni-js"].sort(), "the program, its launcher, a link per program");
    for (const name of PROGRAM_NAMES) assert.equal(readlinkSync(path.join(binDir, name)), "tscni", `${name} links to the launcher beside it`);
    for (const name of ["tscni", "tscni-js"]) assert.ok(lstatSync(path.join(binDir, name)).isFile(), `${name} is a file, not a link elsewhere`);

    const asked = run(path.join(binDir, "cnitool"), ["version", "--json"]);
    assert.equal(asked.code, 0, asked.stderr);
    const info = JSON.parse(asked.stdout) as ProgramInfo;
    assert.deepEqual(
      { kind: info.kind, arch: info.arch, build: info.build, version: info.version, path: info.path, launcher: info.launcher },
      {
        kind: "native",
        arch: process.arch,
        build,
        version,
        path: path.join(binDir, "tscni-js"),
        launcher: { path: path.join(binDir, "tscni"), sameBuild: true },
      },
    );

    const versions = Array.from({ length: 5 }, () => call(binDir, "bridge", "VERSION", { cniVersion: "1.0.0" }));
    for (const v of versions) assert.equal(JSON.parse(v.stdout).cniVersion, "1.1.0", v.stdout + v.stderr);
    const fastest = Math.min(...versions.map((v) => v.ms));
    assert.ok(fastest < 30, `VERSION took ${fastest.toFixed(1)} ms at best (the launcher answers it; Node takes ~70)`);

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
    const installed = run(
      "npm",
      [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        path.join(release, file.main),
        path.join(release, file.platform),
      ],
      { cwd: project },
    );
    if (installed.code !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH/.test(installed.stderr)) {
      t.skip(missing(`the npm registry is unreachable (commander comes from it): ${installed.stderr.trim().split("\n")[0]}`));
      return;
    }
    assert.equal(installed.code, 0, installed.stderr + installed.stdout);

    const binDir = path.join(dir, "from-npm");
    const copied = run("npx", ["--no-install", "cnitool", "install", "--bin-dir", binDir], { cwd: project });
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

  test("the plain tarball unpacks to the same working plugin directory", () => {
    const binDir = path.join(dir, "from-tarball");
    mkdirSync(binDir);
    const unpacked = run("tar", ["-xzf", path.join(release, file.tarball), "-C", binDir]);
    assert.equal(unpacked.code, 0, unpacked.stderr);
    assertWorkingPluginDir(binDir, `reltar${tag}`, "10.242.0.0/24");
  });

  test("is reproducible: a second release of the commit, built again from scratch, is byte for byte the same", () => {
    // Last: it builds dist/ again in place (the same bytes, which is what is tested).
    const epoch = Number(run("git", ["-C", ROOT, "log", "-1", "--format=%ct"]).stdout.trim());
    const listing = run("tar", ["--full-time", "-tvzf", path.join(release, file.tarball)], { env: { TZ: "UTC" } })
      .stdout.trim()
      .split("\n");
    const times = new Set(listing.map((l) => l.split(/\s+/).slice(3, 5).join(" ")));
    assert.deepEqual([...times], [new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 19)], "every file dated by the commit");
    assert.ok(
      listing.every((l) => l.includes(" 0/0 ")),
      "owned by root",
    );
    const again = path.join(dir, "release-again");
    const made = run("node", [path.join(ROOT, "scripts/release.mjs"), "--rebuild", "--out", again], { cwd: ROOT });
    assert.equal(made.code, 0, made.stderr + made.stdout);
    assert.equal(readFileSync(path.join(again, "SHA256SUMS"), "utf8"), readFileSync(path.join(release, "SHA256SUMS"), "utf8"));
    assert.equal(readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim(), build, "the build ID is the build's content, not a random number");
  });
});
