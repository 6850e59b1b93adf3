/**
 * `cnitool network create`'s file as podman 4.3 writes it: dnsname appended to a bridge network when a `dnsname`
 * program is in CNI_PATH (never with --disable-dns, never on an internal network, never on macvlan/ipvlan), the
 * keys in podman's order, and `dnsEnabled` read back from the plugin list. Nothing here touches the host: the
 * files go to a temp directory and no plugin runs.
 */

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { runCnitool } from "./cnitool.js";
import { hasDnsnamePlugin } from "./network.js";

const tempDir = useTempDirs("tscni-network-");

/** A plugin directory, with a `dnsname` program in it when asked. */
function pluginDir(withDnsname: boolean): string {
  const dir = tempDir();
  if (withDnsname) {
    writeFileSync(path.join(dir, "dnsname"), "#!/bin/sh\nexit 0\n");
    chmodSync(path.join(dir, "dnsname"), 0o755);
  }
  return dir;
}

/** Runs `cnitool network ...` in-process against a fresh NETCONFPATH. */
async function network(args: string[], cniPath: string, confDir = tempDir()) {
  let stdout = "";
  let stderr = "";
  const env = { PATH: process.env["PATH"], NETCONFPATH: confDir, CNI_PATH: cniPath };
  const code = await runCnitool(["network", ...args], {
    env,
    cwd: "/",
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
  });
  return { code, stdout, stderr, confDir };
}

/** Creates a network and returns its file's text and parsed config. */
async function create(args: string[], cniPath: string) {
  const name = args[args.length - 1]!;
  const r = await network(["create", ...args], cniPath);
  assert.equal(r.code, 0, r.stderr);
  const text = readFileSync(path.join(r.confDir, `${name}.conflist`), "utf8");
  return { ...r, text, config: JSON.parse(text) as { plugins: Array<Record<string, unknown>> } & Record<string, unknown> };
}

const DNSNAME_ENTRY = { type: "dnsname", domainName: "dns.podman", capabilities: { aliases: true } };
const types = (config: { plugins: Array<Record<string, unknown>> }) => config.plugins.map((p) => p["type"]);

describe("network create and dnsname", () => {
  test("without a dnsname program the plugin list ends at tuning", async () => {
    const { config, stderr } = await create(["--subnet", "10.249.1.0/24", "plain"], pluginDir(false));
    assert.deepEqual(types(config), ["bridge", "portmap", "firewall", "tuning"]);
    assert.equal(stderr, "");
  });

  test("with one, the file is podman 4.3's: dnsname after tuning, keys in podman's order", async () => {
    const { text, config, confDir } = await create(
      ["--subnet", "10.249.2.0/24", "--label", "team=a", "withdns"],
      `${pluginDir(false)}:${pluginDir(true)}`,
    );
    const bridge = String(config.plugins[0]!["bridge"]);
    assert.match(bridge, /^cni-podman\d+$/);
    assert.equal(
      text,
      JSON.stringify(
        {
          args: { podman_labels: { team: "a" } },
          cniVersion: "0.4.0",
          name: "withdns",
          plugins: [
            {
              type: "bridge",
              bridge,
              isGateway: true,
              ipMasq: true,
              hairpinMode: true,
              ipam: { type: "host-local", routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: "10.249.2.0/24", gateway: "10.249.2.1" }]] },
              capabilities: { ips: true },
            },
            { type: "portmap", capabilities: { portMappings: true } },
            { type: "firewall", backend: "" },
            { type: "tuning" },
            DNSNAME_ENTRY,
          ],
        },
        null,
        3,
      ),
    );
    const ls = await network(["ls", "--format", "json"], "", confDir);
    assert.deepEqual(
      (JSON.parse(ls.stdout) as Array<{ name: string; dnsEnabled: boolean }>).map((n) => [n.name, n.dnsEnabled]),
      [["withdns", true]],
    );
  });

  test("an mtu goes before hairpinMode, as podman writes it", async () => {
    const { config } = await create(["--subnet", "10.249.3.0/24", "-o", "mtu=1400", "mtu"], pluginDir(true));
    assert.deepEqual(Object.keys(config.plugins[0]!), ["type", "bridge", "isGateway", "ipMasq", "mtu", "hairpinMode", "ipam", "capabilities"]);
    assert.deepEqual(config.plugins[4], DNSNAME_ENTRY);
  });

  test("--disable-dns leaves it out", async () => {
    const { config, confDir } = await create(["--subnet", "10.249.4.0/24", "--disable-dns", "nodns"], pluginDir(true));
    assert.deepEqual(types(config), ["bridge", "portmap", "firewall", "tuning"]);
    const ls = await network(["ls", "--format", "json"], "", confDir);
    assert.equal((JSON.parse(ls.stdout) as Array<{ dnsEnabled: boolean }>)[0]!.dnsEnabled, false);
  });

  test("an internal network gets none, with podman's warning", async () => {
    const { config, stderr } = await create(["--subnet", "10.249.5.0/24", "--internal", "inside"], pluginDir(true));
    assert.deepEqual(types(config), ["bridge", "portmap", "firewall", "tuning"]);
    assert.equal(stderr, "Warning: dnsname and internal networks are incompatible: dnsname plugin not configured for network inside\n");
    const quiet = await create(["--subnet", "10.249.6.0/24", "--internal", "--disable-dns", "inside2"], pluginDir(true));
    assert.equal(quiet.stderr, "", "no warning when DNS was not asked for");
  });

  test("macvlan and ipvlan networks get none, and podman's plugin object", async () => {
    const dhcp = await create(["-d", "macvlan", "-o", "parent=lo", "lan"], pluginDir(true));
    assert.equal(
      dhcp.text,
      JSON.stringify({ cniVersion: "0.4.0", name: "lan", plugins: [{ type: "macvlan", master: "lo", ipam: { type: "dhcp" } }] }, null, 3),
    );
    const local = await create(
      ["-d", "ipvlan", "-o", "parent=lo", "-o", "mode=l2", "-o", "mtu=1400", "--subnet", "10.249.7.0/24", "lan2"],
      pluginDir(true),
    );
    assert.equal(
      local.text,
      JSON.stringify(
        {
          cniVersion: "0.4.0",
          name: "lan2",
          plugins: [
            {
              type: "ipvlan",
              master: "lo",
              ipam: { type: "host-local", routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: "10.249.7.0/24", gateway: "10.249.7.1" }]] },
              mtu: 1400,
              mode: "l2",
              capabilities: { ips: true },
            },
          ],
        },
        null,
        3,
      ),
    );
  });
});

describe("hasDnsnamePlugin", () => {
  test("a regular file named dnsname in any of the directories, as libcni finds plugins", () => {
    assert.equal(hasDnsnamePlugin([]), false);
    assert.equal(hasDnsnamePlugin([pluginDir(false)]), false);
    assert.equal(hasDnsnamePlugin([pluginDir(false), pluginDir(true)]), true);
    const withDirectory = tempDir();
    mkdirSync(path.join(withDirectory, "dnsname"));
    assert.equal(hasDnsnamePlugin([withDirectory]), false, "a directory is no program");
  });
});
