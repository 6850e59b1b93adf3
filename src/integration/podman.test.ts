/**
 * The drop-in test: podman (Go libcni, CNI backend) pointed at our plugin directory runs containers that get
 * addresses, reach their gateway, publish a port, and leave nothing behind. Skips when podman, runc or a static
 * busybox are not installed. podman runs in a test-made "host" namespace, with sysfs remounted for it and the
 * host's cgroup mounts kept (runc needs them). TSCNI_PODMAN_PLUGIN_DIR=/usr/lib/cni runs the same test against
 * Go's plugins, to tell a harness problem from ours.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DEFAULT_DATA_DIR } from "#plugins/ipam/host-local/config.js";
import { docSnippet, substitute } from "#testing/doc-snippets.js";
import { Cleanup, type Netns, OUR_BIN, runCommand, runTag, skipReason } from "#testing/harness.js";
import { RESIDENT_PASS, type ResidentHost, startResidentHost } from "#testing/resident-host.js";

const CACHE = "/var/lib/cni/results";

function podmanSkipReason(): string | undefined {
  return skipReason(
    false,
    spawnSync("podman", ["--version"]).status !== 0 ? "podman is not installed" : undefined,
    spawnSync("runc", ["--version"]).status !== 0 ? "runc is not installed" : undefined,
    existsSync("/bin/busybox") ? undefined : "busybox-static is not installed",
  );
}
const skip = podmanSkipReason();
if (skip) console.log(`# skipping podman tests: ${skip}`);

/** A tiny HTTP GET (busybox wget is not reliable outside a container here), printing the body. */
const FETCH =
  'const [h,p]=process.argv.slice(1);const s=require("net").connect(+p,h,()=>s.write("GET / HTTP/1.0\\r\\n\\r\\n"));let d="";s.on("data",b=>d+=b);s.on("end",()=>{const i=d.indexOf("\\r\\n\\r\\n");if(i<0)process.exit(1);process.stdout.write(d.slice(i+4))});s.on("error",()=>process.exit(1));setTimeout(()=>process.exit(1),2000)';

describe("podman with tscni's plugin directory", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  const network = `tcpod${tag}`;
  let host: Netns;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let resident: ResidentHost | undefined;

  /**
   * Runs a command inside the test host namespace, with sysfs remounted for it and the host's cgroups. In the
   * resident pass every command shares the namespace's pinned mount namespace with its server, which then
   * serves podman's plugin calls.
   */
  const inHost = (command: string[]) => {
    if (resident) {
      return runCommand("nsenter", [`--net=${host.path}`, `--mount=${resident.mountNs}`, "--", ...command], {
        env: { ...env, TSCNI_RESIDENT_SOCKET: resident.socket },
      });
    }
    const cg = path.join(base, `cg-${Math.random().toString(16).slice(2, 8)}`);
    mkdirSync(cg);
    const script = 'mount --rbind /sys/fs/cgroup "$1" && mount -t sysfs sysfs /sys && mount --move "$1" /sys/fs/cgroup && shift && exec "$@"';
    return runCommand("nsenter", [`--net=${host.path}`, "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", cg, ...command], {
      env,
    });
  };
  const podman = (args: string[]) => inHost(["podman", ...args]);
  /** podman's libcni caches results in the default /var/lib/cni; this network's entries. */
  const cachedResults = () => (existsSync(CACHE) ? readdirSync(CACHE).filter((f) => f.startsWith(`${network}-`)) : []);
  const podmanScript = (script: string) => inHost(["sh", "-c", script]);

  before(async () => {
    host = cleanup.netns(`tscni-pod-${tag}`);
    base = cleanup.dir("tscni-podman-");
    if (RESIDENT_PASS) {
      const r = startResidentHost(host.name, cleanup.dir("tscni-rs-"), path.join(OUR_BIN, "cnitool"));
      cleanup.add(() => r.stop());
      resident = r;
    }
    const nofile = spawnSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).stdout.trim();
    const limit = nofile === "unlimited" ? "1048576" : nofile;
    writeFileSync(path.join(base, "storage.conf"), `[storage]\ndriver = "overlay"\ngraphroot = "${base}/storage"\nrunroot = "${base}/run/storage"\n`);
    writeFileSync(
      path.join(base, "containers.conf"),
      [
        "[containers]",
        'log_driver = "k8s-file"',
        `default_ulimits = ["nofile=${limit}:${limit}", "nproc=32768:32768"]`,
        "[engine]",
        'cgroup_manager = "cgroupfs"',
        'events_logger = "file"',
        `events_logfile_path = "${base}/run/events.log"`,
        'runtime = "runc"',
        `tmp_dir = "${base}/tmp"`,
        // docs/runtimes.md's [network] table, with the plugin directory under test, and a config directory of the test's.
        substitute(docSnippet("docs/runtimes.md", "podman-config"), {
          '"/opt/cni/bin"': JSON.stringify(process.env["TSCNI_PODMAN_PLUGIN_DIR"] ?? OUR_BIN),
        }).trimEnd(),
        `network_config_dir = "${base}/net.d"`,
        "",
      ].join("\n"),
    );
    mkdirSync(path.join(base, "net.d"));
    mkdirSync(path.join(base, "tmp"));
    writeFileSync(
      path.join(base, "net.d", `${network}.conflist`),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: network,
        plugins: [
          {
            type: "bridge",
            bridge: network,
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: { type: "host-local", dataDir: path.join(base, "ipam"), routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: "10.219.0.0/24" }]] },
          },
          { type: "portmap", capabilities: { portMappings: true } },
          { type: "firewall" },
          { type: "tuning" },
        ],
      }),
    );
    env = { ...process.env, CONTAINERS_CONF: path.join(base, "containers.conf"), CONTAINERS_STORAGE_CONF: path.join(base, "storage.conf") };
    // The IPAM store of the network `cnitool network create` makes is host-local's default (it writes no dataDir,
    // as podman's); removed after podman's own cleanup below (cleanup runs in reverse order).
    cleanup.add(() => rmSync(path.join(DEFAULT_DATA_DIR, `tcmade${tag}`), { recursive: true, force: true }));
    cleanup.add(() => {
      const ours = (f: string) => f.startsWith(`${network}-`) || f.startsWith(`tcmade${tag}-`);
      for (const f of existsSync(CACHE) ? readdirSync(CACHE).filter(ours) : []) rmSync(path.join(CACHE, f), { force: true });
      spawnSync("podman", ["rm", "-af", "-t", "0"], { env });
      spawnSync("podman", ["system", "reset", "-f"], { env });
      spawnSync("umount", ["-R", path.join(base, "storage")]);
    });
    // A minimal image: busybox, its applets, and a page to serve.
    const rootfs = path.join(base, "rootfs");
    mkdirSync(path.join(rootfs, "bin"), { recursive: true });
    mkdirSync(path.join(rootfs, "www"));
    writeFileSync(path.join(rootfs, "www", "index.html"), "hello from podman on tscni\n");
    copyFileSync("/bin/busybox", path.join(rootfs, "bin/busybox"));
    chmodSync(path.join(rootfs, "bin/busybox"), 0o755);
    for (const applet of ["sh", "ip", "httpd", "ping", "true", "nslookup", "cat"]) symlinkSync("busybox", path.join(rootfs, "bin", applet));
    spawnSync("tar", ["-C", rootfs, "-cf", path.join(base, "img.tar"), "."]);
    const imported = await podman(["import", "--change", 'CMD ["/bin/sh"]', path.join(base, "img.tar"), `localhost/tscni-test-${tag}:latest`]);
    assert.equal(imported.code, 0, imported.stderr);
  });
  after(() => cleanup.run());

  test("a container gets an address on our bridge and reaches its gateway", async () => {
    // Removed explicitly rather than with --rm: conmon's deferred cleanup would not see this test's podman config.
    const name = `tscni-sh-${tag}`;
    const r = await podmanScript(
      [
        `podman run --name ${name} --network ${network} localhost/tscni-test-${tag}:latest sh -c "ip -4 addr show eth0 && ping -c 1 -W 2 10.219.0.1"`,
        "rc=$?",
        `podman rm -f -t 0 ${name} >/dev/null || exit 11`,
        "exit $rc",
      ].join("\n"),
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /inet 10\.219\.0\.\d+\/24/);
    assert.match(r.stdout, /1 packets received/);
    assert.deepEqual(cachedResults(), [], "the network was torn down");
  });

  test("a network written by `cnitool network create` is listed and used by podman itself", async () => {
    const made = `tcmade${tag}`;
    const cnitool = (...args: string[]) =>
      host.run(path.join(OUR_BIN, "cnitool"), args, { env: { ...process.env, NETCONFPATH: path.join(base, "net.d"), CNI_PATH: OUR_BIN } });
    const created = await cnitool("network", "create", "--subnet", "10.218.0.0/24", made);
    assert.equal(created.code, 0, created.stderr);
    const ls = await podman(["network", "ls", "--format", "{{.Name}} {{.Driver}}"]);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, new RegExp(`^${made} bridge$`, "m"));
    const name = `tscni-made-${tag}`;
    const r = await podmanScript(
      [
        `podman run --name ${name} --network ${made} localhost/tscni-test-${tag}:latest sh -c "ip -4 addr show eth0 && ping -c 1 -W 2 10.218.0.1"`,
        "rc=$?",
        `podman rm -f -t 0 ${name} >/dev/null || exit 11`,
        "exit $rc",
      ].join("\n"),
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /inet 10\.218\.0\.\d+\/24/);
    const removed = await cnitool("network", "rm", made);
    assert.equal(removed.code, 0, removed.stderr);
  });

  test("a published port answers from the host, and removal leaves nothing behind", async () => {
    // One podman session (one mount namespace, where podman keeps the container's netns mount): start a web
    // server with a published port, fetch through the mapping from the host side, remove the container.
    const name = `tscni-web-${tag}`;
    const image = `localhost/tscni-test-${tag}:latest`;
    const script = [
      `podman run -d --name ${name} --network ${network} -p 18090:80 ${image} httpd -f -p 80 -h /www >/dev/null || exit 10`,
      `for i in $(seq 1 20); do page=$(${JSON.stringify(process.execPath)} -e ${JSON.stringify(FETCH)} 127.0.0.1 18090 2>/dev/null) && break; sleep 0.25; done`,
      'echo "PAGE:$page"',
      `podman rm -f -t 0 ${name} >/dev/null || exit 11`,
    ].join("\n");
    const r = await podmanScript(script);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /PAGE:hello from podman on tscni/);
    const nat = host.exec("iptables-save", ["-t", "nat"]);
    assert.doesNotMatch(nat, /--dport 18090/, "port mapping removed");
    assert.doesNotMatch(nat, /^:CNI-DN-/m);
    const ipam = path.join(base, "ipam", network);
    assert.deepEqual(existsSync(ipam) ? readdirSync(ipam).filter((f) => /^\d+\./.test(f)) : [], [], "addresses released");
    assert.deepEqual(cachedResults(), [], "podman's libcni removed its cached results");
  });

  test("docs/runtimes.md's podman commands: a network podman creates, a container on it, both removed", async () => {
    const made = `tcdoc${tag}`;
    cleanup.add(() => rmSync(path.join(DEFAULT_DATA_DIR, made), { recursive: true, force: true }));
    const script = substitute(docSnippet("docs/runtimes.md", "podman-run"), {
      tsnet: made,
      "--name hello": `--name hello-${tag}`,
      "rm hello": `rm hello-${tag}`,
      "docker.io/library/busybox": `localhost/tscni-test-${tag}:latest`,
    });
    const r = await podmanScript(`set -e\n${script}`);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /inet 10\.\d+\.\d+\.\d+\/24/);
    assert.deepEqual(existsSync(CACHE) ? readdirSync(CACHE).filter((f) => f.startsWith(`${made}-`)) : [], [], "torn down");
    assert.equal(existsSync(path.join(base, "net.d", `${made}.conflist`)), false, "the network removed");
  });

  test("a network podman creates gets dnsname: containers find each other by name and by alias; network rm takes it all away", async (t) => {
    if (!existsSync("/usr/sbin/dnsmasq")) return t.skip("dnsmasq (dnsmasq-base) is not installed");
    if (process.env["TSCNI_PODMAN_PLUGIN_DIR"] && !existsSync(path.join(process.env["TSCNI_PODMAN_PLUGIN_DIR"], "dnsname")))
      return t.skip("no dnsname in the plugin dir");
    const dnsnet = `tcdns${tag}`;
    const image = `localhost/tscni-test-${tag}:latest`;
    const [web, client] = [`web-${tag}`, `client-${tag}`];
    cleanup.add(() => rmSync(path.join(DEFAULT_DATA_DIR, dnsnet), { recursive: true, force: true }));
    const r = await podmanScript(
      [
        `podman network create ${dnsnet} >/dev/null || exit 10`,
        `echo CONF-BEGIN; cat ${path.join(base, "net.d", `${dnsnet}.conflist`)}; echo; echo CONF-END`,
        `podman run -d --name ${web} --network ${dnsnet} --network-alias db-${tag} ${image} httpd -f -p 80 -h /www >/dev/null || exit 12`,
        `podman run --name ${client} --network ${dnsnet} ${image} sh -c "cat /etc/resolv.conf; nslookup ${web} && nslookup db-${tag}"`,
        "rc=$?",
        `podman inspect -f '{{.NetworkSettings.Networks.${dnsnet}.IPAddress}}' ${web} | sed 's/^/WEB:/'`,
        `podman rm -f -t 0 ${client} ${web} >/dev/null || exit 13`,
        `podman network rm ${dnsnet} >/dev/null || exit 14`,
        "exit $rc",
      ].join("\n"),
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const conflist = JSON.parse(r.stdout.slice(r.stdout.indexOf("CONF-BEGIN") + 10, r.stdout.indexOf("CONF-END"))) as {
      plugins: Array<{ type: string }>;
    };
    assert.deepEqual(
      conflist.plugins.map((p) => p.type),
      ["bridge", "portmap", "firewall", "tuning", "dnsname"],
      "podman found our dnsname",
    );
    assert.match(r.stdout, /^search dns\.podman/m);
    const webAddress = /^WEB:(\S+)$/m.exec(r.stdout)?.[1];
    assert.ok(webAddress, r.stdout);
    const answers = [...r.stdout.matchAll(/^Name:\s+(\S+)\s*\nAddress(?: 1)?:\s+(\S+)/gm)].map((m) => [m[1], m[2]]);
    assert.deepEqual(
      answers,
      [
        [`${web}.dns.podman`, webAddress],
        [`db-${tag}.dns.podman`, webAddress],
      ],
      r.stdout,
    );
    // Gone with the network: its dnsmasq and files (dnsname's DEL of the last container) and its bridge (network rm).
    assert.equal(existsSync(`/run/containers/cni/dnsname/${dnsnet}`), false, "dnsname's files removed");
    assert.doesNotMatch(host.exec("ip", ["-o", "link", "show", "type", "bridge"]), /cni-podman/, "the bridge removed");
    assert.deepEqual(existsSync(CACHE) ? readdirSync(CACHE).filter((f) => f.startsWith(`${dnsnet}-`)) : [], []);
  });
});
