// One run of the pods scenario (bench/pods.mjs): a PodNetworkManager (tscni/runtime) with one plugin directory
// sets up N pods at once, then tears them all down at once. Prints one JSON line: phase times (ms), failures
// (with the first messages). Run with Bun (node_modules/.bin/bun), for ours and for Go's plugins alike, so only
// the plugins differ; with --in-process tscni's own plugins run inside this process (the manager's fast path),
// otherwise every plugin is exec'd.
//
//   bun bench/pod-driver.mjs '{"binDir": ..., "pods": 100, "confDir": ..., "cacheDir": ..., "inProcess": true, "tag": "o"}'
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const opts = JSON.parse(process.argv[2]);
const { PodNetworkManager } = await import(path.join(ROOT, "dist/runtime/index.js"));

let exec;
if (opts.inProcess) {
  const { MulticallExec } = await import(path.join(ROOT, "dist/plugins/inprocess.js"));
  const { setDefaultExec } = await import(path.join(ROOT, "dist/invoke/plugin.js"));
  exec = new MulticallExec(realpathSync(path.join(ROOT, "dist/tscni-js")));
  setDefaultExec(exec); // delegations (bridge -> host-local) too
}

const manager = new PodNetworkManager({ confDir: opts.confDir, pluginDirs: [opts.binDir], cacheDir: opts.cacheDir, ...(exec ? { exec } : {}) });
await manager.start();
const pods = Array.from({ length: opts.pods }, (_, i) => ({
  id: `bench-${opts.tag}-${i}`,
  name: `pod${i}`,
  namespace: `bench-${opts.tag}`,
  uid: `uid-${i}`,
  netns: `/run/netns/tbp-${opts.tag}-${i}`,
}));
for (const p of pods) execFileSync("ip", ["netns", "add", path.basename(p.netns)]);

const failures = [];
const phase = async (work) => {
  const t0 = performance.now();
  const results = await Promise.allSettled(pods.map(work));
  for (const r of results) if (r.status === "rejected") failures.push(r.reason?.message ?? String(r.reason));
  return performance.now() - t0;
};
const network = manager.defaultNetwork().name;
const setupMs = await phase((p, i) =>
  manager.setUpPod({
    ...p,
    runtimeConfig: { [network]: { portMappings: [{ hostPort: 20000 + i, containerPort: 80, protocol: "tcp" }] } },
  }),
);
const setupFailures = failures.length;
const teardownMs = await phase((p) => manager.tearDownPod(p));
for (const p of pods) execFileSync("ip", ["netns", "delete", path.basename(p.netns)]);
manager.close();
// This process's own CPU time (user + system; its children's not included), the manager's share of the run.
const cpu = process.cpuUsage();
const driverCpuMs = (cpu.user + cpu.system) / 1000;
console.log(
  JSON.stringify({
    setupMs,
    teardownMs,
    driverCpuMs,
    setupFailures,
    teardownFailures: failures.length - setupFailures,
    firstFailures: failures.slice(0, 3),
  }),
);
