// Bun's runtime for another architecture, which `bun build --compile --target=bun-linux-<arch>` compiles the
// program into. Bun downloads it at build time from its own release site unless given one
// (`--compile-executable-path`); a build machine may reach only the npm registry (ours do), so it comes from npm:
// the package `@oven/bun-linux-<arch>` of exactly the installed Bun's version, which package-lock.json already
// records (an optional dependency of `bun`) with its integrity. `npm ci` installs it only on that architecture
// (npm has no setting to install another cpu's optional dependencies beside this one's: `--cpu` replaces the
// machine's architecture rather than adding one), so it is fetched with `npm pack` (npm's cache keeps it; a second
// build is offline), checked against the lock file's integrity, and unpacked under node_modules/.cache/tscni.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";

/** The architectures a release is built for, in each naming: Node/npm, Bun, the GNU triplet, qemu, Go/Debian. */
export const ARCHES = {
  x64: { npm: "x64", bun: "x64", gnu: "x86_64", qemu: "x86_64", go: "amd64" },
  arm64: { npm: "arm64", bun: "aarch64", gnu: "aarch64", qemu: "aarch64", go: "arm64" },
};
ARCHES.amd64 = ARCHES.x64;

/** The npm package holding Bun's linux runtime for `arch` (glibc). */
export const runtimePackage = (arch) => `@oven/bun-linux-${arch.bun}`;

/** The installed Bun's version (node_modules/bun), which a runtime must match. */
export function bunVersion(root) {
  return JSON.parse(readFileSync(path.join(root, "node_modules/bun/package.json"), "utf8")).version;
}

/** What package-lock.json says of `name`: its version and integrity. */
export function lockedPackage(root, name) {
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8"));
  const entry = lock.packages?.[`node_modules/${name}`];
  if (!entry?.integrity) throw new Error(`package-lock.json has no ${name} with an integrity`);
  return { version: entry.version, integrity: entry.integrity };
}

/** The path of the Bun executable for `arch` (one of ARCHES), fetching it from npm the first time. */
export function bunRuntime(arch, root) {
  const name = runtimePackage(arch);
  const version = bunVersion(root);
  const locked = lockedPackage(root, name);
  if (locked.version !== version) throw new Error(`package-lock.json has ${name} ${locked.version}, but Bun is ${version}: npm install`);
  const cache = path.join(root, "node_modules/.cache/tscni", `${name.replace("/", "+")}-${version}`);
  const executable = path.join(cache, "bin/bun");
  if (existsSync(executable)) return executable;
  mkdirSync(path.dirname(cache), { recursive: true });
  const work = mkdtempSync(`${cache}.tmp-`);
  try {
    const packed = spawnSync("npm", ["pack", "--silent", "--prefer-offline", "--pack-destination", work, `${name}@${version}`], {
      encoding: "utf8",
    });
    if (packed.status !== 0) throw new Error(`npm pack ${name}@${version} failed:\n${packed.stderr}`);
    const tgz = path.join(work, packed.stdout.trim().split("\n").pop());
    const [algorithm, expected] = locked.integrity.split(/-(.*)/s);
    const actual = createHash(algorithm).update(readFileSync(tgz)).digest("base64");
    if (actual !== expected) throw new Error(`${name}@${version} from npm is not what package-lock.json records (${algorithm} ${actual})`);
    const unpacked = spawnSync("tar", ["-xzf", tgz, "-C", work, "package/bin/bun"], { encoding: "utf8" });
    if (unpacked.status !== 0) throw new Error(`unpacking ${tgz} failed:\n${unpacked.stderr}`);
    renameSync(path.join(work, "package"), cache);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return executable;
}
