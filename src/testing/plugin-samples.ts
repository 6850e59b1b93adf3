/**
 * Valid configs of every plugin in the registry, using every key of each plugin's schema (config-decoding.test.ts
 * checks that), for the tests that respell or mutate them (plugins/config-decoding.test.ts, plugins/bad-input.test.ts,
 * integration/reliability.test.ts). Each plugin keeps its own in its folder, `config.samples.ts` (so adding a
 * plugin touches its folder and the one line of plugins/manifests.ts); they are gathered here, in the manifests'
 * order.
 * @module
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MANIFESTS } from "#plugins/manifests.js";
import type { Sample } from "./sample-base.js";

export { COMMON, PREV_RESULT, type Sample } from "./sample-base.js";

const PLUGINS = path.join(path.dirname(fileURLToPath(import.meta.url)), "../plugins");

/** The samples of plugin `name`, from the `config.samples` module of its folder (under ipam/, main/ or meta/). */
async function samplesOf(name: string): Promise<Sample[]> {
  for (const group of ["ipam", "main", "meta"]) {
    const file = path.join(PLUGINS, group, name, "config.samples.js");
    if (existsSync(file)) return ((await import(pathToFileURL(file).href)) as { samples: Sample[] }).samples;
  }
  return [];
}

export const SAMPLES: Record<string, Sample[]> = Object.fromEntries(
  await Promise.all(MANIFESTS.map(async (m) => [m.name, await samplesOf(m.name)] as const)),
);
