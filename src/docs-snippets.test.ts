/**
 * The operator's docs (docs/runtimes.md, docs/resident.md) hold only blocks a test uses: every block has an id
 * (src/testing/doc-snippets.ts) that a test names. Checked here, without root: the TOML blocks parse (Python's
 * tomllib) with the keys their runtime reads; the network config loads as a conflist whose plugins are all ours;
 * the DaemonSet manifest parses as YAML (python3-yaml) and holds what Kubernetes requires of a ConfigMap and a
 * DaemonSet (selector matching the template's labels, containers with images, every volume mount declared, host
 * paths absolute), its ConfigMap carrying the same network config; its init container runs this version's installer
 * image with arguments on its volumes. The rest run in src/integration (docs-runtimes, docs-resident, podman,
 * containerd).
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { PROGRAM_NAMES } from "#plugins/catalog.js";
import { parseConfList } from "#spec/config.js";
import { docBlocks, docSnippet, type ParsedDoc, parseSnippet, TESTED_DOCS } from "#testing/doc-snippets.js";
import { ROOT } from "#testing/harness.js";

const RUNTIMES = "docs/runtimes.md";

/** Every test source's text (where a block's id must be named). */
function testSources(dir = path.join(ROOT, "src")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return testSources(full);
    return e.name.endsWith(".test.ts") ? [readFileSync(full, "utf8")] : [];
  });
}

type Obj = ParsedDoc;

test("every block of the operator's docs has an id that a test names", () => {
  const sources = testSources();
  const problems: string[] = [];
  for (const doc of TESTED_DOCS) {
    const blocks = docBlocks(doc);
    assert.ok(blocks.length > 0, `${doc} has blocks`);
    const ids = blocks.map((b) => b.id);
    for (const b of blocks) {
      if (b.lang === "text" && b.id === "output") continue; // an example of output
      if (!b.id) problems.push(`${doc}: a \`\`\`${b.lang} block without an id:\n${b.text.split("\n")[0]}`);
      else if (ids.filter((i) => i === b.id).length > 1) problems.push(`${doc}: the id ${b.id} twice`);
      else if (!sources.some((s) => s.includes(`"${b.id}"`))) problems.push(`${doc}: no test names the block ${b.id}`);
    }
  }
  assert.deepEqual(problems, []);
});

test("the TOML blocks parse, with the keys each runtime reads", () => {
  const ctrd = parseSnippet("toml", docSnippet(RUNTIMES, "containerd-config")) as Obj;
  assert.equal(ctrd["version"], 2);
  assert.deepEqual(ctrd["plugins"]["io.containerd.grpc.v1.cri"]["cni"], { bin_dir: "/opt/cni/bin", conf_dir: "/etc/cni/net.d" });
  const ctrd2 = parseSnippet("toml", docSnippet(RUNTIMES, "containerd2-config")) as Obj;
  assert.equal(ctrd2["version"], 3);
  assert.deepEqual(ctrd2["plugins"]["io.containerd.cri.v1.runtime"]["cni"], { bin_dirs: ["/opt/cni/bin"], conf_dir: "/etc/cni/net.d" });
  const crio = parseSnippet("toml", docSnippet(RUNTIMES, "crio-config")) as Obj;
  assert.deepEqual(crio["crio"]["network"], { network_dir: "/etc/cni/net.d/", plugin_dirs: ["/opt/cni/bin/"] });
  const podman = parseSnippet("toml", docSnippet(RUNTIMES, "podman-config")) as Obj;
  assert.deepEqual(podman["network"], { network_backend: "cni", cni_plugin_dirs: ["/opt/cni/bin"] });
});

test("the network config loads as a conflist of tscni's plugins", () => {
  const list = parseConfList(docSnippet(RUNTIMES, "tscni-conflist"));
  assert.equal(list.name, "tscni");
  for (const plugin of list.plugins) assert.ok(PROGRAM_NAMES.includes(plugin.network.type), `${plugin.network.type} is a plugin of ours`);
});

test("the DaemonSet manifest is a ConfigMap and a DaemonSet as Kubernetes requires them, installing the doc's config", () => {
  const docs = parseSnippet("yaml", docSnippet(RUNTIMES, "daemonset")) as Obj[];
  assert.deepEqual(
    docs.map((d) => `${d["apiVersion"]} ${d["kind"]}`),
    ["v1 ConfigMap", "apps/v1 DaemonSet"],
  );
  for (const d of docs) {
    assert.match(d["metadata"]["name"], /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a DNS-1123 name");
    assert.equal(d["metadata"]["namespace"], "kube-system");
  }
  const [configMap, daemonSet] = docs as [Obj, Obj];
  const conflist = configMap["data"]["10-tscni.conflist"];
  assert.deepEqual(JSON.parse(conflist), JSON.parse(docSnippet(RUNTIMES, "tscni-conflist")), "the ConfigMap holds the doc's network config");

  const spec = daemonSet["spec"];
  const labels = spec["template"]["metadata"]["labels"];
  for (const [k, v] of Object.entries(spec["selector"]["matchLabels"] as Obj)) assert.equal(labels[k], v, `the selector's ${k} matches the template`);
  const pod = spec["template"]["spec"];
  const volumes = new Map<string, Obj>((pod["volumes"] as Obj[]).map((v) => [v["name"], v]));
  const containers = [...pod["initContainers"], ...pod["containers"]] as Obj[];
  assert.equal(new Set(containers.map((c) => c["name"])).size, containers.length, "container names are unique");
  for (const c of containers) {
    assert.equal(typeof c["image"], "string", `${c["name"]} has an image`);
    for (const m of (c["volumeMounts"] ?? []) as Obj[]) {
      assert.ok(volumes.has(m["name"]), `${c["name"]} mounts the declared volume ${m["name"]}`);
      assert.ok(path.isAbsolute(m["mountPath"]), `${m["mountPath"]} is absolute`);
    }
  }
  for (const v of volumes.values()) {
    if (v["hostPath"]) assert.ok(path.isAbsolute(v["hostPath"]["path"]) && ["DirectoryOrCreate", "Directory"].includes(v["hostPath"]["type"]));
    if (v["configMap"]) assert.equal(v["configMap"]["name"], configMap["metadata"]["name"], "the config volume is the ConfigMap");
  }
  const [install] = pod["initContainers"] as Obj[];
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
  assert.match(install!["image"], new RegExp(`/tscni/installer:${version.replaceAll(".", "\\.")}$`), "this version's installer image");
  assert.equal(install!["command"], undefined, "the image's entrypoint, cnitool install, runs");
  const args = install!["args"] as string[];
  assert.ok(args.includes("--bin-dir=/host/opt/cni/bin") && args.includes("--conf-dir=/host/etc/cni/net.d"), args.join(" "));
  const mounts = (install!["volumeMounts"] as Obj[]).map((m) => m["mountPath"]);
  for (const a of args.filter((a) => /^--(bin-dir|conf-dir|conf)=/.test(a))) {
    const dir = a.split("=")[1]!;
    assert.ok(
      mounts.some((m) => dir === m || dir.startsWith(`${m}/`)),
      `${a} is on a mounted volume`,
    );
  }
});

test("the image loads as the archive npm run release:image writes", () => {
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
  assert.equal(docSnippet(RUNTIMES, "image-load").trim(), `podman load -i tscni-installer-${version}.oci.tar`);
});

test("README's two commands: the demo's script and the test command .ci/run runs, both in the repository", () => {
  const lines = docSnippet("README.md", "two-commands")
    .trim()
    .split("\n")
    .map((l) => l.replace(/#.*/, "").trim());
  assert.deepEqual(lines, ["bash scripts/demo.sh", "bash scripts/test.sh"]);
  for (const script of ["scripts/demo.sh", "scripts/test.sh"]) assert.ok(readFileSync(path.join(ROOT, script), "utf8").startsWith("#!"), script);
  assert.match(readFileSync(path.join(ROOT, ".ci/run"), "utf8"), /^exec bash scripts\/test\.sh$/m, "CI runs exactly the README's test command");
  // The release route's first line is the package's release script, after the setup and npm ci.
  assert.equal(docSnippet("README.md", "release-build").trim(), "bash scripts/setup.sh && npm ci && npm run release");
  const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts["release"], "node scripts/release.mjs");
  assert.equal(docSnippet("README.md", "install-checkout").trim().split("\n")[0], "npm ci && npm run build");
});
