/**
 * The server's warm-up: host-local ADD, CHECK and DEL through its own socket on a private temporary store, one
 * call at a time between real calls, so that real calls find what every call goes through (connection and
 * protocol code, the peer checks, skel, Go-compatible decoding, IP arithmetic, results) compiled by the JIT rather
 * than interpreted. It gives way to real calls: while any is under way it waits (a burst that meets a server it
 * started warms the code itself; a warm-up competing with it for the CPU made a cold burst of 100 pods ~15%
 * slower). Nothing outside the temporary directory is touched; it is removed at the end.
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { callResident } from "#invoke/resident-client.js";
import { messageOf } from "#spec/errors.js";

/** How many rounds (ADD, CHECK, DEL) the warm-up runs by default (about a second of one core). */
export const WARM_UP_ROUNDS = 500;

/** How often a warm-up waiting for real calls to finish looks again. */
const BUSY_POLL_MS = 10;

/** What a warm-up needs. */
export interface WarmUpOptions {
  socketPath: string;
  buildId: string;
  rounds: number;
  /** Variables every warm-up call carries besides the CNI ones (the server's TSCNI_NETLINK). */
  env: Record<string, string>;
  /** Checked between calls: true stops the warm-up. */
  stopped: () => boolean;
  /** Checked between calls: true while real calls are under way (or have just been), which the warm-up waits out. */
  busy: () => boolean;
  log: (line: string) => void;
  /** How a warm-up call reaches the server (tests give their own); callResident. */
  call?: typeof callResident;
}

/** Runs the warm-up; resolves when it is done, stopped, or failed (a failure is logged, never thrown). */
export async function warmUp({ socketPath, buildId, rounds, env, stopped, busy, log, call = callResident }: WarmUpOptions): Promise<void> {
  if (rounds <= 0) return;
  let dir: string;
  try {
    dir = mkdtempSync(path.join(os.tmpdir(), "tscni-warm-up-"));
  } catch (e) {
    log(`warm-up skipped: ${messageOf(e)}`);
    return;
  }
  try {
    const stdin = Buffer.from(
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "tscni-warm-up",
        type: "host-local",
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: "10.255.0.0/16" }], [{ subnet: "fd00:7f::/64" }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: dir,
        },
      }),
    );
    for (let i = 0; i < rounds && !stopped(); i++) {
      while (busy() && !stopped()) await sleep(BUSY_POLL_MS);
      if (stopped()) break;
      for (const command of ["ADD", "CHECK", "DEL"]) {
        const callEnv = {
          ...env,
          CNI_COMMAND: command,
          CNI_CONTAINERID: `warm-up-${i}`,
          CNI_NETNS: path.join(dir, "netns"),
          CNI_IFNAME: "eth0",
          CNI_PATH: dir,
        };
        // (to its own socket: the server knows who listens there)
        const outcome = await call(socketPath, buildId, { program: "host-local", args: [], env: callEnv, stdin, cwd: dir }, { unverified: true });
        if (outcome.kind !== "served" || outcome.status !== 0) {
          log(`warm-up stopped: host-local ${command}: ${outcome.kind === "refused" ? outcome.reason : outcome.stdout.trim()}`);
          return;
        }
      }
    }
  } catch (e) {
    log(`warm-up stopped: ${messageOf(e)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
