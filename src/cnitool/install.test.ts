/** `cnitool install`: the binary and its links land in the bin dir; other files are kept unless --force. */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { runCnitool } from "#cnitool/cnitool.js";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import { installPlugins, installResidentUnits, removeResidentUnits, residentUnits, uninstallPlugins } from "./install.js";

test("install links every plugin to the copied binary and respects foreign files", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-install-"));
  try {
    const source = path.join(dir, "built-binary");
    writeFileSync(source, "#!/bin/sh\necho fake\n");
    const bin = path.join(dir, "bin");
    installPlugins(bin, { source });
    writeFileSync(path.join(bin, "mine"), "");
    assert.equal(readFileSync(path.join(bin, "tscni"), "utf8"), "#!/bin/sh\necho fake\n");
    const plugins = PROGRAM_NAMES;
    for (const name of plugins) assert.equal(readlinkSync(path.join(bin, name)), "tscni", name);
    assert.equal(existsSync(path.join(bin, "noop")), false, "test plugins are not installed");

    // A foreign plugin of the same name survives, unless forced.
    rmSync(path.join(bin, "bridge"));
    writeFileSync(path.join(bin, "bridge"), "foreign");
    const second = installPlugins(bin, { source });
    assert.deepEqual(
      second.skipped.map((s) => s.name),
      ["bridge"],
    );
    assert.equal(readFileSync(path.join(bin, "bridge"), "utf8"), "foreign");
    assert.ok(second.replaced.includes("host-local"), "our own links are refreshed");
    const forced = installPlugins(bin, { source, force: true });
    assert.ok(forced.replaced.includes("bridge"));
    assert.ok(lstatSync(path.join(bin, "bridge")).isSymbolicLink());
    assert.equal(readFileSync(path.join(bin, "mine"), "utf8"), "", "unrelated files untouched");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a standalone program is copied with the launcher beside it; the Node build is linked to, and says why", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-install-"));
  try {
    const build = path.join(dir, "build");
    mkdirSync(build);
    writeFileSync(path.join(build, "tscni-js"), "program");
    writeFileSync(path.join(build, "tscni"), "launcher");
    const bin = path.join(dir, "bin");
    const native = installPlugins(bin, { source: path.join(build, "tscni-js") });
    assert.deepEqual(native.program, { kind: "native", from: build });
    assert.equal(readFileSync(path.join(bin, "tscni-js"), "utf8"), "program");
    assert.equal(readFileSync(path.join(bin, "tscni"), "utf8"), "launcher");
    assert.equal(statSync(path.join(bin, "tscni-js")).mode & 0o777, 0o755);

    const entry = path.join(dir, "node/dist/cli/main.js");
    const node = installPlugins(path.join(dir, "node-bin"), { source: entry });
    assert.deepEqual(node.program, { kind: "node", entry, reason: `${entry} is the Node build` });
    assert.equal(readlinkSync(path.join(dir, "node-bin", "tscni")), entry);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("--resident writes a socket unit and a service the socket starts; --remove-resident removes only ours", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-units-"));
  try {
    const units = path.join(dir, "units");
    const bin = path.join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "cnitool"), "#!/bin/sh\n", { mode: 0o755 });
    const written = installResidentUnits(units, bin);
    assert.deepEqual(written, [path.join(units, "tscni.socket"), path.join(units, "tscni.service")]);
    const socket = readFileSync(written[0]!, "utf8");
    const service = readFileSync(written[1]!, "utf8");
    assert.match(socket, /^ListenStream=\/run\/tscni\/plugins\.sock$/m);
    assert.match(socket, /^SocketMode=0600$/m);
    assert.match(socket, /^DirectoryMode=0700$/m);
    assert.match(service, new RegExp(`^ExecStart=${bin}/cnitool daemon --idle 600 --socket /run/tscni/plugins\\.sock$`, "m"));
    assert.match(residentUnits("relative/bin").service, new RegExp(`^ExecStart=${path.resolve("relative/bin/cnitool")} `, "m"), "an absolute path");
    assert.match(service, /^Requires=tscni\.socket$/m);
    assert.doesNotMatch(service, /Private|Protect|Namespace/, "no sandboxing: the server shares the host's namespaces with its callers");
    assert.equal(statSync(written[1]!).mode & 0o777, 0o644);
    // systemd itself accepts them (when its tools are here: the integration suite requires them).
    const verify = spawnSync("systemd-analyze", ["verify", ...written], { encoding: "utf8" });
    if (!verify.error) assert.equal(verify.status, 0, verify.stderr);

    // Rewriting ours is fine; a foreign unit of the same name is kept unless forced.
    installResidentUnits(units, "/opt/cni/bin");
    assert.deepEqual(removeResidentUnits(units), written);
    assert.deepEqual(readdirSync(units), []);
    writeFileSync(path.join(units, "tscni.service"), "[Service]\nExecStart=/bin/true\n");
    assert.throws(() => installResidentUnits(units, "/opt/cni/bin"), /tscni\.service exists and is not tscni's/);
    assert.deepEqual(removeResidentUnits(units), [], "a foreign unit is not removed");
    installResidentUnits(units, "/opt/cni/bin", { force: true });
    assert.equal(removeResidentUnits(units).length, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("`cnitool install` into a directory of another implementation's plugins: names what it skipped and exits 1", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-install-"));
  try {
    const bin = path.join(dir, "bin");
    mkdirSync(bin);
    for (const name of ["bridge", "host-local"]) writeFileSync(path.join(bin, name), "a Go plugin");
    let stdout = "";
    let stderr = "";
    const io = {
      env: {},
      cwd: dir,
      stdout: (s: string) => {
        stdout += s;
      },
      stderr: (s: string) => {
        stderr += s;
      },
    };
    const code = await runCnitool(["install", "--bin-dir", bin], io);
    assert.equal(code, 1);
    assert.match(stderr, /^skipped bridge: .* exists and is not tscni's \(use --force to replace it\)$/m);
    assert.match(
      stderr,
      new RegExp(
        `^Error: 2 of ${PROGRAM_NAMES.length} plugin types were not installed: ${bin} holds programs of those names that are not tscni's, which still run \\(use --force to replace them\\)$`,
        "m",
      ),
    );
    assert.match(stdout, /^linked: /m, "the others are installed");
    assert.equal(readFileSync(path.join(bin, "bridge"), "utf8"), "a Go plugin");
    stderr = "";
    assert.equal(await runCnitool(["install", "--bin-dir", bin, "--force"], io), 0, stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("--conf checks each network config, then renames it into --conf-dir once every plugin is installed", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-install-"));
  try {
    const bin = path.join(dir, "bin");
    const confDir = path.join(dir, "net.d");
    const list = path.join(dir, "10-net.conflist");
    writeFileSync(list, JSON.stringify({ cniVersion: "1.0.0", name: "net", plugins: [{ type: "bridge" }] }));
    const broken = path.join(dir, "20-broken.conflist");
    writeFileSync(broken, '{"cniVersion": "1.0.0", "name": "broken"');
    let out = "";
    const io = {
      env: {},
      cwd: dir,
      stdout: (s: string) => {
        out += s;
      },
      stderr: (s: string) => {
        out += s;
      },
    };
    const install = (...more: string[]) => runCnitool(["install", "--bin-dir", bin, "--conf-dir", confDir, ...more], io);
    // A broken config stops the install before anything is written.
    assert.equal(await install("--conf", list, "--conf", broken), 1);
    assert.match(out, /20-broken\.conflist/);
    assert.equal(existsSync(bin), false, "no plugin installed");
    assert.equal(existsSync(confDir), false, "no config written");

    out = "";
    assert.equal(await install("--conf", list), 0, out);
    assert.deepEqual(readdirSync(confDir), ["10-net.conflist"], "the config, and no temporary file");
    assert.equal(readFileSync(path.join(confDir, "10-net.conflist"), "utf8"), readFileSync(list, "utf8"));
    assert.equal(statSync(path.join(confDir, "10-net.conflist")).mode & 0o777, 0o644);
    assert.match(out, new RegExp(`^wrote: ${confDir}/10-net.conflist$`, "m"));

    // With a foreign plugin left in place (no --force), the config is not written: it would run that plugin.
    rmSync(confDir, { recursive: true });
    rmSync(path.join(bin, "bridge"));
    writeFileSync(path.join(bin, "bridge"), "a Go plugin");
    out = "";
    assert.equal(await install("--conf", list), 1);
    assert.match(out, /the network configs were not written/);
    assert.equal(existsSync(confDir), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("`cnitool uninstall` removes exactly what install put there, never a foreign plugin", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-uninstall-"));
  try {
    const build = path.join(dir, "build");
    mkdirSync(build);
    writeFileSync(path.join(build, "tscni-js"), "program");
    writeFileSync(path.join(build, "tscni"), "\x7fELF... tscni launcher: ...");
    const bin = path.join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "bridge"), "Go's bridge");
    writeFileSync(path.join(bin, "whereabouts"), "another vendor's IPAM");
    installPlugins(bin, { source: path.join(build, "tscni-js") });
    const out: string[] = [];
    const code = await runCnitool(["uninstall", "--bin-dir", bin], { env: {}, cwd: dir, stdout: (s) => out.push(s), stderr: (s) => out.push(s) });
    assert.equal(code, 0, out.join(""));
    assert.deepEqual(readdirSync(bin).sort(), ["bridge", "whereabouts"], "only the foreign plugins are left");
    assert.equal(readFileSync(path.join(bin, "bridge"), "utf8"), "Go's bridge");
    assert.match(out.join(""), /removed: .*host-local.* tscni tscni-js\n/);
    assert.match(out.join(""), /left bridge: .* is not a link to tscni's launcher/);
    // A launcher of the same name that is not tscni's is left, and so is the program beside it.
    writeFileSync(path.join(bin, "tscni"), "someone else's");
    writeFileSync(path.join(bin, "tscni-js"), "?");
    assert.deepEqual(uninstallPlugins(bin).removed, []);
    assert.ok(existsSync(path.join(bin, "tscni-js")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
