/**
 * docs/runtimes.md's DaemonSet and uninstall, run: the install container's arguments (taken from the manifest, with
 * the node's /host/... and the ConfigMap's /config pointed at the test's directories), given to the image's
 * entrypoint `cnitool install` of a directory laid out as the image's /tscni/bin, over
 * a node directory holding another plugin and a foreign `bridge`; run again, as a restarted pod does; then the
 * uninstall block leaves only what is not tscni's. The containerd and podman blocks run in containerd.test.ts and
 * podman.test.ts; the manifest's Kubernetes shape is checked in src/docs-snippets.test.ts, and the real image run
 * with these arguments in src/cli/image.integration.test.ts. Run once, in the exec pass.
 */

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import { docSnippet, type ParsedDoc, parseSnippet, substitute } from "#testing/doc-snippets.js";
import { Cleanup, OUR_BIN, ROOT, runCommand, skipReason } from "#testing/harness.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";

const DOC = "docs/runtimes.md";
const skip = RESIDENT_PASS
  ? "docs/runtimes.md's install and uninstall run once, in the exec pass"
  : skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the native program and launcher are not built");
if (skip) console.log(`# skipping docs/runtimes.md's DaemonSet and uninstall: ${skip}`);

type Obj = ParsedDoc;

describe("docs/runtimes.md: the DaemonSet's install, then the uninstall", { skip }, () => {
  const cleanup = new Cleanup();
  after(() => cleanup.run());
  const base = skip ? "" : cleanup.dir("tscni-docrt-");
  const image = path.join(base, "image");
  const host = path.join(base, "host");
  const config = path.join(base, "config");
  const bin = path.join(host, "opt/cni/bin");
  const conf = path.join(host, "etc/cni/net.d");

  test("the install container puts the whole plugin directory and the config on the node, and again on a restart", async () => {
    const manifest = parseSnippet("yaml", docSnippet(DOC, "daemonset")) as Obj[];
    const [configMap, daemonSet] = manifest as [Obj, Obj];
    // The image: the release's plugin directory at /tscni/bin (the layout `cnitool install` and the tarball make).
    const made = await runCommand(path.join(OUR_BIN, "cnitool"), ["install", "--bin-dir", path.join(image, "tscni/bin")]);
    assert.equal(made.code, 0, made.stderr);
    mkdirSync(config);
    for (const [name, text] of Object.entries(configMap["data"] as Record<string, string>)) writeFileSync(path.join(config, name), text);
    // The node: host directories exist (DirectoryOrCreate), with a plugin of someone else's and a foreign bridge.
    mkdirSync(bin, { recursive: true });
    mkdirSync(conf, { recursive: true });
    writeFileSync(path.join(bin, "their-plugin"), "#!/bin/sh\nexit 0\n");
    writeFileSync(path.join(bin, "bridge"), "#!/bin/sh\necho go-bridge\n");
    chmodSync(path.join(bin, "their-plugin"), 0o755);
    chmodSync(path.join(bin, "bridge"), 0o755);

    // The image's entrypoint, `/tscni/bin/cnitool install` (scripts/image.mjs), given the container's arguments.
    const [install] = daemonSet["spec"]["template"]["spec"]["initContainers"] as Obj[];
    assert.equal(install!["command"], undefined, "the image's entrypoint runs");
    const args = substitute((install!["args"] as string[]).join("\n"), { "/host/": `${host}/`, "/config/": `${config}/` }).split("\n");
    for (const round of [1, 2]) {
      const r = await runCommand(path.join(image, "tscni/bin/cnitool"), ["install", ...args]);
      assert.equal(r.code, 0, `round ${round}: ${r.stdout}${r.stderr}`);
      assert.deepEqual(readdirSync(bin).sort(), [...PROGRAM_NAMES, "their-plugin", "tscni", "tscni-js"].sort(), `round ${round}`);
      assert.deepEqual(readdirSync(conf), ["10-tscni.conflist"], "the config, and no temporary file");
      assert.deepEqual(JSON.parse(readFileSync(path.join(conf, "10-tscni.conflist"), "utf8")), JSON.parse(docSnippet(DOC, "tscni-conflist")));
      const version = await runCommand(path.join(bin, "bridge"), [], { env: { CNI_COMMAND: "VERSION" }, input: '{"cniVersion":"1.0.0"}' });
      assert.equal(version.code, 0, version.stderr);
      assert.ok(JSON.parse(version.stdout).supportedVersions.includes("1.1.0"), "the node's bridge is tscni's (--force)");
    }
    const validated = await runCommand(path.join(bin, "cnitool"), ["validate", "tscni"], {
      env: { ...process.env, NETCONFPATH: conf, CNI_PATH: bin },
    });
    assert.equal(validated.code, 0, validated.stdout + validated.stderr);
  });

  test("uninstall leaves only what is not tscni's", async () => {
    assert.ok(existsSync(path.join(bin, "tscni-js")), "installed by the test before");
    const block = substitute(docSnippet(DOC, "uninstall"), { "/opt/cni/bin": bin, "/etc/cni/net.d": conf });
    // A /run of its own, so `daemon stop` cannot reach a server of the machine's.
    const script = ["set -e", "mount -t tmpfs tmpfs /run", "mkdir -p /etc/systemd/system && mount -t tmpfs tmpfs /etc/systemd/system", block].join(
      "\n",
    );
    const r = await runCommand("unshare", ["--mount", "--propagation", "private", "sh", "-c", script]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(readdirSync(bin), ["their-plugin"]);
    assert.deepEqual(readdirSync(conf), []);
  });
});
