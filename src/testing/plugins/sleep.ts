/**
 * sleep: a test plugin that never answers in time (sleeps 60 s on every verb but VERSION), for testing
 * that runtimes kill plugins on timeout.
 * @module
 */
import { setTimeout as delay } from "node:timers/promises";
import { pluginMain } from "#skel/skel.js";
import { ALL_VERSIONS, VersionInfo } from "#spec/version.js";

const sleepFor60s = async (): Promise<never> => {
  await delay(60_000);
  throw new Error("slept 60 s: the runtime should have killed this plugin by now");
};

export function main(): Promise<void> {
  const info = new VersionInfo(ALL_VERSIONS);
  if (process.env["CNI_COMMAND"] === "VERSION" && process.env["SLEEP_ON_VERSION"] !== "0") {
    return sleepFor60s().catch(() => undefined);
  }
  return pluginMain({ add: sleepFor60s, check: sleepFor60s, del: sleepFor60s, status: sleepFor60s, gc: sleepFor60s }, info, "CNI sleep test plugin");
}
