/**
 * A node you can observe, with a `cnitool daemon` in a test-made host namespace (entered with nsenter, as in
 * resident.test.ts): the runtime's trace context (TRACEPARENT, TRACESTATE, BAGGAGE) goes from cnitool's libcni
 * through the launcher and the server to flannel and on to a recording delegate exec'd from CNI_PATH, and a
 * failure is logged with it; the server's metrics, read with `cnitool daemon metrics` and over HTTP
 * (`--metrics-address`), count known calls: ADDs, errors of code 7 and a refused caller.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { rawHelloScript } from "#testing/confinement.js";
import { failRecorder, installEnvRecorder, RECORDER_RESULT, recordedEnv, resetRecorder } from "#testing/env-recorder.js";
import { Cleanup, CNITOOL, OUR_BIN, ROOT, runCommand, runTag, skipReason } from "#testing/harness.js";
import { Host } from "#testing/rig.js";

const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping observability tests: ${skip}`);

const TRACE = {
  TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  TRACESTATE: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
  BAGGAGE: "userId=alice,serverNode=DF%2028",
};

describe("an observable node: trace context and metrics through the resident server", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let socket: string;
  let server: ChildProcess;
  let serverLog = "";
  let metricsUrl = "";

  /** Runs `cmd` in the host namespace (nsenter --net: the same mount namespace as the server). */
  const inHost = (cmd: string, args: string[], env: NodeJS.ProcessEnv, input?: string) =>
    runCommand("nsenter", [`--net=${host.ns.path}`, "--", cmd, ...args], { env, ...(input !== undefined ? { input } : {}) });
  /** The environment of a call that must go to this test's server (manual: no other server is started). */
  const callEnv = (extra: Record<string, string>) => ({
    PATH: process.env["PATH"],
    TSCNI_RESIDENT: "manual",
    TSCNI_RESIDENT_SOCKET: socket,
    TSCNI_DEBUG: "1",
    ...extra,
  });
  const served = async () => {
    const r = await inHost(CNITOOL, ["daemon", "status", "--socket", socket], { PATH: process.env["PATH"] });
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { served: number }).served;
  };

  before(async () => {
    host = new Host(cleanup, `tscni-ob-${tag}`, OUR_BIN);
    socket = path.join(cleanup.dir("tscni-obsock-"), "run", "plugins.sock");
    server = spawn(
      "nsenter",
      [`--net=${host.ns.path}`, "--", CNITOOL, "daemon", "--socket", socket, "--warm-up", "20", "--metrics-address", "127.0.0.1:0"],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    server.stderr!.on("data", (b: Buffer) => (serverLog += b));
    cleanup.add(() => server.kill("SIGKILL"));
    for (let i = 0; i < 100 && !/metrics on http:/.test(serverLog); i++) await sleep(50);
    metricsUrl = /metrics on (http:\S+)/.exec(serverLog)?.[1] ?? "";
    assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, serverLog);
  });
  after(async () => {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
    cleanup.run();
    assert.doesNotMatch(serverLog, /uncaught|unhandled/, serverLog);
  });

  test("TRACEPARENT, TRACESTATE and BAGGAGE reach a delegate through libcni, the launcher and the server; a failure is logged with them", async () => {
    const dir = cleanup.dir("tscni-obrec-");
    const recorder = installEnvRecorder(dir, "recorder");
    writeFileSync(
      path.join(dir, "subnet.env"),
      "FLANNEL_NETWORK=10.98.0.0/16\nFLANNEL_SUBNET=10.98.3.1/24\nFLANNEL_MTU=1400\nFLANNEL_IPMASQ=false\n",
    );
    const network = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `ob${tag}`,
      type: "flannel",
      subnetFile: path.join(dir, "subnet.env"),
      dataDir: path.join(dir, "flannel"),
      delegate: { type: "recorder" },
    });
    const ctr = host.container(`tscni-obc-${tag}`);
    const cnitool = (verb: string) =>
      inHost(
        CNITOOL,
        ["--cache-dir", host.cacheDir, verb, network, ctr.path],
        callEnv({ NETCONFPATH: host.confDir, CNI_PATH: `${dir}:${OUR_BIN}`, ...TRACE }),
      );

    const before = await served();
    const added = await cnitool("add");
    assert.equal(added.code, 0, added.stdout + added.stderr);
    assert.doesNotMatch(added.stderr, /refused|not used/);
    assert.equal((JSON.parse(added.stdout) as typeof RECORDER_RESULT).ips[0]!.address, RECORDER_RESULT.ips[0]!.address);
    assert.equal(await served(), before + 1, "flannel ran in the server");
    const seen = recordedEnv(recorder);
    assert.equal(seen?.["CNI_COMMAND"], "ADD");
    assert.equal(seen?.["TSCNI_RESIDENT_NESTED"], "1", "the delegate was exec'd by the server");
    assert.deepEqual({ TRACEPARENT: seen?.["TRACEPARENT"], TRACESTATE: seen?.["TRACESTATE"], BAGGAGE: seen?.["BAGGAGE"] }, TRACE);

    // The delegate fails: flannel's error reaches cnitool's stderr with the trace, stdout keeps the error alone.
    failRecorder(recorder, { code: 11, msg: "try again later" });
    resetRecorder(recorder);
    const failed = await cnitool("del");
    assert.notEqual(failed.code, 0);
    assert.equal(recordedEnv(recorder)?.["TRACEPARENT"], TRACE.TRACEPARENT);
    const line = failed.stderr.split("\n").find((l) => l.startsWith("CNI plugin error: "));
    assert.ok(line, failed.stderr);
    assert.match(line, /^CNI plugin error: type="flannel" command="DEL" containerID="[^"]+" ifname="eth0" code=11 msg="try again later" /);
    assert.ok(line.endsWith(` TRACEPARENT="${TRACE.TRACEPARENT}" TRACESTATE="${TRACE.TRACESTATE}" BAGGAGE="${TRACE.BAGGAGE}"`), line);
    failRecorder(recorder, undefined);
    const del = await cnitool("del");
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal(recordedEnv(recorder)?.["CNI_COMMAND"], "DEL");
  });

  test("the metrics count known calls, read through `cnitool daemon metrics` and over HTTP", async () => {
    const ADDS = 3;
    const ERRORS = 2;
    const plugin = (name: string, conf: unknown, env: Record<string, string>, via: string[] = [`--net=${host.ns.path}`]) =>
      runCommand("nsenter", [...via, "--", path.join(OUR_BIN, name)], {
        env: callEnv({ CNI_COMMAND: "ADD", CNI_PATH: OUR_BIN, CNI_IFNAME: "eth0", CNI_NETNS: "/run/netns/none", ...env }),
        input: JSON.stringify(conf),
      });
    const hostLocal = { cniVersion: "1.0.0", name: `obm${tag}`, type: "host-local", ipam: host.hostLocal(["10.97.0.0/24"]) };
    for (let i = 0; i < ADDS; i++) {
      const r = await plugin("host-local", hostLocal, { CNI_CONTAINERID: `obm${i}` });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.doesNotMatch(r.stderr, /refused/);
    }
    for (let i = 0; i < ERRORS; i++) {
      const r = await plugin("bridge", { cniVersion: "1.0.0", name: `obe${tag}`, type: "bridge", mtu: "big" }, { CNI_CONTAINERID: `obe${i}` });
      assert.equal(r.code, 1);
      assert.equal((JSON.parse(r.stdout) as { code: number }).code, 7);
    }
    const other = cleanup.netns(`tscni-obo-${tag}`);
    const refused = await plugin("host-local", hostLocal, { CNI_CONTAINERID: "obm-refused" }, [`--net=${other.path}`]);
    assert.equal(refused.code, 0, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /not used: the listener is in another network namespace/);
    // (its launcher sent nothing; a client that sends anyway is refused, and counted)
    const raw = await runCommand("nsenter", [`--net=${other.path}`, "--", process.execPath, "-e", rawHelloScript(socket)]);
    assert.equal(raw.stdout, "N the caller is in another network namespace");

    const viaCnitool = await inHost(CNITOOL, ["daemon", "metrics", "--socket", socket], { PATH: process.env["PATH"] });
    assert.equal(viaCnitool.code, 0, viaCnitool.stderr);
    const fetched = await inHost(
      process.execPath,
      [
        "-e",
        `fetch(${JSON.stringify(metricsUrl)}).then(async (r) => process.stdout.write(r.status + " " + r.headers.get("content-type") + "\\n" + await r.text()))`,
      ],
      { PATH: process.env["PATH"] },
    );
    assert.equal(fetched.code, 0, fetched.stderr);
    const [status, ...body] = fetched.stdout.split("\n");
    assert.equal(status, "200 text/plain; version=0.0.4; charset=utf-8");

    const expected = [
      `tscni_calls_total{program="host-local",command="ADD"} ${ADDS}`,
      `tscni_calls_total{program="bridge",command="ADD"} ${ERRORS}`,
      `tscni_call_errors_total{program="bridge",command="ADD",code="7"} ${ERRORS}`,
      `tscni_call_duration_seconds_count{program="host-local",command="ADD"} ${ADDS}`,
      `tscni_call_duration_seconds_bucket{program="host-local",command="ADD",le="+Inf"} ${ADDS}`,
      `tscni_call_duration_seconds_count{program="bridge",command="ADD"} ${ERRORS}`,
      'tscni_refusals_total{reason="namespace"} 1',
      'tscni_refusals_total{reason="not_root"} 0',
      "tscni_calls_in_flight 0",
      "tscni_reloads_total 0",
      "tscni_gc_runs_total 0",
    ];
    for (const [source, text] of [
      ["cnitool daemon metrics", viaCnitool.stdout],
      ["HTTP", body.join("\n")],
    ] as const) {
      assert.match(text, /^# HELP tscni_calls_total /m, source);
      const lines = new Set(text.split("\n"));
      for (const sample of expected) assert.ok(lines.has(sample), `${source}: no "${sample}" in\n${text}`);
      assert.doesNotMatch(text, /tscni_call_errors_total\{program="host-local"/, `${source}: the ADDs did not fail`);
    }
  });
});
