// containerd's CRI (kubelet's path): RunPodSandbox + StopPodSandbox + RemovePodSandbox against a private containerd
// whose CNI bin_dir is one plugin directory, once with ours and once with Go's. Uses the end-to-end test's
// private-containerd rig (dist-test/testing/containerd.js); the caller runs this inside the benchmark's own host
// namespace, where each containerd gets a private mount namespace, or (pinned) shares the benchmark's.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const rig = await import(path.join(ROOT, "dist-test/testing/containerd.js"));
const CACHE = "/var/lib/cni/results";
const POD_NAMESPACE = "tscni-bench";

/** Why the containerd scenario cannot run here, or undefined. */
export const containerdSkipReason = () => rig.containerdSkipReason();

/** The meta plugins of the chain (after bridge), as both directories have them. */
export const CONTAINERD_CHAIN = ["portmap", "firewall", "tuning", "bandwidth"];

const SUBNETS = { ours: "10.237.1.0/24", go: "10.237.2.0/24", resident: "10.237.3.0/24", none: "10.237.4.0/24" };

/**
 * Starts a private containerd for one plugin dir; resolves to a runner (one sandbox run+stop+remove, in ms) with
 * a teardown() that stops containerd and removes everything it left. `pinned`: run containerd in that mount
 * namespace with that environment (as a node's containerd shares the host's with the resident server) instead
 * of a private one. impl "none" is the floor: its sandboxes are hostNetwork pods (the node's network namespace, so
 * containerd calls no plugin), with everything else as for the others.
 */
export async function setupContainerd(binDir, impl, pinned) {
  const base = mkdtempSync(path.join(os.tmpdir(), `tscni-bench-ctrd-${impl}-`));
  const network = `tscnibenchctrd${impl}`;
  const cacheEntries = () =>
    (existsSync(CACHE) ? readdirSync(CACHE) : []).filter(
      (f) =>
        f.startsWith(`${network}-`) ||
        (f.startsWith("cni-loopback-") && readFileSync(path.join(CACHE, f), "utf8").includes(`["K8S_POD_NAMESPACE","${POD_NAMESPACE}-${impl}"]`)),
    );
  let ctrd;
  const teardown = async () => {
    await ctrd?.stop();
    for (const f of cacheEntries()) rmSync(path.join(CACHE, f), { force: true });
    rmSync(base, { recursive: true, force: true });
  };
  try {
    const confDir = path.join(base, "net.d");
    mkdirSync(confDir);
    const plugins = [
      {
        type: "bridge",
        bridge: `tbc${impl[0]}0`,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: "host-local", dataDir: path.join(base, "ipam"), routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: SUBNETS[impl] }]] },
      },
      ...CONTAINERD_CHAIN.map((type) => ({
        type,
        dataDir: path.join(base, type),
        ...(type === "portmap" ? { capabilities: { portMappings: true } } : type === "bandwidth" ? { capabilities: { bandwidth: true } } : {}),
      })),
    ];
    writeFileSync(path.join(confDir, `10-${network}.conflist`), JSON.stringify({ cniVersion: "1.0.0", name: network, plugins }, null, 2));
    const sandboxImage = `localhost/tscni-bench-pause-${impl}:v1`;
    const imageArchive = rig.buildPauseImage(base, sandboxImage);
    const cniBinDir = rig.linkPluginDir(path.join(base, "cni-bin"), binDir);
    mkdirSync(path.join(base, "containerd"));
    ctrd = await rig.PrivateContainerd.start({
      base: path.join(base, "containerd"),
      cniBinDir,
      cniConfDir: confDir,
      sandboxImage,
      imageArchive,
      ...(pinned ? { pinned } : {}),
    });
  } catch (err) {
    await teardown();
    throw err;
  }
  let counter = 0;
  const runner = async () => {
    const name = `bench${++counter}`;
    const config = {
      metadata: { name, uid: `uid-${impl}-${name}`, namespace: `${POD_NAMESPACE}-${impl}`, attempt: 0 },
      // A hostNetwork pod shares the node's UTS namespace too: no hostname of its own (as kubelet sends it).
      ...(impl === "none" ? {} : { hostname: name }),
      linux: { cgroupParent: ctrd.cgroupParent, ...(impl === "none" ? { securityContext: { namespaceOptions: { network: "NODE" } } } : {}) },
    };
    const t0 = process.hrtime.bigint();
    const id = await ctrd.cri.runPodSandbox(config);
    await ctrd.cri.stopPodSandbox(id);
    await ctrd.cri.removePodSandbox(id);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  runner.teardown = teardown;
  return runner;
}
