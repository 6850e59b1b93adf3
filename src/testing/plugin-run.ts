/**
 * Test support for the IPAM plugin integration tests: runs a plugin binary the way a runtime does (CNI_*
 * environment, config on stdin) and decodes what it printed. IPAM plugins never open the netns, so a path
 * that does not exist is fine.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { GO_BIN, OUR_BIN, ROOT } from "./harness.js";

export { GO_BIN, OUR_BIN, ROOT };
export const goPluginAvailable = (name: string): boolean => existsSync(path.join(GO_BIN, name));

export interface PluginRun {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** stdout decoded as JSON, when it is JSON. */
  json: any; // tests read into it freely
}

export interface PluginCall {
  command: "ADD" | "DEL" | "CHECK" | "STATUS" | "GC" | "VERSION";
  containerID?: string;
  ifName?: string;
  args?: string;
  netns?: string;
}

/** Runs `binDir/plugin` once with `config` on stdin. */
export function runPlugin(binDir: string, plugin: string, call: PluginCall, config: unknown): Promise<PluginRun> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env["PATH"],
    CNI_COMMAND: call.command,
    CNI_CONTAINERID: call.containerID ?? "",
    CNI_NETNS: call.netns ?? (call.command === "ADD" || call.command === "CHECK" ? "/run/netns/tscni-ipam-test-nonexistent" : ""),
    CNI_IFNAME: call.ifName ?? (call.command === "GC" || call.command === "STATUS" ? "" : "eth0"),
    CNI_ARGS: call.args ?? "",
    CNI_PATH: binDir,
  };
  // The run's resident mode goes with the call (the exec pass turns auto-start off): a call that lost it would
  // start a server on the node's own socket.
  for (const key of ["TSCNI_RESIDENT", "TSCNI_RESIDENT_SOCKET"]) if (process.env[key] !== undefined) env[key] = process.env[key];
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(binDir, plugin), [], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.on("error", reject);
    child.on("close", (code) => {
      let json: unknown;
      try {
        json = stdout.trim() ? JSON.parse(stdout) : undefined;
      } catch {
        /* not JSON */
      }
      resolve({ exitCode: code ?? -1, stdout, stderr, json });
    });
    child.stdin.on("error", () => undefined); // a program that exits without reading its stdin: judged by its exit
    child.stdin.end(typeof config === "string" ? config : JSON.stringify(config));
  });
}

/** A temporary directory and its removal. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
