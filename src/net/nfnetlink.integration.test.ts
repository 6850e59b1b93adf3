/**
 * net/nfnetlink.ts against iptables-nft itself, in a namespace of the test's own: every rule shape the plugins
 * (ours and Go's) write, in both families, read over netlink renders exactly as `iptables -S` prints it; a rule
 * of another shape renders as a line no rule equals; a missing table lists nothing; deletion by handle takes
 * rules and chains in one transaction, and a stale handle fails it whole.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { ROOT, runTag, skipReason } from "../testing/harness.js";

const BUN = path.join(ROOT, "node_modules/.bin/bun");
const DRIVER = path.join(ROOT, "dist-test/testing/nft-driver.js");
const nftVariant = () => {
  try {
    return realpathSync(execFileSync("sh", ["-c", "command -v iptables"], { encoding: "utf8" }).trim()).endsWith("xtables-nft-multi");
  } catch {
    return false;
  }
};
const skip = skipReason(false, !existsSync(BUN) ? "Bun is not installed (node_modules/.bin/bun)" : !nftVariant() ? "iptables here is not iptables-nft" : undefined);
const tag = runTag();
const ns = `tscni-nfl-${tag}`;
after(() => spawnSync("ip", ["netns", "delete", ns]));

const inNs = (cmd: string, args: string[]) => execFileSync("ip", ["netns", "exec", ns, cmd, ...args], { encoding: "utf8" });
const driver = (...args: string[]) => inNs(BUN, [DRIVER, ...args]);
interface Listing { chains: string[]; rules: Array<{ chain: string; line: string; handle: string }> }
const list = (family: "4" | "6", table: string, chains: string[]) => JSON.parse(driver("list", family, table, ...chains)) as Listing;
/** `iptables -S CHAIN` as lines. */
const saved = (family: "4" | "6", table: string, chain: string) =>
  inNs(family === "4" ? "iptables" : "ip6tables", ["-t", table, "-S", chain]).split("\n").filter((l) => l.startsWith("-A "));

describe("nf_tables over netlink, read as iptables -S", { skip }, () => {
  test("every shape the plugins write, both families, renders as iptables -S prints it", () => {
    execFileSync("ip", ["netns", "add", ns]);
    const script = (v6: boolean) => {
      const [a, net, mc] = v6 ? ["fd00:1::5/128", "fd00:1::/64", "ff00::/8"] : ["10.1.2.3/32", "10.1.2.0/24", "224.0.0.0/4"];
      return [
        "*filter", ":CNI-FORWARD - [0:0]", ":CNI-ADMIN - [0:0]", ":CNI-ISOLATION-STAGE-1 - [0:0]", ":CNI-ISOLATION-STAGE-2 - [0:0]",
        '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
        '-A FORWARD -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j CNI-ISOLATION-STAGE-1',
        '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN',
        `-A CNI-FORWARD -d ${a} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
        `-A CNI-FORWARD -s ${a} -j ACCEPT`,
        '-A CNI-ISOLATION-STAGE-1 -i cni0 ! -o cni0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j CNI-ISOLATION-STAGE-2',
        '-A CNI-ISOLATION-STAGE-1 -i cni0 -o cni0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j DROP',
        "-A CNI-ISOLATION-STAGE-1 -j RETURN",
        "-A CNI-ISOLATION-STAGE-2 -o cni0 -j DROP",
        "-A CNI-ISOLATION-STAGE-2 -o veth+ -j RETURN",
        "-A CNI-ADMIN -p tcp -m tcp --dport 80 -j DROP", // not a shape the plugins write
        "-A CNI-ADMIN -m conntrack --ctstate NEW,INVALID -g CNI-ISOLATION-STAGE-2",
        "COMMIT",
        "*nat", ":CNI-abc - [0:0]",
        `-A POSTROUTING -s ${a} -m comment --comment "name: \\"bench\\" id: \\"c1\\"" -j CNI-abc`,
        `-A CNI-abc -d ${net} -m comment --comment "name: \\"bench\\" id: \\"c1\\"" -j ACCEPT`,
        `-A CNI-abc ! -d ${mc} -m comment --comment "name: \\"bench\\" id: \\"c1\\"" -j MASQUERADE`,
        "COMMIT", "",
      ].join("\n");
    };
    for (const [family, restore] of [["4", "iptables-restore"], ["6", "ip6tables-restore"]] as const) {
      execFileSync("ip", ["netns", "exec", ns, restore, "--noflush"], { input: script(family === "6") });
      const filterChains = ["FORWARD", "CNI-FORWARD", "CNI-ADMIN", "CNI-ISOLATION-STAGE-1", "CNI-ISOLATION-STAGE-2"];
      const filter = list(family, "filter", filterChains);
      // iptables-nft makes a built-in chain when a rule needs it; -S shows all of them: compare the user chains.
      assert.deepEqual(filter.chains.filter((c) => c.startsWith("CNI-")).sort(),
        inNs(family === "4" ? "iptables" : "ip6tables", ["-S"]).split("\n").filter((l) => l.startsWith("-N ")).map((l) => l.slice(3)).sort());
      for (const chain of filterChains) {
        const ours = filter.rules.filter((r) => r.chain === chain).map((r) => r.line);
        const want = saved(family, "filter", chain);
        if (chain === "CNI-ADMIN") {
          assert.match(ours[0]!, /^-A CNI-ADMIN <rule \d+ of a form tscni does not read>$/, "a foreign shape equals no line");
          assert.equal(ours[1], want[1]);
        } else {
          assert.deepEqual(ours, want, `${family} filter ${chain}`);
        }
      }
      const nat = list(family, "nat", ["POSTROUTING", "CNI-abc"]);
      assert.deepEqual(nat.rules.map((r) => r.line), [...saved(family, "nat", "POSTROUTING"), ...saved(family, "nat", "CNI-abc")], `${family} nat`);
    }
  });

  test("a table that is not there lists nothing; deletion by handle is one transaction", () => {
    assert.deepEqual(list("4", "mangle", ["PREROUTING"]), { chains: [], rules: [] });
    const nat = list("4", "nat", ["POSTROUTING", "CNI-abc"]);
    const jump = nat.rules.find((r) => r.chain === "POSTROUTING")!;
    // A stale handle fails the whole batch: the jump stays.
    assert.match(driver("delete", "4", "nat", `POSTROUTING:${jump.handle},POSTROUTING:999999`, ""), /^error: test deletion: .*No such file or directory/);
    assert.equal(saved("4", "nat", "POSTROUTING").length, 1);
    assert.equal(driver("delete", "4", "nat", `POSTROUTING:${jump.handle}`, "CNI-abc").trim(), "ok");
    assert.deepEqual(saved("4", "nat", "POSTROUTING"), []);
    assert.doesNotMatch(inNs("iptables", ["-t", "nat", "-S"]), /CNI-abc/);
    assert.match(inNs("ip6tables", ["-t", "nat", "-S"]), /CNI-abc/, "the other family is untouched");
  });
});
