import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { IpRule, KernelRoute } from "#net/link/policy-routing.js";
import { CniError } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { loadSbrConf } from "./config.js";
import { type IpStep, nextFreeTable, planSbrAdd, planSbrDel, type SbrSettings, selectIPs, verifySbr } from "./plan.js";

const DEFAULT_RULES: IpRule[] = [
  { family: 4, priority: 0, table: 255 },
  { family: 4, priority: 32766, table: 254 },
  { family: 4, priority: 32767, table: 253 },
  { family: 6, priority: 0, table: 255 },
  { family: 6, priority: 32766, table: 254 },
];
/** What the bridge plugin leaves in a dual-stack container (main table), plus the local table. */
const ROUTES: KernelRoute[] = [
  { family: 4, type: 1, dst: "0.0.0.0/0", gw: "10.1.0.1", dev: "eth0", table: 254, protocol: 3, scope: 0 },
  { family: 4, type: 1, dst: "10.1.0.0/24", dev: "eth0", table: 254, protocol: 2, scope: 253, src: "10.1.0.5" },
  { family: 4, type: 1, dst: "192.168.9.0/24", gw: "192.168.9.1", dev: "eth0", table: 254, protocol: 3, scope: 0 },
  { family: 6, type: 1, dst: "fd01::/64", dev: "eth0", table: 254, protocol: 2, scope: 0, metric: 256, pref: "medium" },
  { family: 6, type: 1, dst: "fe80::/64", dev: "eth0", table: 254, protocol: 2, scope: 0, metric: 256, pref: "medium" },
  { family: 4, type: 2, dst: "10.1.0.5/32", dev: "eth0", table: 255, protocol: 2, scope: 254, src: "10.1.0.5" },
  { family: 4, type: 1, dst: "10.9.0.0/24", dev: "other", table: 254, protocol: 2, scope: 253, src: "10.9.0.5" },
];
const PREV: Result100 = {
  cniVersion: "1.1.0",
  interfaces: [{ name: "br0" }, { name: "veth1" }, { name: "eth0", sandbox: "/run/netns/x" }],
  ips: [
    { interface: 2, address: "10.1.0.5/24", gateway: "10.1.0.1" },
    { interface: 2, address: "fd01::5/64", gateway: "fd01::1" },
  ],
};
const settings = (s: Partial<SbrSettings> = {}): SbrSettings => ({ ifName: "eth0", gateways: {}, addSourceHints: false, ...s });
const cmd = (s: IpStep) => [...(s.options ?? []), ...s.words].join(" ");

describe("sbr plan", () => {
  test("addresses: those of CNI_IFNAME, without an interface, or with an index outside the list", () => {
    const prev: Result100 = {
      cniVersion: "1.1.0",
      interfaces: [{ name: "eth0" }, { name: "net1" }],
      ips: [
        { interface: 0, address: "10.0.0.1/24" },
        { interface: 1, address: "10.0.1.1/24" },
        { address: "10.0.2.1/24" },
        { interface: 7, address: "10.0.3.1/24" },
      ],
    };
    assert.deepEqual(
      selectIPs("eth0", prev).map((i) => i.address),
      ["10.0.0.1/24", "10.0.2.1/24", "10.0.3.1/24"],
    );
    assert.throws(
      () => selectIPs("eth0", { cniVersion: "1.1.0" }),
      (e: unknown) => e instanceof CniError && /No IP addresses supplied on interface: eth0/.test(e.msg),
    );
  });

  test("tables: the first id from 100 that no rule and no route uses", () => {
    assert.equal(nextFreeTable({ rules: DEFAULT_RULES, routes: ROUTES }, 100), 100);
    const busy = {
      rules: [...DEFAULT_RULES, { family: 4 as const, priority: 5, src: "1.2.3.4/32", table: 100 }],
      routes: [{ ...ROUTES[0]!, table: 101 }],
    };
    assert.equal(nextFreeTable(busy, 100), 102);
  });

  test("ADD: per address a table with a rule, a default route and the routes that belong to it; then main is cleared", () => {
    const plan = planSbrAdd(selectIPs("eth0", PREV), { rules: DEFAULT_RULES, routes: ROUTES }, settings());
    assert.deepEqual(plan.tables, [100, 101]);
    assert.deepEqual(plan.steps.map(cmd), [
      "-4 rule add from 10.1.0.5/32 table 100",
      "route add 0.0.0.0/0 via 10.1.0.1 dev eth0 table 100",
      "route replace 0.0.0.0/0 via 10.1.0.1 dev eth0 proto 3 scope 0 table 100",
      "route replace 10.1.0.0/24 dev eth0 proto 2 scope 253 src 10.1.0.5 table 100",
      "route replace fd01::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 100",
      "route replace fe80::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 100",
      "-6 rule add from fd01::5/128 table 101",
      "route add ::/0 via fd01::1 dev eth0 table 101",
      "route replace fd01::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 101",
      "route replace fe80::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 101",
      "route del 0.0.0.0/0 via 10.1.0.1 dev eth0 proto 3 scope 0 table 254",
      "route del 10.1.0.0/24 dev eth0 proto 2 scope 253 src 10.1.0.5 table 254",
      "route del 192.168.9.0/24 via 192.168.9.1 dev eth0 proto 3 scope 0 table 254",
      "route del fd01::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 254",
      "route del fe80::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 254",
    ]);
    assert.deepEqual(plan.bestEffort, []);
    // Every step can be undone; the undo of a main-table removal puts the route back.
    assert.ok(plan.steps.every((s) => s.undo));
    assert.equal(cmd({ words: plan.steps[0]!.undo!.words, options: plan.steps[0]!.undo!.options }), "-4 rule del from 10.1.0.5/32 table 100");
    assert.equal(plan.steps.at(-1)!.undo!.words.join(" "), "route add fe80::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 254");
  });

  test("ADD with static gateways: they replace the prevResult's, per family, and main's default route is not copied over them", () => {
    const plan = planSbrAdd(selectIPs("eth0", PREV), { rules: DEFAULT_RULES, routes: [] }, settings({ gateways: { 6: "fd01::fe" } }));
    assert.deepEqual(plan.steps.map(cmd), [
      "-4 rule add from 10.1.0.5/32 table 100",
      "route add 0.0.0.0/0 via 10.1.0.1 dev eth0 table 100",
      "-6 rule add from fd01::5/128 table 101",
      "route add ::/0 via fd01::fe dev eth0 table 101",
    ]);
    const withMain = planSbrAdd(
      selectIPs("eth0", PREV),
      { rules: DEFAULT_RULES, routes: ROUTES },
      settings({ gateways: { 4: "10.1.0.254" } }),
    ).steps.map(cmd);
    assert.ok(withMain.includes("route add 0.0.0.0/0 via 10.1.0.254 dev eth0 table 100"));
    assert.ok(!withMain.some((c) => c.startsWith("route replace 0.0.0.0/0")), withMain.join("\n"));
  });

  test("ADD with addSourceHints: subnet routes in main get the address as source, only non-link routes are removed", () => {
    const plan = planSbrAdd(selectIPs("eth0", PREV), { rules: DEFAULT_RULES, routes: ROUTES }, settings({ addSourceHints: true }));
    assert.ok(!plan.steps.some((s) => s.words.includes("254")), "nothing in main is required");
    assert.deepEqual(plan.bestEffort.map(cmd), [
      "route replace 10.1.0.0/24 dev eth0 src 10.1.0.5 scope link table 254",
      "route replace fd01::/64 dev eth0 src fd01::5 scope link table 254",
      "route del 0.0.0.0/0 via 10.1.0.1 dev eth0 proto 3 scope 0 table 254",
      "route del 192.168.9.0/24 via 192.168.9.1 dev eth0 proto 3 scope 0 table 254",
      "route del fd01::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 254",
      "route del fe80::/64 dev eth0 proto 2 scope 0 metric 256 pref medium table 254",
    ]);
  });

  test("ADD with table: only the rules", () => {
    const plan = planSbrAdd(selectIPs("eth0", PREV), { rules: [], routes: [] }, settings({ table: 500 }));
    assert.deepEqual(plan.steps.map(cmd), ["-4 rule add from 10.1.0.5/32 table 500", "-6 rule add from fd01::5/128 table 500"]);
    assert.deepEqual(plan.tables, [500, 500]);
  });

  test("DEL: the rules whose source is one of the addresses (only of `table` when set), with their priority", () => {
    const rules: IpRule[] = [
      ...DEFAULT_RULES,
      { family: 4, priority: 32765, src: "10.1.0.5/32", table: 100 },
      { family: 6, priority: 32765, src: "fd01::5/128", table: 101 },
      { family: 4, priority: 32764, src: "10.1.0.6/32", table: 102 },
    ];
    assert.deepEqual(planSbrDel(rules, ["10.1.0.5/24", "fd01::5/64", "fe80::1/64"]).map(cmd), [
      "-4 rule del from 10.1.0.5/32 table 100 priority 32765",
      "-6 rule del from fd01::5/128 table 101 priority 32765",
    ]);
    assert.deepEqual(planSbrDel(rules, ["10.1.0.5/24", "fd01::5/64"], 101).map(cmd), ["-6 rule del from fd01::5/128 table 101 priority 32765"]);
    assert.deepEqual(planSbrDel(rules, []), []);
  });

  test("CHECK: a rule per address into its own table, holding the default route via the gateway", () => {
    const ips = selectIPs("eth0", PREV);
    const rules: IpRule[] = [
      ...DEFAULT_RULES,
      { family: 4, priority: 32765, src: "10.1.0.5/32", table: 100 },
      { family: 6, priority: 32765, src: "fd01::5/128", table: 101 },
    ];
    const routes: KernelRoute[] = [
      { family: 4, type: 1, dst: "0.0.0.0/0", gw: "10.1.0.1", dev: "eth0", table: 100, protocol: 3, scope: 0 },
      { family: 6, type: 1, dst: "::/0", gw: "fd01::1", dev: "eth0", table: 101, protocol: 3, scope: 0, metric: 1024 },
    ];
    assert.deepEqual(verifySbr(ips, { rules, routes }, settings()), []);
    assert.deepEqual(verifySbr(ips, { rules, routes: routes.slice(1) }, settings()), ["table 100 has no default route via 10.1.0.1 dev eth0"]);
    assert.deepEqual(verifySbr(ips, { rules: rules.slice(0, -1), routes }, settings()), ['no rule "from fd01::5/128 lookup <table>"']);
    assert.deepEqual(verifySbr(ips, { rules, routes }, settings({ table: 100 })), ['no rule "from fd01::5/128 lookup 100"']);
    assert.deepEqual(verifySbr(ips, { rules, routes }, settings({ gateways: { 4: "10.1.0.254" } })), [
      "table 100 has no default route via 10.1.0.254 dev eth0",
    ]);
  });
});

describe("sbr config", () => {
  const load = (keys: Record<string, unknown>) => loadSbrConf(Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "sbr", ...keys })));
  const rejects = (keys: Record<string, unknown>, pattern: RegExp) =>
    assert.throws(
      () => load(keys),
      (e: unknown) => e instanceof CniError && e.code === 7 && pattern.test(e.msg),
    );

  test("defaults and keys", () => {
    assert.deepEqual({ ...load({}), conf: undefined }, { conf: undefined, gateways: {}, addSourceHints: false });
    const n = load({ table: 300, gateways: ["10.0.0.1", "fd00::1"], addSourceHints: true });
    assert.deepEqual([n.table, n.gateways, n.addSourceHints], [300, { 4: "10.0.0.1", 6: "fd00::1" }, true]);
  });

  test("bad values are code 7 errors naming the key and value", () => {
    rejects({ table: "abc" }, /"table": "abc"/);
    rejects({ table: 0 }, /"table": 0/);
    rejects({ table: -1 }, /"table": -1/);
    rejects({ table: 1.5 }, /"table": 1.5/);
    rejects({ table: 2 ** 32 }, /"table": 4294967296/);
    rejects({ gateways: "10.0.0.1" }, /"gateways": "10.0.0.1"/);
    rejects({ gateways: ["nope"] }, /"gateways\[0\]": "nope"/);
    rejects({ gateways: ["10.0.0.1", "10.0.0.2"] }, /"gateways".*at most one IPv4/);
    rejects({ gateways: ["10.0.0.1", "fd00::1", "fd00::2"] }, /"gateways".*at most 2/);
    rejects({ addSourceHints: "yes" }, /"addSourceHints": "yes"/);
  });
});
