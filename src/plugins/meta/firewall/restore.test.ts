/**
 * The firewalld backend after firewalld reloaded (it forgets sources added at run time): only the sources that are
 * gone are added again, through a fake busctl. (The iptables and nftables backends are tested as root, in
 * src/integration/reload.test.ts.)
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { Firewalld } from "#net/firewall/firewalld.js";
import { selectBackend } from "./backends.js";
import { loadFirewallConf } from "./config.js";

test("firewalld restore: sources no longer in the zone are added again, present ones are left; nothing missing changes nothing", async () => {
  const zone = new Set(["10.0.0.2/32"]);
  const calls: string[][] = [];
  const fw = new Firewalld(
    async (args) => {
      calls.push(args);
      const [method, , , source] = args.slice(4);
      if (method === "addSource") zone.add(source!);
      return { stdout: JSON.stringify({ data: [method === "querySource" ? zone.has(source!) : ""] }), stderr: "" };
    },
    { DBUS_SYSTEM_BUS_ADDRESS: "tcp:host=nowhere" },
  );
  const conf = loadFirewallConf(
    Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "firewall", backend: "firewalld", firewalldZone: "internal" })),
  );
  const backend = await selectBackend(conf, fw, async () => true);
  const a = { network: "n", containerID: "c", ifName: "eth0", addresses: ["10.0.0.2/24", "fd00::2/64"] };
  assert.equal(await backend.restore(a), true);
  assert.deepEqual(
    calls.filter((c) => c[4] === "addSource").map((c) => c.slice(6)),
    [["internal", "fd00::2/128"]],
  );
  assert.equal(await backend.restore(a), false);
  assert.equal(calls.filter((c) => c[4] === "addSource").length, 1);
  assert.deepEqual(backend.marks(a), [], "firewalld's sources have no cheap mark: its Reloaded signal covers them");
});
