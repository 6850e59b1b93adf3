/**
 * `cnitool conformance` (dist/bin/cnitool) run as a plugin author runs it, on every main and IPAM plugin of ours:
 * all pass, with skips only where this kernel lacks the plugin's link kind (ipvlan, vlan, dummy), and the two
 * tolerated deviations that Go's library makes too. macvlan, ipvlan and vlan get their master, host-device its device,
 * from --host-setup; dhcp gets dnsmasq and its daemon from --host-setup (both ended with the run) and an eth0 on
 * their bridge in each container from --netns-setup. Debian's Go bridge, host-local and loopback complete, with
 * Go's known deviations reported (its bridge's CHECK panics on null entries in prevResult, cni#1191/#1192); the broken test plugin fails exactly the checks it should, each message naming
 * its rule. Also: JUnit output, --only, and SIGINT removing the run's namespaces. Every run is in exec mode
 * (TSCNI_RESIDENT=exec); the resident pass skips this file, as the runner's calls come from a namespace of its own,
 * which no resident server serves.
 */

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Cleanup, CNITOOL, GO_BIN, missing, OUR_BIN, runCommand, runTag, skipReason, TEST_BIN, writeJson } from "#testing/harness.js";
import { linkKindMissing } from "#testing/kernel.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";

const skip = RESIDENT_PASS
  ? "runs in the exec pass only: the runner calls plugins from a namespace of its own, which no resident server serves"
  : skipReason();
if (skip) console.log(`# skipping conformance integration tests: ${skip}`);
const goSkip = skip ?? skipReason(true);
const standalone =
  existsSync(path.join(OUR_BIN, "dhcp")) &&
  !spawnSync("readlink", ["-f", path.join(OUR_BIN, "dhcp")], { encoding: "utf8" })
    .stdout.trim()
    .endsWith(".js");
const dhcpSkip =
  skip ??
  skipReason(
    false,
    spawnSync("dnsmasq", ["--version"]).status === 0 ? undefined : "dnsmasq is not installed (Debian package dnsmasq-base)",
    standalone ? undefined : missing("the dhcp daemon needs the standalone (Bun) build of dist/bin"),
  );

/** The conformance check of CHECK with null entries in prevResult (cni#1191, cni#1192). */
const NULL_CHECK = "CHECK with a prevResult holding null entries (cni#1191, cni#1192): exit 0, or one CNI error document";

/** The two deviations from the spec's letter that Go's library makes, which tscni keeps for compatibility. */
const TOLERATED = ["VERSION: the answer's cniVersion is the one on stdin", "error documents carry cniVersion"];

/** A TAP test line, with the first message and rule of its YAML block. */
interface TapCheck {
  ok: boolean;
  title: string;
  section: string;
  directive?: "SKIP" | "TODO";
  reason?: string;
  message?: string;
  rule?: string;
}

const yamlValue = (text: string): string => (text.startsWith('"') ? (JSON.parse(text) as string) : text);

/** The test lines of a TAP stream (descriptions are `title [section]`). */
function parseTap(tap: string): { checks: TapCheck[]; plan?: number } {
  const checks: TapCheck[] = [];
  let plan: number | undefined;
  for (const line of tap.split("\n")) {
    const t = /^(ok|not ok) \d+ - (.*?) \[([^\]]+)\](?: # (SKIP|TODO) (.*))?$/.exec(line);
    if (t) {
      checks.push({
        ok: t[1] === "ok",
        title: t[2]!.replace(/\\#/g, "#"),
        section: t[3]!,
        ...(t[4] ? { directive: t[4] as "SKIP" | "TODO", reason: t[5] } : {}),
      });
      continue;
    }
    const last = checks[checks.length - 1];
    const m = /^ {2}(message|rule): (.*)$/.exec(line);
    if (m && last && last[m[1] as "message" | "rule"] === undefined) last[m[1] as "message" | "rule"] = yamlValue(m[2]!);
    const p = /^1\.\.(\d+)$/.exec(line);
    if (p) plan = Number(p[1]);
  }
  return { checks, ...(plan !== undefined ? { plan } : {}) };
}

const failures = (checks: TapCheck[]) => checks.filter((c) => !c.ok && c.directive !== "TODO");

/** The namespaces a conformance run names (cnic-...) that exist now. */
const runnerNamespaces = (): string[] => (existsSync("/run/netns") ? readdirSync("/run/netns").filter((n) => n.startsWith("cnic-")) : []);

describe("cnitool conformance", { skip }, () => {
  const cleanup = new Cleanup();
  after(() => cleanup.run());

  /** Runs `cnitool conformance` on `plugin` with `config` (written to a file) and more arguments. */
  async function conformance(plugin: string, config: Record<string, unknown>, ...args: string[]) {
    const file = path.join(cleanup.dir("tscni-conformance-"), "config.json");
    writeJson(file, config);
    const started = Date.now();
    const r = await runCommand(CNITOOL, ["conformance", plugin, "--config", file, ...args], {
      env: { ...process.env, TSCNI_RESIDENT: "exec" },
      timeoutMs: 180_000,
    });
    return { ...r, ...parseTap(r.stdout), ms: Date.now() - started };
  }

  /** Asserts a run of one of our plugins: exit 0, nothing failed, the tolerated deviations, skips only for `kind` on a kernel without it. */
  function assertPassed(run: Awaited<ReturnType<typeof conformance>>, kind?: string) {
    assert.equal(failures(run.checks).length, 0, run.stdout + run.stderr);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.plan, run.checks.length);
    assert.ok(run.checks.length >= 40, `${run.checks.length} checks`);
    assert.deepEqual(
      run.checks.filter((c) => c.directive === "TODO").map((c) => c.title),
      TOLERATED,
    );
    const skipped = run.checks.filter((c) => c.directive === "SKIP");
    const lacking = kind ? linkKindMissing(kind as "ipvlan" | "vlan" | "dummy", runTag()) : undefined;
    if (!lacking) {
      assert.deepEqual(skipped, [], "no skip where the kernel has what the plugin needs");
      return;
    }
    assert.ok(skipped.length > 0);
    for (const c of skipped)
      assert.match(c.reason!, new RegExp(`^this kernel cannot make ${kind} links \\(ip link add .*: Error: Unknown device type\\.\\)$`), c.title);
  }

  const hostLocal = (dataDir: string, subnet: string) => ({ type: "host-local", dataDir, ranges: [[{ subnet }]], routes: [{ dst: "0.0.0.0/0" }] });
  const uplink = "ip link add up0 type veth peer name up1 && ip link set up0 up && ip link set up1 up";
  const ours: Array<{ type: string; keys: (dir: string) => Record<string, unknown>; setup?: string; kind?: string }> = [
    { type: "bridge", keys: (d) => ({ bridge: "cnf0", isGateway: true, ipMasq: true, ipam: hostLocal(d, "10.251.1.0/24") }) },
    { type: "ptp", keys: (d) => ({ ipMasq: true, ipam: hostLocal(d, "10.251.2.0/24") }) },
    { type: "loopback", keys: () => ({}) },
    { type: "macvlan", keys: (d) => ({ master: "up0", mode: "bridge", ipam: hostLocal(d, "10.251.3.0/24") }), setup: uplink },
    { type: "ipvlan", keys: (d) => ({ master: "up0", ipam: hostLocal(d, "10.251.4.0/24") }), setup: uplink, kind: "ipvlan" },
    { type: "vlan", keys: (d) => ({ master: "up0", vlanId: 7, ipam: hostLocal(d, "10.251.5.0/24") }), setup: uplink, kind: "vlan" },
    { type: "dummy", keys: (d) => ({ ipam: hostLocal(d, "10.251.6.0/24") }), kind: "dummy" },
    { type: "tap", keys: (d) => ({ ipam: hostLocal(d, "10.251.7.0/24") }) },
    {
      type: "host-device",
      keys: (d) => ({ device: "hd0", dataDir: path.join(d, "records"), ipam: hostLocal(d, "10.251.8.0/24") }),
      setup: "ip link add hd0 type veth peer name hd1 && ip link set hd1 up",
    },
    { type: "host-local", keys: (d) => ({ ipam: hostLocal(d, "10.251.9.0/24") }) },
    {
      type: "static",
      keys: () => ({ ipam: { type: "static", addresses: [{ address: "10.251.10.5/24", gateway: "10.251.10.1" }], routes: [{ dst: "0.0.0.0/0" }] } }),
    },
  ];

  describe("tscni's main and IPAM plugins pass", { concurrency: 3 }, () => {
    for (const c of ours) {
      test(`${c.type}${c.kind ? ` (skips only where the kernel has no ${c.kind} links)` : ""}`, async () => {
        const dir = cleanup.dir("tscni-conformance-data-");
        const run = await conformance(
          path.join(OUR_BIN, c.type),
          { cniVersion: "1.1.0", name: `cnf-${c.type}`, type: c.type, ...c.keys(dir) },
          ...(c.setup ? ["--host-setup", c.setup] : []),
        );
        assertPassed(run, c.kind);
      });
    }
  });

  test("dhcp, with dnsmasq and the daemon started by --host-setup (and ended with the run), eth0 on their bridge from --netns-setup", {
    skip: dhcpSkip,
  }, async () => {
    const dir = cleanup.dir("tscni-conformance-dhcp-");
    const socket = path.join(dir, "dhcp.sock");
    const run = await conformance(
      path.join(OUR_BIN, "dhcp"),
      { cniVersion: "1.1.0", name: "cnf-dhcp", type: "dhcp", ipam: { type: "dhcp", daemonSocketPath: socket } },
      "--host-setup",
      "ip link add cnfbr type bridge && ip addr add 10.251.20.1/24 dev cnfbr && ip link set cnfbr up",
      "--host-setup",
      `dnsmasq --conf-file=/dev/null --port=0 --interface=cnfbr --bind-interfaces --user=root --no-ping --pid-file=${dir}/dnsmasq.pid ` +
        `--dhcp-leasefile=${dir}/dnsmasq.leases --dhcp-range=10.251.20.50,10.251.20.150,255.255.255.0,2m --dhcp-option=option:router,10.251.20.1 >/dev/null 2>&1`,
      "--host-setup",
      `${path.join(OUR_BIN, "dhcp")} daemon -socketpath ${socket} -leasedir ${dir}/leases >${dir}/daemon.log 2>&1 & ` +
        `for i in $(seq 200); do [ -S ${socket} ] && exit 0; sleep 0.05; done; echo "the daemon did not start"; cat ${dir}/daemon.log; exit 1`,
      "--netns-setup",
      "ip link add cnfv$CONFORMANCE_NETNS_INDEX type veth peer name eth0 netns $CONFORMANCE_NETNS && ip link set cnfv$CONFORMANCE_NETNS_INDEX master cnfbr up",
    );
    assertPassed(run);
    assert.match(readFileSync(path.join(dir, "daemon.log"), "utf8"), /acquired 10\.251\.20\.\d+\/24 from 10\.251\.20\.1/, "leases came from dnsmasq");
    const left = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(dir);
        } catch {
          return false;
        }
      });
    assert.deepEqual(left, [], "dnsmasq and the daemon were ended with the run");
  });

  test("JUnit XML: one testsuite, a testcase per check", async () => {
    const run = await conformance(path.join(OUR_BIN, "loopback"), { cniVersion: "1.1.0", name: "cnf-junit", type: "loopback" }, "--format", "junit");
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="cnitool conformance" tests="(\d+)" failures="0" errors="0" skipped="0" time="[\d.]+">\n {2}<testsuite name="loopback" /,
    );
    const tests = Number(/tests="(\d+)"/.exec(run.stdout)![1]);
    assert.equal((run.stdout.match(/<testcase /g) ?? []).length, tests);
    assert.equal((run.stdout.match(/<system-out>tolerated deviation/g) ?? []).length, TOLERATED.length);
  });

  test("--only runs the selected checks alone (what they need is made for them)", async () => {
    const dir = cleanup.dir("tscni-conformance-data-");
    const run = await conformance(
      path.join(OUR_BIN, "bridge"),
      { cniVersion: "1.1.0", name: "cnf-only", type: "bridge", bridge: "cnf1", ipam: hostLocal(dir, "10.251.30.0/24") },
      "--only",
      "^DEL again|^DEL with the container's namespace gone",
    );
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.deepEqual(
      run.checks.map((c) => [c.ok, c.title]),
      [
        [true, "DEL again (DEL may follow DEL): exit 0"],
        [true, "DEL with the container's namespace gone: exit 0, and the host links the ADD made are gone"],
      ],
    );
  });

  test("a failing setup command: Bail out!, exit 1, nothing left", async () => {
    const before = runnerNamespaces();
    const run = await conformance(
      path.join(OUR_BIN, "loopback"),
      { cniVersion: "1.1.0", name: "cnf-bail", type: "loopback" },
      "--host-setup",
      "echo no master; false",
    );
    assert.equal(run.code, 1);
    assert.match(run.stdout, /^Bail out! setup command failed \(exit 1\): echo no master; false$/m);
    assert.match(run.stderr, /no master/);
    assert.deepEqual(runnerNamespaces(), before);
  });

  test("SIGINT during the run: the run's namespaces and the processes in them are removed", async () => {
    const dir = cleanup.dir("tscni-conformance-int-");
    const file = path.join(dir, "config.json");
    writeJson(file, { cniVersion: "1.1.0", name: "cnf-int", type: "loopback" });
    const nap = `59.${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`; // a duration no other process sleeps
    const child = spawn(CNITOOL, ["conformance", path.join(OUR_BIN, "loopback"), "--config", file, "--host-setup", `sleep ${nap}`], {
      env: { ...process.env, TSCNI_RESIDENT: "exec" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const sleeping = () =>
      readdirSync("/proc").some((p) => {
        try {
          return /^\d+$/.test(p) && readFileSync(`/proc/${p}/cmdline`, "utf8").includes(`sleep\u0000${nap}`);
        } catch {
          return false;
        }
      });
    for (let i = 0; i < 200 && !/# host namespace: \/run\/netns\/(\S+)/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    const host = /# host namespace: \/run\/netns\/(\S+)/.exec(out)![1]!;
    for (let i = 0; i < 200 && !existsSync(`/run/netns/${host}`); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(existsSync(`/run/netns/${host}`), "the host namespace was made");
    for (let i = 0; i < 200 && !sleeping(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(sleeping(), "the setup command runs");
    child.kill("SIGINT");
    assert.equal(await exited, 130, out + err);
    assert.match(err, /SIGINT: the run's namespaces are removed/);
    assert.equal(existsSync(`/run/netns/${host}`), false);
    assert.equal(sleeping(), false, "the setup command's process was ended");
  });

  describe("Debian's Go plugins: the run completes and reports Go's known deviations", { skip: goSkip, concurrency: 3 }, () => {
    const goRun = (type: string, keys: Record<string, unknown>) =>
      conformance(path.join(GO_BIN, type), { cniVersion: "1.1.0", name: `cnf-go-${type}`, type, ...keys });
    const notClaimed = [
      "GC without CNI_PATH: error code 4 naming CNI_PATH",
      "STATUS (1.1.0): exit 0, the plugin being ready for ADD",
      "GC (1.1.0): the attachment kept, then collected",
    ];

    for (const type of ["bridge", "host-local"]) {
      test(`${type}: passes at 1.0.0, its newest version (no 1.1.0: STATUS and GC skipped; bridge's CHECK panics on null entries)`, async () => {
        const dir = cleanup.dir("tscni-conformance-data-");
        const run = await goRun(
          type,
          type === "bridge"
            ? { bridge: "cnf2", isGateway: true, ipam: hostLocal(dir, "10.251.40.0/24") }
            : { ipam: hostLocal(dir, "10.251.41.0/24") },
        );
        assert.match(run.stdout, /# the config's cniVersion "1.1.0" is not one the plugin claims: the attachments use 1.0.0/);
        // Go's bridge CHECK dereferences the null entries of its prevResult and panics (what cni#1191/#1192 fix in libcni).
        const crashes = type === "bridge" ? [NULL_CHECK] : [];
        assert.deepEqual(
          failures(run.checks).map((c) => c.title),
          crashes,
          run.stdout,
        );
        for (const c of failures(run.checks))
          assert.match(c.message ?? "", /panic: runtime error: invalid memory address or nil pointer dereference/);
        assert.equal(run.code, crashes.length ? 1 : 0);
        assert.deepEqual(
          run.checks.filter((c) => c.directive === "SKIP").map((c) => c.title),
          notClaimed,
        );
        assert.deepEqual(
          run.checks.filter((c) => c.directive === "TODO").map((c) => c.title),
          TOLERATED,
        );
        assert.ok(run.checks.some((c) => c.ok && c.title === "ADD with cniVersion 1.1.0, which it does not claim: error code 1"));
      });
    }

    test("loopback: prints its 1.x result under every 0.x cniVersion", async () => {
      const run = await goRun("loopback", {});
      assert.equal(run.code, 1);
      const failed = failures(run.checks);
      assert.deepEqual(
        failed.map((c) => c.title),
        ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0"].map(
          (v) => `ADD with cniVersion ${v}: the 1.0.0 result in ${v}'s shape, as the spec converts it`,
        ),
      );
      for (const c of failed) {
        assert.equal(c.rule, "SPEC §Result types / ADD Success");
        assert.match(
          c.message!,
          /^"interfaces", "ips" are not part of a 0\.[12]\.0 result|^ips\[0\] needs "version": "4" or "6" in a 0\.3\.x\/0\.4\.0 result/,
        );
      }
    });
  });

  test("the broken test plugin fails the checks it should, each naming its rule", async () => {
    const run = await conformance(path.join(TEST_BIN, "broken"), { cniVersion: "1.0.0", name: "cnf-broken", type: "broken" });
    assert.equal(run.code, 1);
    const failed = new Map(failures(run.checks).map((c) => [c.title, c]));
    const expect = (title: string, rule: string, message: RegExp) => {
      const c = failed.get(title);
      assert.ok(c, `${title} fails:\n${run.stdout}`);
      assert.equal(c.rule, rule, title);
      assert.match(c.message!, message, title);
      failed.delete(title);
    };
    // A wrong VERSION answer.
    expect(
      "VERSION: exit 0 and one JSON document with cniVersion and supportedVersions, with only CNI_COMMAND set",
      "SPEC §Result types / VERSION Success",
      /^the answer needs "cniVersion" \(a version string\); got null$/,
    );
    expect(
      "VERSION: supportedVersions lists CNI spec versions, each once",
      "SPEC §Result types / VERSION Success",
      /^supportedVersions must list CNI spec versions; "1\.0" is not one/,
    );
    // Two documents on stdout, wherever it adds.
    for (const title of [
      "ADD (cniVersion 1.0.0): exit 0 and one JSON document on stdout, a valid 1.0.0 result",
      "ADD with cniVersion 0.3.1: the 1.0.0 result in 0.3.1's shape, as the spec converts it",
      "ADD with cniVersion 0.4.0: the 1.0.0 result in 0.4.0's shape, as the spec converts it",
      ...run.checks.filter((c) => c.title.startsWith("ADD with CNI_ARGS")).map((c) => c.title),
    ]) {
      expect(title, "SPEC §Result types / ADD Success", /^stdout holds 2 JSON documents; the result must be exactly one document and nothing else$/);
    }
    // A stack trace on stderr and nothing on stdout, wherever it refuses.
    const refusals = [...failed.keys()];
    assert.deepEqual(refusals, [
      "ADD without CNI_CONTAINERID: error code 4 naming CNI_CONTAINERID",
      "ADD without CNI_NETNS: error code 4 naming CNI_NETNS",
      "ADD without CNI_IFNAME: error code 4 naming CNI_IFNAME",
      "DEL without CNI_CONTAINERID: error code 4 naming CNI_CONTAINERID",
      "DEL without CNI_IFNAME: error code 4 naming CNI_IFNAME",
      "CHECK without CNI_CONTAINERID: error code 4 naming CNI_CONTAINERID",
      "CHECK without CNI_NETNS: error code 4 naming CNI_NETNS",
      "CHECK without CNI_IFNAME: error code 4 naming CNI_IFNAME",
      "ADD with a config that is not JSON: error code 6",
      "DEL with a config that is not JSON: error code 6",
      ...["0.1.0", "0.2.0", "0.3.0", "1.1.0", "0.5.0"].map((v) => `ADD with cniVersion ${v}, which it does not claim: error code 1`),
      'ADD with a config without "name": refused',
      'ADD with "name": "bad/name" (the spec\'s name rule): refused',
      'ADD with "name": ".." (the spec\'s name rule): refused',
    ]);
    for (const title of refusals) {
      expect(
        title,
        "SPEC §Result types / Error",
        /^a failing plugin prints its error as one JSON document on stdout; stdout is empty \(stderr has \d+ lines, starting "Error: [^"]+"\)$/,
      );
    }
  });

  test("no run left a namespace behind", () => {
    assert.deepEqual(runnerNamespaces(), []);
  });
});
