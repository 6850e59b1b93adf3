/**
 * The installer image (scripts/image.mjs, `npm run release:image`), built with buildah from a plugin tarball of
 * dist/ (named as the release names it today, and as it will), loaded as docs/runtimes.md says and run with
 * podman the way its DaemonSet runs the init container: its arguments, its volumes (the node's directories, the
 * ConfigMap's files). The image is FROM scratch (the plugin directory and the glibc files the program needs) and
 * reproducible; it installs the plugins and the config, again on a restart, leaving a plugin of another name
 * alone; and plugins run in a loop while the image replaces them
 * with changed files all succeed (cnitool install renames each file into place). Skips, saying why, without
 * buildah or podman (except under CI=true). Run once, in the exec pass; podman and buildah keep their images in
 * the test's own directories.
 */

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import { docSnippet, parseSnippet } from "#testing/doc-snippets.js";
import { Cleanup, OUR_BIN, ROOT, runCommand, skipReason } from "#testing/harness.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";

const has = (tool: string) => !spawnSync(tool, ["--version"]).error;
const skip = RESIDENT_PASS
  ? "the installer image is tested once, in the exec pass"
  : skipReason(
      false,
      existsSync(path.join(ROOT, "dist/tscni-js")) ? undefined : "dist/ has no native program (Bun, from npm ci)",
      has("buildah") ? undefined : "buildah is not installed (bash scripts/setup.sh)",
      has("podman") ? undefined : "podman is not installed (bash scripts/setup.sh)",
    );
if (skip) console.log(`# skipping the installer image tests: ${skip}`);

const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
const ARCH = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch] ?? process.arch;
const EPOCH = "1700000000";
type Json = Record<string, any>;

describe("the installer image, run as the DaemonSet's init container", { skip }, () => {
  const cleanup = new Cleanup();
  after(() => cleanup.run());
  const base = skip ? "" : cleanup.dir("tscni-image-");
  const env = { ...process.env, TSCNI_RESIDENT: "exec", SOURCE_DATE_EPOCH: EPOCH };
  const podman = (args: string[]) =>
    runCommand("podman", ["--root", path.join(base, "podman"), "--runroot", path.join(base, "podman-run"), "--storage-driver", "vfs", ...args], {
      env,
      timeoutMs: 120_000,
    });
  // The init container: the node's plugin directory at /host/opt/cni/bin, the image's default arguments.
  const nofile = skip ? "" : spawnSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).stdout.trim().replace("unlimited", "1048576");
  // (The limits podman.test.ts gives too: podman's default nofile is above what this machine allows root.)
  const limits = [`--ulimit=nofile=${nofile}:${nofile}`, "--ulimit=nproc=32768:32768"];
  const runImage = (image: string, bin: string) => podman(["run", "--rm", "--network", "none", ...limits, "-v", `${bin}:/host/opt/cni/bin`, image]);

  /** A release directory holding a plugin tarball of `plugins` under `name`; with a .sha256 beside it. */
  const release = (dir: string, plugins: string, name: string) => {
    mkdirSync(dir, { recursive: true });
    const tarball = path.join(dir, name);
    const names = readdirSync(plugins).sort();
    const made = spawnSync("tar", [
      "--sort=name",
      `--mtime=@${EPOCH}`,
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "-I",
      "gzip -1",
      "-cf",
      tarball,
      "-C",
      plugins,
      ...names,
    ]);
    assert.equal(made.status, 0, String(made.stderr));
    const sum = spawnSync("sha256sum", [name], { cwd: dir, encoding: "utf8" }).stdout;
    writeFileSync(`${tarball}.sha256`, sum);
    return dir;
  };
  const buildImage = async (releaseDir: string, out: string, name = "tscni/installer") => {
    const r = await runCommand("node", [path.join(ROOT, "scripts/image.mjs"), "--release", releaseDir, "--out", out, "--name", name], {
      env,
      timeoutMs: 300_000,
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return path.join(out, `tscni-installer-${version}.oci.tar`);
  };

  let archive: string;
  let changedArchive: string;
  before(async () => {
    // The release's plugin directory, as the plain tarball holds it (the layout `cnitool install` makes).
    const plugins = path.join(base, "plugins");
    const made = await runCommand(path.join(OUR_BIN, "cnitool"), ["install", "--bin-dir", plugins], { env });
    assert.equal(made.code, 0, made.stderr);
    archive = await buildImage(release(path.join(base, "release"), plugins, `tscni-${version}-linux-${process.arch}.tar.gz`), path.join(base, "out"));
    // A changed build of the same directory: bytes appended to the program and the launcher (both still run).
    const changed = path.join(base, "plugins-changed");
    mkdirSync(changed);
    for (const f of readdirSync(plugins)) {
      if (f === "tscni" || f === "tscni-js") copyFileSync(path.join(plugins, f), path.join(changed, f));
      else spawnSync("ln", ["-s", "tscni", path.join(changed, f)]);
    }
    appendFileSync(path.join(changed, "tscni-js"), Buffer.alloc(1 << 20));
    appendFileSync(path.join(changed, "tscni"), Buffer.alloc(4096));
    for (const f of ["tscni", "tscni-js"]) chmodSync(path.join(changed, f), 0o755);
    changedArchive = await buildImage(
      release(path.join(base, "release-changed"), changed, `tscni-plugins-linux-${ARCH}-v${version}.tgz`),
      path.join(base, "out-changed"),
      "tscni/installer-changed",
    );
    // Loaded as docs/runtimes.md says (into the test's own podman storage).
    const [tool, ...load] = docSnippet("docs/runtimes.md", "image-load").trim().split(/\s+/);
    assert.equal(tool, "podman");
    for (const a of [archive, changedArchive]) {
      const loaded = await podman(load.map((w) => (w === path.basename(archive) ? a : w)));
      assert.equal(loaded.code, 0, loaded.stdout + loaded.stderr);
      assert.match(loaded.stdout, /^Loaded image: localhost\/tscni\/installer(-changed)?:/m);
    }
  });

  test("the image carries the notices of what it holds (tscni's LICENSE and NOTICE, glibc's copyright and LGPL), and an SBOM beside it", async () => {
    const layout = path.join(base, "layout-notices");
    mkdirSync(layout);
    assert.equal(spawnSync("tar", ["-xf", archive, "-C", layout]).status, 0);
    const blob = (digest: string) => path.join(layout, "blobs", ...digest.split(":"));
    const json = (digest: string): Json => JSON.parse(readFileSync(blob(digest), "utf8"));
    const top = JSON.parse(readFileSync(path.join(layout, "index.json"), "utf8")) as Json;
    const manifest = json(json(top["manifests"][0]["digest"])["manifests"][0]["digest"]);
    const listing = manifest["layers"].flatMap((l: Json) =>
      spawnSync("tar", ["-tzf", blob(l["digest"])], { encoding: "utf8" }).stdout.split("\n"),
    ) as string[];
    for (const f of ["tscni/licenses/README", "tscni/licenses/glibc/copyright", "tscni/licenses/glibc/LGPL-2.1"])
      assert.ok(listing.includes(f), `${f} in the image`);
    const sbom = JSON.parse(readFileSync(`${archive}.spdx.json`, "utf8")) as Json;
    assert.equal(sbom["spdxVersion"], "SPDX-2.3");
    const names = sbom["packages"].map((p: Json) => `${p["name"]} ${p["licenseDeclared"]}`);
    assert.ok(names.includes("tscni Apache-2.0") && names.includes("glibc LGPL-2.1-or-later"), names.join(", "));
  });

  test("the archive is an OCI index of a FROM-scratch image: the plugin directory, glibc's files, cnitool install", async () => {
    assert.equal(
      readFileSync(`${archive}.sha256`, "utf8"),
      `${spawnSync("sha256sum", [archive], { encoding: "utf8" }).stdout.split(" ")[0]}  ${path.basename(archive)}\n`,
    );
    const layout = path.join(base, "layout");
    mkdirSync(layout);
    assert.equal(spawnSync("tar", ["-xf", archive, "-C", layout]).status, 0);
    const blob = (digest: string) => path.join(layout, "blobs", ...digest.split(":"));
    const json = (digest: string): Json => JSON.parse(readFileSync(blob(digest), "utf8"));
    const top = JSON.parse(readFileSync(path.join(layout, "index.json"), "utf8")) as Json;
    assert.equal(top["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"], `tscni/installer:${version}`);
    const index = json(top["manifests"][0]["digest"]);
    assert.equal(index["mediaType"], "application/vnd.oci.image.index.v1+json");
    assert.deepEqual(
      index["manifests"].map((m: Json) => m["platform"]),
      [{ architecture: ARCH, os: "linux" }],
    );
    const manifest = json(index["manifests"][0]["digest"]);
    const config = json(manifest["config"]["digest"]);
    assert.deepEqual(config["config"]["Entrypoint"], ["/tscni/bin/cnitool", "install"]);
    assert.deepEqual(config["config"]["Cmd"], ["--bin-dir", "/host/opt/cni/bin"]);
    assert.equal(config["created"], new Date(Number(EPOCH) * 1000).toISOString().replace(".000Z", "Z"));
    assert.equal(manifest["layers"].length, 1, "one layer, on nothing");
    const listed = spawnSync("tar", ["-tzvf", blob(manifest["layers"][0]["digest"])], { encoding: "utf8", maxBuffer: 16 << 20 })
      .stdout.trim()
      .split("\n");
    const files = listed.filter((l) => !l.startsWith("d")).map((l) => l.split(/\s+/)[5]!);
    const libs = files.filter((f) => !f.startsWith("tscni/"));
    assert.deepEqual(
      files.filter((f) => f.startsWith("tscni/bin/")).sort(),
      [...PROGRAM_NAMES, "tscni", "tscni-js"].map((n) => `tscni/bin/${n}`).sort(),
    );
    assert.ok(
      libs.some((f) => /^lib\/[a-z0-9_]+-linux-gnu\/libc\.so\.6$/.test(f)),
      libs.join(" "),
    );
    assert.ok(
      libs.every((f) => /^lib(64)?\/([a-z0-9_]+-linux-gnu\/)?(lib[a-z]+\.so\.\d+|ld-linux-[a-z0-9-]+\.so\.\d+)$/.test(f)),
      libs.join(" "),
    );
    for (const l of listed) assert.match(l, new RegExp(` 0/0 .* ${new Date(Number(EPOCH) * 1000).toISOString().slice(0, 10)} `), l);

    // Reproducible: built again from the same tarball (under the coming release name), the same bytes.
    const again = path.join(base, "release-again");
    mkdirSync(again);
    copyFileSync(
      path.join(base, "release", `tscni-${version}-linux-${process.arch}.tar.gz`),
      path.join(again, `tscni-plugins-linux-${ARCH}-v${version}.tgz`),
    );
    const second = await buildImage(again, path.join(base, "out-again"));
    assert.equal(readFileSync(`${second}.sha256`, "utf8"), readFileSync(`${archive}.sha256`, "utf8"));
  });

  test("run with the DaemonSet's arguments and volumes, it installs, again on a restart, leaving another plugin alone", async () => {
    const [configMap, daemonSet] = parseSnippet("yaml", docSnippet("docs/runtimes.md", "daemonset")) as [Json, Json];
    const pod = daemonSet["spec"]["template"]["spec"];
    const [install] = pod["initContainers"] as Json[];
    const node = path.join(base, "node");
    const bin = path.join(node, "opt/cni/bin");
    const conf = path.join(node, "etc/cni/net.d");
    const config = path.join(base, "configmap");
    mkdirSync(config);
    for (const [name, text] of Object.entries(configMap["data"] as Record<string, string>)) writeFileSync(path.join(config, name), text);
    // The volumes: the node's directories (DirectoryOrCreate), the ConfigMap's files.
    const volumes = new Map<string, string>(
      (pod["volumes"] as Json[]).map((v) => [v["name"], v["configMap"] ? config : path.join(node, v["hostPath"]["path"])]),
    );
    for (const dir of volumes.values()) mkdirSync(dir, { recursive: true });
    const mounts = (install!["volumeMounts"] as Json[]).flatMap((m) => ["-v", `${volumes.get(m["name"])}:${m["mountPath"]}`]);
    writeFileSync(path.join(bin, "their-plugin"), "#!/bin/sh\necho theirs\n", { mode: 0o755 });
    for (const round of [1, 2]) {
      const r = await podman([
        "run",
        "--rm",
        "--network",
        "none",
        ...limits,
        ...mounts,
        `tscni/installer:${version}`,
        ...(install!["args"] as string[]),
      ]);
      assert.equal(r.code, 0, `round ${round}: ${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /^program: native, from \/tscni\/bin$/m);
      assert.match(r.stdout, round === 1 ? /^linked: /m : /^replaced: /m);
      assert.deepEqual(readdirSync(bin).sort(), [...PROGRAM_NAMES, "their-plugin", "tscni", "tscni-js"].sort(), `round ${round}`);
      assert.equal(readFileSync(path.join(bin, "their-plugin"), "utf8"), "#!/bin/sh\necho theirs\n", "the other plugin is untouched");
      assert.deepEqual(readdirSync(conf), ["10-tscni.conflist"], "the config, and no temporary file");
      assert.deepEqual(
        JSON.parse(readFileSync(path.join(conf, "10-tscni.conflist"), "utf8")),
        JSON.parse(docSnippet("docs/runtimes.md", "tscni-conflist")),
      );
      assert.equal(statSync(path.join(bin, "tscni-js")).size, statSync(path.join(OUR_BIN, "..", "tscni-js")).size);
      const v = await runCommand(path.join(bin, "cnitool"), ["version"], { env });
      assert.equal(v.code, 0, v.stderr);
      assert.match(v.stdout, /launcher: .* \(same build\)/);
    }
  });

  test("plugins run while the image replaces them with changed files: every run succeeds", async () => {
    const bin = path.join(base, "node-bin-race");
    mkdirSync(bin);
    assert.equal((await runImage(`tscni/installer:${version}`, bin)).code, 0);
    const stop = path.join(base, "stop");
    // Both paths: VERSION answered by the launcher alone, and `cnitool version`, which runs the program.
    const loop = spawn(
      "sh",
      [
        "-c",
        `ok=0; bad=0
         while [ ! -e ${stop} ]; do
           if echo '{"cniVersion":"1.0.0"}' | CNI_COMMAND=VERSION ${bin}/bridge >/dev/null && ${bin}/cnitool version >/dev/null; then ok=$((ok+1)); else bad=$((bad+1)); fi
         done
         echo "$ok $bad"`,
      ],
      { env, stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    loop.stdout.on("data", (d) => {
      out += d;
    });
    const done = new Promise((resolve) => loop.on("close", resolve));
    const sizes = { old: statSync(path.join(bin, "tscni-js")).size, changed: 0 };
    for (const image of ["tscni/installer-changed", "tscni/installer", "tscni/installer-changed"]) {
      const r = await runImage(`${image}:${version}`, bin);
      assert.equal(r.code, 0, r.stdout + r.stderr);
    }
    writeFileSync(stop, "");
    await done;
    sizes.changed = statSync(path.join(bin, "tscni-js")).size;
    assert.equal(sizes.changed, sizes.old + (1 << 20), "the changed program is in place");
    const [ok, bad] = out.trim().split(" ").map(Number);
    assert.equal(bad, 0, `${bad} of ${ok! + bad!} runs failed while the image replaced the plugins`);
    assert.ok(ok! >= 5, `${ok} runs overlapped the three installs`);
    assert.deepEqual(
      readdirSync(bin).filter((f) => f.startsWith(".")),
      [],
      "no temporary file left",
    );
  });
});
