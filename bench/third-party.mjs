// A third-party plugin written per docs/plugin-author.md (its mtu-chain example, taken from the guide), run the
// two ways the guide installs it: built native by tscni-build-plugin (the launcher and the Bun-compiled program)
// and run by Node (the guide's sh script), beside Go's plugin of the same logic: Debian's tuning with `mtu` (a
// chained plugin that sets the container interface's MTU and passes the result on; no Go toolchain is needed).
// Measured: VERSION, and a chain ADD+DEL through libcni (Go's ptp and host-local, then the plugin) in a fresh
// namespace, and the same chain without the plugin (the floor: what the plugin adds is the difference). Used by bench/run.mjs (the scenario "third-party plugin").
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const GO = "/usr/lib/cni";
/** How each row runs the plugin: its label, and the plugin type its chain names. */
export const THIRD_PARTY_WAYS = {
  native: "built native (tscni-build-plugin: launcher + Bun program)",
  program: "the Bun program alone (mtu-chain-js, no launcher)",
  node: "under Node (the guide's script: `exec node mtu-chain.mjs`)",
  go: "Go: Debian's tuning with `mtu` (the same logic)",
  floor: "no chained plugin (the floor: Go's ptp and host-local alone)",
};

/** Builds the guide's plugin in `scratch` both ways; returns each way's plugin directory (with ptp and host-local). */
function build(root, scratch) {
  const project = path.join(scratch, "third-party");
  mkdirSync(path.join(project, "node_modules"), { recursive: true });
  symlinkSync(root, path.join(project, "node_modules/tscni"));
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "mtu-chain", private: true }));
  const guide = readFileSync(path.join(root, "docs/plugin-author.md"), "utf8");
  writeFileSync(path.join(project, "mtu-chain.mts"), /```ts\n([\s\S]*?)```/.exec(guide)[1]);
  // The guide's own compile command, with this checkout's compiler and Node types.
  const command = /^npx tsc (.*)$/m.exec(guide)[1].split(" ");
  const tsc = path.join(root, "node_modules/typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, ...command, "--typeRoots", path.join(root, "node_modules/@types")], { cwd: project });
  const dirs = {};
  for (const way of Object.keys(THIRD_PARTY_WAYS)) {
    dirs[way] = path.join(scratch, `third-party-${way}`);
    mkdirSync(dirs[way]);
    for (const t of ["ptp", "host-local", ...(way === "go" ? ["tuning"] : [])]) symlinkSync(path.join(GO, t), path.join(dirs[way], t));
  }
  const built = spawnSync(
    process.execPath,
    [path.join(root, "scripts/build-plugin.mjs"), "mtu-chain.mjs", "--out", path.join(dirs.native, "mtu-chain")],
    {
      cwd: project,
      encoding: "utf8",
    },
  );
  if (built.status !== 0) throw new Error(`tscni-build-plugin failed: ${built.stderr}`);
  symlinkSync(path.join(dirs.native, "mtu-chain-js"), path.join(dirs.program, "mtu-chain"));
  writeFileSync(path.join(dirs.node, "mtu-chain"), `#!/bin/sh\nexec ${process.execPath} ${path.join(project, "mtu-chain.mjs")} "$@"\n`, {
    mode: 0o755,
  });
  return dirs;
}

/**
 * Runs the scenarios, the ways interleaved (alternating order) for `rounds` rounds; returns the medians per
 * scenario and way, and the load averages (1 minute) before and after.
 */
export async function runThirdParty({ root, scratch, rounds, timedRun, median, netns, delNetns }) {
  let counter = 0;
  const dirs = build(root, scratch);
  const ways = Object.keys(THIRD_PARTY_WAYS);
  const type = (way) => (way === "go" ? "tuning" : "mtu-chain");
  const { CNIConfig } = await import(path.join(root, "dist/libcni/index.js"));
  const { parseConfList } = await import(path.join(root, "dist/spec/index.js"));
  const version = (way) => {
    const r = timedRun(path.join(dirs[way], type(way)), '{"cniVersion":"1.0.0"}', { CNI_COMMAND: "VERSION", PATH: process.env.PATH });
    if (r.status !== 0) throw new Error(`${way} VERSION failed: ${r.stdout}${r.stderr}`);
    return r.ms;
  };
  const chain = Object.fromEntries(
    ways.map((way, i) => {
      const list = parseConfList(
        JSON.stringify({
          cniVersion: "1.0.0",
          name: `bench-3p-${way}`,
          plugins: [
            { type: "ptp", ipam: { type: "host-local", subnet: `10.239.${i}.0/24`, dataDir: path.join(scratch, `3p-ipam-${way}`) } },
            ...(way === "floor" ? [] : [{ type: type(way), mtu: 1400 }]),
          ],
        }),
      );
      const cni = new CNIConfig({ path: [dirs[way]], cacheDir: path.join(scratch, `3p-cache-${way}`) });
      return [
        way,
        async () => {
          const name = `tscni-bench-3p${++counter}`;
          const rt = { containerID: `bench3p${counter}`, netNS: netns(name), ifName: "eth0" };
          try {
            const t0 = process.hrtime.bigint();
            const result = await cni.addNetworkList(list, rt);
            const ms = Number(process.hrtime.bigint() - t0) / 1e6;
            const mtu = JSON.parse(execFileSync("ip", ["-n", name, "-j", "link", "show", "eth0"], { encoding: "utf8" }))[0].mtu;
            if (mtu !== (way === "floor" ? 1500 : 1400) || !result) throw new Error(`${way}: eth0 has MTU ${mtu} after the chain ADD`);
            const t1 = process.hrtime.bigint();
            await cni.delNetworkList(list, rt);
            return { add: ms, del: Number(process.hrtime.bigint() - t1) / 1e6 };
          } finally {
            delNetns(name);
          }
        },
      ];
    }),
  );
  const load = [os.loadavg()[0]];
  const times = Object.fromEntries(ways.map((w) => [w, { version: [], add: [], del: [] }]));
  const versioned = ways.filter((w) => w !== "floor");
  for (const way of ways) {
    if (way !== "floor") version(way);
    await chain[way](); // warm-up (page cache)
  }
  for (let round = 0; round < rounds; round++) {
    for (const way of round % 2 ? [...ways].reverse() : ways) {
      for (let i = 0; i < 5 && versioned.includes(way); i++) times[way].version.push(version(way));
      const { add, del } = await chain[way]();
      times[way].add.push(add);
      times[way].del.push(del);
    }
  }
  load.push(os.loadavg()[0]);
  const medians = Object.fromEntries(
    ways.map((w) => [w, Object.fromEntries(Object.entries(times[w]).map(([k, v]) => [k, v.length ? median(v) : undefined]))]),
  );
  return { medians, load, rounds };
}

/** The report's section. */
export function thirdPartyTable({ medians, load, rounds }) {
  const go = medians.go;
  const ratio = (a, b) => (b ? (a / b).toFixed(2) : "-");
  return [
    "## A third-party plugin (docs/plugin-author.md's example)",
    "",
    "The guide's `mtu-chain` plugin, built and installed the guide's two ways, beside Debian's Go tuning plugin with `mtu`",
    "(the same logic; there is no Go toolchain here to build the example in Go). VERSION: the call alone, medians of",
    `${rounds * 5}; chain: Go's ptp and host-local, then the plugin, run by our libcni in a fresh namespace (${rounds}`,
    `rounds, the ways interleaved). Load average (1 min) ${load[0].toFixed(2)} before, ${load[1].toFixed(2)} after.`,
    "",
    "| the plugin | VERSION (ms) | chain ADD (ms) | chain DEL (ms) | VERSION/Go | ADD/Go | the plugin's share of ADD (ms) |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...Object.entries(THIRD_PARTY_WAYS).map(([way, label]) => {
      const m = medians[way];
      const share = way === "floor" ? "-" : (m.add - medians.floor.add).toFixed(1);
      return `| ${label} | ${m.version?.toFixed(2) ?? "-"} | ${m.add.toFixed(1)} | ${m.del.toFixed(1)} | ${m.version ? ratio(m.version, go.version) : "-"} | ${ratio(m.add, go.add)} | ${share} |`;
    }),
    "",
  ];
}
