// What scripts/release.mjs and scripts/image.mjs share: stopping with a message, running a tool, and the time a
// reproducible artifact carries. Plain JavaScript, like the scripts, so that it runs before any build.
import { spawnSync } from "node:child_process";

/** A `fail(message)` that stops the script `name` with what went wrong (no stack: the message says it all). */
export function failer(name) {
  return (message) => {
    console.error(`${name}: ${message}`);
    process.exit(1);
  };
}

/** Runs `cmd` and answers its trimmed stdout; throws with its output when it cannot start or exits non-zero. */
export function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { encoding: "utf8", maxBuffer: 64 << 20, ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(" ")} failed:\n${r.stderr ?? ""}${r.stdout ?? ""}`);
  return (r.stdout ?? "").trim();
}

/**
 * The time an artifact's files carry: SOURCE_DATE_EPOCH (reproducible-builds.org), else the commit's of `root`.
 * `what` names the artifact in the message when neither is there.
 */
export function sourceDateEpoch(root, fail, what) {
  const given = process.env.SOURCE_DATE_EPOCH;
  if (given !== undefined) {
    if (!/^\d+$/.test(given)) fail(`SOURCE_DATE_EPOCH=${given}: want seconds since 1970`);
    return given;
  }
  const r = spawnSync("git", ["-C", root, "log", "-1", "--format=%ct"], { encoding: "utf8" });
  if (r.status !== 0 || !/^\d+\s*$/.test(r.stdout)) fail(`no git commit to date the ${what} by: set SOURCE_DATE_EPOCH`);
  return r.stdout.trim();
}
