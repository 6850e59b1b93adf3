/**
 * The npm package as a user gets it: `npm pack`, then `npm install ./tscni-<version>.tgz` into an empty project
 * (dependencies from npm's cache, which `npm ci` filled). It holds no test code; `npx cnitool --help` works;
 * every public face imports with its types; and docs/plugin-author.md, followed as written (its commands and
 * its code) in a fresh `npm init -y` project, makes a plugin that runs from a CNI_PATH directory (VERSION and a
 * bad config anywhere; ADD and CHECK in a test-made namespace as root).
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Netns, ROOT, runTag } from "#testing/harness.js";

const FACES = ["spec", "skel", "invoke", "libcni", "net", "runtime"] as const;
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");

const run = (cmd: string, args: string[], opts: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv } = {}) => {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts, env: { ...process.env, ...opts.env } });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
};

describe("the npm package", () => {
  let dir: string;
  let project: string;
  let tarball: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tscni-pack-"));
    const packed = run("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: ROOT });
    assert.equal(packed.code, 0, packed.stderr);
    tarball = path.join(dir, packed.stdout.trim().split("\n").pop()!);
    project = path.join(dir, "project");
    run("mkdir", [project]);
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "uses-tscni", private: true, type: "module" }));
    const installed = run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: project });
    assert.equal(installed.code, 0, installed.stderr + installed.stdout);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("ships the program and its types, and no test code", () => {
    const files = run("tar", ["-tzf", tarball]).stdout.split("\n").filter(Boolean);
    assert.ok(files.includes("package/dist/cli/main.js"));
    assert.ok(files.includes("package/dist/net/index.d.ts"));
    const testCode = files.filter((f) => /\.test\.|\/testing\/|\/integration\/|dist-test|tscni-js$/.test(f));
    assert.deepEqual(testCode, []);
  });

  test("npx cnitool --help", () => {
    const r = run("npx", ["--no-install", "cnitool", "--help"], { cwd: project });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Usage: cnitool/);
    assert.match(r.stdout, /install/, "the install command is there");
  });

  test("every public face imports, typed", () => {
    const lines = FACES.map((f) => `import * as ${f} from "tscni/${f}";`);
    lines.push(`const names: string[] = [${FACES.map((f) => `...Object.keys(${f})`).join(", ")}];`);
    lines.push("const v: spec.VersionInfo = new spec.VersionInfo(spec.ALL_VERSIONS);");
    lines.push('const ns: Promise<net.NetNS> = net.NetNS.open("/proc/self/ns/net");');
    lines.push("console.log(JSON.stringify({ names: names.length, versions: v.supportedVersions.length, ns: typeof ns }));");
    writeFileSync(path.join(project, "faces.ts"), lines.join("\n") + "\n");
    compile("faces.ts");
    const r = run("node", ["faces.js"], { cwd: project });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { names: number; versions: number };
    assert.ok(out.names > 50, `exports: ${out.names}`);
    assert.equal(out.versions, 7);
  });

  /** Compiles one file of the project against the installed package (types from the package's .d.ts). */
  function compile(file: string): void {
    const r = run(
      "node",
      [
        TSC,
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "--strict",
        "--skipLibCheck",
        "--types",
        "node",
        "--typeRoots",
        path.join(ROOT, "node_modules/@types"),
        file,
      ],
      { cwd: project },
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
  }

  describe("the plugin author's guide, followed as written in a fresh `npm init -y` project", () => {
    let plugin: string;
    let native: string | undefined;
    before(() => {
      const guide = readFileSync(path.join(ROOT, "docs/plugin-author.md"), "utf8");
      const blocks = (lang: string) => [...guide.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
      const [setup, build, nativeBuild] = blocks("sh");
      const [code] = blocks("ts");
      assert.ok(setup && build && nativeBuild && code, "docs/plugin-author.md has its three ```sh blocks and its ```ts block");
      // The guide's commands, with the package from the tarball and the compiler from this checkout (no registry),
      // and a CNI_PATH directory of the test's own.
      const install = "npm install tscni typescript @types/node";
      assert.ok(setup.includes(install), `the guide installs with "${install}"`);
      const local = [tarball, path.join(ROOT, "node_modules/typescript"), path.join(ROOT, "node_modules/@types/node")];
      const bin = path.join(dir, "cni-bin");
      run("mkdir", [bin]);
      const started = run(
        "bash",
        ["-euo", "pipefail", "-c", setup.replace(install, `npm install --prefer-offline --no-audit --no-fund --loglevel=error ${local.join(" ")}`)],
        { cwd: dir },
      );
      assert.equal(started.code, 0, started.stderr + started.stdout);
      const guideProject = path.join(dir, "mtu-chain");
      assert.equal(JSON.parse(readFileSync(path.join(guideProject, "package.json"), "utf8")).type ?? "commonjs", "commonjs", "npm init -y's default");
      writeFileSync(path.join(guideProject, "mtu-chain.mts"), code);
      assert.ok(build.includes("/opt/cni/bin/"), "the guide installs into /opt/cni/bin");
      const built = run("bash", ["-euo", "pipefail", "-c", build.replaceAll("/opt/cni/bin/", `${bin}/`)], { cwd: guideProject });
      assert.equal(built.code, 0, built.stderr + built.stdout);
      assert.match(built.stdout, /"supportedVersions":\s*\[\s*"0\.4\.0"/, "the guide's VERSION call answers");
      plugin = path.join(bin, "mtu-chain");
      // Built native (Bun from this checkout, in the project as `npm install --save-dev bun` puts it) into a
      // directory of its own.
      const addBun = "npm install --save-dev bun";
      assert.ok(nativeBuild.includes(addBun), `the guide adds Bun with "${addBun}"`);
      const nativeBin = path.join(dir, "cni-bin-native");
      run("mkdir", [nativeBin]);
      const withBun = `mkdir -p node_modules/.bin && ln -s ${path.join(ROOT, "node_modules/.bin/bun")} node_modules/.bin/bun`;
      // (No pipefail: the launcher answers VERSION without reading its stdin, as a runtime's exec allows, so
      // the guide's `echo ... |` may end with SIGPIPE, which an interactive shell does not report.)
      const nativeBuilt = run("bash", ["-eu", "-c", nativeBuild.replace(addBun, withBun).replaceAll("/opt/cni/bin/", `${nativeBin}/`)], {
        cwd: guideProject,
      });
      assert.equal(nativeBuilt.code, 0, nativeBuilt.stderr + nativeBuilt.stdout);
      assert.match(nativeBuilt.stdout, /"supportedVersions":\s*\[\s*"0\.4\.0"/, "the native build's VERSION call answers");
      assert.deepEqual(readdirSync(nativeBin).sort(), ["mtu-chain", "mtu-chain-js"], "the launcher and its program");
      native = path.join(nativeBin, "mtu-chain");
    });
    const callOf =
      (file: () => string) =>
      (command: string, config: unknown, env: Record<string, string> = {}) =>
        run(file(), [], {
          input: JSON.stringify(config),
          env: { CNI_COMMAND: command, CNI_CONTAINERID: "guide", CNI_IFNAME: "eth0", CNI_NETNS: "", CNI_PATH: "/nonexistent", ...env },
        });
    const skip = process.getuid?.() === 0 ? undefined : "needs root (a network namespace)";

    for (const [how, file] of [
      ["run by Node", () => plugin],
      ["built native (tscni-build-plugin)", () => native!],
    ] as const) {
      const call = callOf(file);
      describe(how, () => {
        test("answers VERSION", () => {
          const r = call("VERSION", { cniVersion: "1.0.0" });
          assert.equal(r.code, 0, r.stderr);
          assert.deepEqual(JSON.parse(r.stdout), { cniVersion: "1.1.0", supportedVersions: ["0.4.0", "1.0.0", "1.1.0"] });
        });

        test("gives a CNI error for a bad config, keys read as Go reads them", () => {
          const r = call("ADD", { cniVersion: "1.0.0", name: "n", type: "mtu-chain", MTU: "big" }, { CNI_NETNS: "/run/netns/tscni-no-such-netns" });
          assert.equal(r.code, 1);
          assert.deepEqual(JSON.parse(r.stdout), { code: 7, msg: 'invalid "MTU": want an integer' });
        });

        test("ADD sets the MTU of the container's interface and passes the result on; CHECK agrees", { skip }, () => {
          const ns = Netns.create(`tscni-guide-${runTag()}`);
          try {
            ns.exec("ip", ["link", "add", "eth0", "type", "veth", "peer", "name", "peer0"]);
            const prevResult = {
              cniVersion: "1.0.0",
              interfaces: [{ name: "eth0", sandbox: ns.path }],
              ips: [{ address: "10.9.0.2/24", interface: 0 }],
            };
            const config = { cniVersion: "1.0.0", name: "n", type: "mtu-chain", mtu: 1400, prevResult };
            const added = call("ADD", config, { CNI_NETNS: ns.path });
            assert.equal(added.code, 0, added.stdout + added.stderr);
            assert.deepEqual(JSON.parse(added.stdout).ips, prevResult.ips);
            assert.equal((ns.ipJson(["link", "show", "eth0"]) as Array<{ mtu: number }>)[0]!.mtu, 1400);
            assert.equal(call("CHECK", config, { CNI_NETNS: ns.path }).code, 0);
            ns.exec("ip", ["link", "set", "eth0", "mtu", "1300"]);
            assert.match(call("CHECK", config, { CNI_NETNS: ns.path }).stdout, /MTU 1300, expected 1400/);
          } finally {
            ns.delete();
          }
        });
      });
    }

    test("the native launcher without its program refuses every call, naming the program", () => {
      const alone = path.join(dir, "alone");
      run("mkdir", [alone]);
      run("cp", [native!, alone]);
      const r = callOf(() => path.join(alone, "mtu-chain"))("VERSION", { cniVersion: "1.0.0" });
      assert.equal(r.code, 1);
      assert.match(
        JSON.parse(r.stdout).msg,
        /^mtu-chain: this plugin is a launcher, and the program it runs is missing: .*\/alone\/mtu-chain-js \(no such file or directory\); install mtu-chain and mtu-chain-js together/,
      );
    });
  });

  test("installs nothing but the package and its one dependency", () => {
    const modules = readdirSync(path.join(project, "node_modules")).filter((m) => !m.startsWith("."));
    assert.deepEqual(modules.sort(), ["commander", "tscni"]);
  });
});
