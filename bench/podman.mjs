// podman `run --rm` with the CNI backend, once with our plugin dir and once with Go's: the end-to-end cost a
// user sees per container. Everything podman keeps (config, storage, run state, network config) lives in a
// scratch dir; the caller runs this inside the benchmark's own host namespace.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export const podmanAvailable = () =>
  spawnSync("podman", ["--version"]).status === 0 && spawnSync("runc", ["--version"]).status === 0 && existsSync("/bin/busybox");
/** podman's own network backend (Debian's netavark package), measured beside the CNI plugins when installed. */
export const netavarkAvailable = () => existsSync("/usr/lib/podman/netavark") || existsSync("/usr/libexec/podman/netavark");

const SUBNETS = { ours: "10.238.1.0/24", go: "10.238.2.0/24", resident: "10.238.3.0/24", netavark: "10.238.4.0/24" };

/**
 * Prepares podman configs for each plugin dir (and extra environment per implementation, which podman's plugin
 * calls inherit); returns a runner per implementation and a cleanup. Two more runners: `none`, the floor
 * (`--network none`: the same container with no network at all), and, when installed, `netavark` (podman's own
 * backend, its default since podman 5, on a bridge network of its own with the same firewall work: masquerade
 * and port-mapping chains). With `publish` ("HOST:CONTAINER"), every networked container publishes that port
 * (`-p`: portmap's rules, netavark's port chains); the floor cannot and does not.
 */
export function setupPodman(pluginDirs, pluginTypes, extraEnv = {}, { publish } = {}) {
  const base = mkdtempSync(path.join(os.tmpdir(), "tscni-bench-podman-"));
  const nofile = execFileSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).trim();
  const storage = path.join(base, "storage.conf");
  writeFileSync(storage, `[storage]\ndriver = "overlay"\ngraphroot = "${base}/storage"\nrunroot = "${base}/run/storage"\n`);
  const envs = {};
  for (const [impl, dir] of Object.entries(pluginDirs)) {
    const netd = path.join(base, `net.d-${impl}`);
    mkdirSync(netd, { recursive: true });
    const plugins = [
      {
        type: "bridge",
        bridge: `tbp${impl[0]}0`,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: "host-local", routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: SUBNETS[impl] }]], dataDir: path.join(base, `ipam-${impl}`) },
      },
      ...pluginTypes.filter((t) => t !== "bridge").map((type) => (type === "portmap" ? { type, capabilities: { portMappings: true } } : { type })),
    ];
    writeFileSync(path.join(netd, "bench.conflist"), JSON.stringify({ cniVersion: "0.4.0", name: "tscnibench", plugins }, null, 2));
    const conf = path.join(base, `containers-${impl}.conf`);
    writeFileSync(
      conf,
      [
        "[containers]",
        'log_driver = "k8s-file"',
        `default_ulimits = ["nofile=${nofile === "unlimited" ? 1048576 : nofile}:${nofile === "unlimited" ? 1048576 : nofile}", "nproc=32768:32768"]`,
        "[engine]",
        'cgroup_manager = "cgroupfs"',
        'events_logger = "file"',
        `events_logfile_path = "${base}/run/events.log"`,
        'runtime = "runc"',
        `tmp_dir = "${base}/tmp"`,
        // podman's container cleanup (the DEL) runs from conmon, whose environment is this list, not podman's.
        `conmon_env_vars = ${JSON.stringify(["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ...Object.entries(extraEnv[impl] ?? {}).map(([k, v]) => `${k}=${v}`)])}`,
        "[network]",
        'network_backend = "cni"',
        `cni_plugin_dirs = ["${dir}"]`,
        `network_config_dir = "${netd}"`,
        "",
      ].join("\n"),
    );
    envs[impl] = { ...process.env, ...extraEnv[impl], CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage };
  }
  const withNetavark = netavarkAvailable();
  if (withNetavark) {
    const conf = path.join(base, "containers-netavark.conf");
    writeFileSync(
      conf,
      readFileSync(path.join(base, `containers-${Object.keys(pluginDirs)[0]}.conf`), "utf8").replace(
        /\[network\][\s\S]*$/,
        `[network]\nnetwork_backend = "netavark"\nnetwork_config_dir = "${base}/net-netavark"\n`,
      ),
    );
    envs.netavark = { ...process.env, CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage };
  }
  mkdirSync(path.join(base, "tmp"), { recursive: true });
  // A minimal image: busybox and its applets.
  const rootfs = path.join(base, "rootfs");
  mkdirSync(path.join(rootfs, "bin"), { recursive: true });
  copyFileSync("/bin/busybox", path.join(rootfs, "bin/busybox"));
  chmodSync(path.join(rootfs, "bin/busybox"), 0o755);
  for (const applet of ["sh", "true"]) symlinkSync("busybox", path.join(rootfs, "bin", applet));
  execFileSync("tar", ["-C", rootfs, "-cf", path.join(base, "img.tar"), "."]);
  const first = Object.values(envs)[0];
  execFileSync("podman", ["import", "--change", 'CMD ["/bin/sh"]', path.join(base, "img.tar"), "localhost/tscni-bench:latest"], {
    env: first,
    stdio: "ignore",
  });

  if (withNetavark) {
    execFileSync("podman", ["network", "create", "--subnet", SUBNETS.netavark, "--disable-dns", "tscnibench"], {
      env: envs.netavark,
      stdio: "ignore",
    });
  }

  const runners = {};
  for (const impl of [...Object.keys(pluginDirs), "none", ...(withNetavark ? ["netavark"] : [])]) {
    const env = impl === "none" ? first : envs[impl];
    const network = impl === "none" ? "none" : "tscnibench";
    runners[impl] = () => {
      const t0 = process.hrtime.bigint();
      const ports = publish && impl !== "none" ? ["-p", publish] : [];
      const r = spawnSync("podman", ["run", "--rm", "--network", network, ...ports, "localhost/tscni-bench:latest", "true"], {
        env,
        encoding: "utf8",
      });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0) throw new Error(`podman run (${impl}) failed: ${r.stderr}`);
      return ms;
    };
  }
  const cleanup = () => {
    spawnSync("podman", ["rm", "-af"], { env: first, stdio: "ignore" });
    if (withNetavark) spawnSync("podman", ["network", "rm", "-f", "tscnibench"], { env: envs.netavark, stdio: "ignore" });
    spawnSync("podman", ["system", "reset", "-f"], { env: first, stdio: "ignore" });
    spawnSync("umount", ["-R", path.join(base, "storage")], { stdio: "ignore" });
    rmSync(base, { recursive: true, force: true });
  };
  return { runners, cleanup };
}
