import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { AttachmentReload, LostState } from "#runtime/firewall-reload.js";
import { type RepairHooks, startRepair } from "./repair.js";

/** Hooks whose losses the test sets, counting reloads; the bus is a function the test calls. */
function fakes(opts: { bus?: boolean } = {}) {
  const state = {
    lost: [] as LostState[],
    reloads: 0,
    reloaded: [] as Array<string[] | undefined>,
    lostAfterReload: undefined as LostState[] | undefined,
    lostAfterPause: undefined as LostState[] | undefined,
    pauses: 0,
    watches: 0,
    stops: 0,
  };
  let signal: (() => void) | undefined;
  let end: ((reason: string) => void) | undefined;
  const hooks: RepairHooks = {
    lost: async () => state.lost,
    reload: async (only): Promise<AttachmentReload[]> => {
      state.reloads++;
      state.reloaded.push(only ? [...only] : undefined);
      if (state.lostAfterReload) state.lost = state.lostAfterReload;
      else state.lost = [];
      return [{ attachment: "n/c/eth0", status: "restored", detail: "portmap: iptables IPv4" }];
    },
    pause: async () => {
      state.pauses++;
      if (state.lostAfterPause) state.lost = state.lostAfterPause;
    },
    watch: (onReloaded, onEnd) => {
      if (!opts.bus) return undefined;
      state.watches++;
      signal = onReloaded;
      end = onEnd;
      return { stop: () => state.stops++ };
    },
  };
  return { state, hooks, emit: () => signal!(), endBus: (r: string) => end!(r) };
}

const lost = (chain: string): LostState[] => [{ attachment: "n/c/eth0", missing: [`iptables nat chain ${chain}`] }];

describe("self-repair", () => {
  test("a loss is repaired only if it lasts: an attachment whose rules went with its DEL (its cache entry goes last) is left alone", async () => {
    const { state, hooks } = fakes();
    const log: string[] = [];
    state.lost = [...lost("CNI-DEL"), { attachment: "n/d/eth0", missing: ["iptables nat chain CNI-X"] }];
    // After the pause: the first attachment's DEL finished (gone from the cache), the second is still lost.
    state.lostAfterPause = [{ attachment: "n/d/eth0", missing: ["iptables nat chain CNI-X"] }];
    const r = startRepair({ cacheDir: "/c", intervalMs: 20, log: (l) => log.push(l), hooks });
    await sleep(60);
    r.stop();
    assert.ok(state.pauses >= 1);
    assert.deepEqual(state.reloaded[0], ["n/d/eth0"], "only the confirmed attachment is reloaded");
  });

  test("a periodic look finds lost state and reloads; nothing lost, no reload", async () => {
    const { state, hooks } = fakes();
    const log: string[] = [];
    const r = startRepair({ cacheDir: "/c", intervalMs: 20, log: (l) => log.push(l), hooks });
    await sleep(70);
    assert.equal(state.reloads, 0);
    state.lost = lost("CNI-HOSTPORT-DNAT");
    await sleep(70);
    r.stop();
    assert.equal(state.reloads, 1);
    assert.ok(
      log.some((l) => /firewall state lost: 1 attachment\(s\), first n\/c\/eth0 \(iptables nat chain CNI-HOSTPORT-DNAT\)/.test(l)),
      log.join("\n"),
    );
    assert.ok(
      log.some((l) => /^restored\s+n\/c\/eth0\s+portmap: iptables IPv4$/.test(l)),
      log.join("\n"),
    );
    assert.ok(log.some((l) => /1 restored, 0 complete, 0 failed, 0 skipped/.test(l)));
  });

  test("what a reload could not put back is said once and not retried until it changes", async () => {
    const { state, hooks } = fakes();
    const log: string[] = [];
    state.lost = lost("A");
    state.lostAfterReload = lost("A");
    const r = startRepair({ cacheDir: "/c", intervalMs: 10, log: (l) => log.push(l), hooks });
    await sleep(80);
    assert.equal(state.reloads, 1, "one reload for the same loss");
    assert.equal(log.filter((l) => /still missing after the reload/.test(l)).length, 1);
    state.lost = lost("B");
    state.lostAfterReload = [];
    await sleep(50);
    r.stop();
    assert.equal(state.reloads, 2, "a new loss is repaired");
  });

  test("firewalld's Reloaded signal reloads at once (even with the periodic look off); stop ends the watch", async () => {
    const { state, hooks, emit } = fakes({ bus: true });
    const r = startRepair({ cacheDir: "/c", intervalMs: 0, log: () => undefined, hooks });
    assert.equal(state.watches, 1);
    emit();
    await sleep(10);
    assert.equal(state.reloads, 1);
    emit();
    await sleep(10);
    assert.equal(state.reloads, 2, "every reload of firewalld is followed");
    r.stop();
    assert.equal(state.stops, 1);
  });

  test("a watch that ends is started again later; no bus means no watch and no error", async () => {
    const { state, hooks, endBus } = fakes({ bus: true });
    const log: string[] = [];
    const r = startRepair({ cacheDir: "/c", intervalMs: 0, log: (l) => log.push(l), hooks, busRetryMs: 20 });
    endBus("busctl monitor ended (1)");
    await sleep(60);
    r.stop();
    assert.ok(state.watches >= 2, `watched ${state.watches} times`);
    assert.equal(log.filter((l) => /stopped watching firewalld's reloads \(busctl monitor ended \(1\)\)/.test(l)).length, 1);

    const none = fakes();
    const quiet: string[] = [];
    startRepair({ cacheDir: "/c", intervalMs: 0, log: (l) => quiet.push(l), hooks: none.hooks, busRetryMs: 10 }).stop();
    assert.deepEqual(quiet, []);
  });

  test("a failing look is logged once per distinct error and the repair goes on", async () => {
    const { state, hooks } = fakes();
    const log: string[] = [];
    let fail = true;
    const r = startRepair({
      cacheDir: "/c",
      intervalMs: 10,
      log: (l) => log.push(l),
      hooks: {
        ...hooks,
        lost: async () => {
          if (fail) throw new Error("cannot read /c/results");
          return state.lost;
        },
      },
    });
    await sleep(60);
    assert.equal(log.filter((l) => /self-repair failed: cannot read \/c\/results/.test(l)).length, 1);
    fail = false;
    state.lost = lost("A");
    await sleep(40);
    r.stop();
    assert.equal(state.reloads, 1);
  });
});
