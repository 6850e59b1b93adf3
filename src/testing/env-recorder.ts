/**
 * An environment-recording stand-in plugin: a shell script a test puts into a plugin directory of its own (so it
 * is always exec'd, never run in-process) that keeps the environment of its last call beside itself and answers
 * as a plugin would — VERSION with every version, ADD with a result, other verbs with nothing — or, once told
 * to fail, with a given CNI error.
 * @module
 */
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** What the recorder answers ADD with. */
export const RECORDER_RESULT = { cniVersion: "1.0.0", ips: [{ address: "10.99.0.2/24" }] };

const VERSIONS = { cniVersion: "1.0.0", supportedVersions: ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] };

/** Makes `<dir>/<name>` a recorder; gives its path. */
export function installEnvRecorder(dir: string, name: string): string {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    [
      "#!/bin/sh",
      "cat > /dev/null",
      'env -0 > "$0.env"',
      'if [ -f "$0.fail" ]; then cat "$0.fail"; exit 1; fi',
      'case "$CNI_COMMAND" in',
      `  VERSION) printf '%s' '${JSON.stringify(VERSIONS)}' ;;`,
      `  ADD) printf '%s' '${JSON.stringify(RECORDER_RESULT)}' ;;`,
      "esac",
      "",
    ].join("\n"),
  );
  chmodSync(file, 0o755);
  return file;
}

/** The environment of the recorder's last call; undefined when it never ran (or was reset). */
export function recordedEnv(recorder: string): Record<string, string> | undefined {
  const file = `${recorder}.env`;
  if (!existsSync(file)) return undefined;
  const pairs = readFileSync(file, "utf8")
    .split("\0")
    .filter(Boolean)
    .map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]);
  return Object.fromEntries(pairs) as Record<string, string>;
}

/** Forgets the last call's environment. */
export function resetRecorder(recorder: string): void {
  rmSync(`${recorder}.env`, { force: true });
}

/** Makes the recorder fail every call with CNI error `code` and `msg` (undefined: succeed again). */
export function failRecorder(recorder: string, error: { code: number; msg: string } | undefined): void {
  if (error) writeFileSync(`${recorder}.fail`, JSON.stringify(error));
  else rmSync(`${recorder}.fail`, { force: true });
}
