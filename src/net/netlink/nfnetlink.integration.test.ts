/**
 * net/netlink/nfnetlink.ts against iptables-nft itself, in a namespace of the test's own: every rule shape the plugins
 * (ours and Go's) write, in both families, read over netlink renders exactly as `iptables -S` prints it; a rule
 * of another shape renders as a line no rule equals; a missing table lists nothing; deletion by handle takes
 * rules and chains in one transaction, and a stale handle fails it whole; rules added over netlink are, expression
 * for expression, those iptables-restore makes, and iptables itself (-C, -D: Go's plugins' checks) takes them as
 * its own.
 */

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { ROOT, runTag, skipReason } from "#testing/harness.js";

const BUN = path.join(ROOT, "node_modules/.bin/bun");
const DRIVER = path.join(ROOT, "dist-test/testing/nft-driver.js");
const nftVariant = () => {
  try {
    return realpathSync(execFileSync("sh", ["-c", "command -v iptables"], { encoding: "utf8" }).trim()).endsWith("xtables-nft-multi");
  } catch {
    return false;
  }
};
const skip = skipReason(
  false,
  !existsSync(BUN) ? "Bun is not installed (node_modules/.bin/bun)" : !nftVariant() ? "iptables here is not iptables-nft" : undefined,
);
const tag = runTag();
const ns = `tscni-nfl-${tag}`;
const ns2 = `tscni-nfw-${tag}`;
after(() => {
  spawnSync("ip", ["netns", "delete", ns]);
  spawnSync("ip", ["netns", "delete", ns2]);
});

const inNs = (cmd: string, args: string[], where = ns) => execFileSync("ip", ["netns", "exec", where, cmd, ...args], { encoding: "utf8" });
const driver = (...args: string[]) => inNs(BUN, [DRIVER, ...args]);
interface Listing {
  chains: string[];
  rules: Array<{ chain: string; line: string; handle: string; readable: boolean; jump?: string }>;
}
const list = (family: "4" | "6", table: string, chains: string[]) => JSON.parse(driver("list", family, table, ...chains)) as Listing;
/** `iptables -S CHAIN` as lines. */
const saved = (family: "4" | "6", table: string, chain: string) =>
  inNs(family === "4" ? "iptables" : "ip6tables", ["-t", table, "-S", chain])
    .split("\n")
    .filter((l) => l.startsWith("-A "));

describe("nf_tables over netlink, read as iptables -S", { skip }, () => {
  test("every shape the plugins write, both families, renders as iptables -S prints it", () => {
    execFileSync("ip", ["netns", "add", ns]);
    const script = (v6: boolean) => {
      const [a, net, mc] = v6 ? ["fd00:1::5/128", "fd00:1::/64", "ff00::/8"] : ["10.1.2.3/32", "10.1.2.0/24", "224.0.0.0/4"];
      return [
        "*filter",
        ":CNI-FORWARD - [0:0]",
        ":CNI-ADMIN - [0:0]",
        ":CNI-ISOLATION-STAGE-1 - [0:0]",
        ":CNI-ISOLATION-STAGE-2 - [0:0]",
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
        "-A CNI-ADMIN -p tcp -m tcp --dport 80:90 -j DROP", // not a shape the plugins write
        "-A CNI-ADMIN -m conntrack --ctstate NEW,INVALID -g CNI-ISOLATION-STAGE-2",
        "COMMIT",
        "*nat",
        ":CNI-abc - [0:0]",
        `-A POSTROUTING -s ${a} -m comment --comment "name: \\"bench\\" id: \\"c1\\"" -j CNI-abc`,
        `-A CNI-abc -d ${net} -m comment --comment "name: \\"bench\\" id: \\"c1\\"" -j ACCEPT`,
        `-A CNI-abc ! -d ${mc} -m comment --comment "name: \\"bench\\" id: \\"c1\\"" -j MASQUERADE`,
        "COMMIT",
        "",
      ].join("\n");
    };
    for (const [family, restore] of [
      ["4", "iptables-restore"],
      ["6", "ip6tables-restore"],
    ] as const) {
      execFileSync("ip", ["netns", "exec", ns, restore, "--noflush"], { input: script(family === "6") });
      const filterChains = ["FORWARD", "CNI-FORWARD", "CNI-ADMIN", "CNI-ISOLATION-STAGE-1", "CNI-ISOLATION-STAGE-2"];
      const filter = list(family, "filter", filterChains);
      // iptables-nft makes a built-in chain when a rule needs it; -S shows all of them: compare the user chains.
      assert.deepEqual(
        filter.chains.filter((c) => c.startsWith("CNI-")).sort(),
        inNs(family === "4" ? "iptables" : "ip6tables", ["-S"])
          .split("\n")
          .filter((l) => l.startsWith("-N "))
          .map((l) => l.slice(3))
          .sort(),
      );
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
      assert.deepEqual(
        nat.rules.map((r) => r.line),
        [...saved(family, "nat", "POSTROUTING"), ...saved(family, "nat", "CNI-abc")],
        `${family} nat`,
      );
    }
  });

  test("a table that is not there lists nothing; deletion by handle is one transaction", () => {
    assert.deepEqual(list("4", "mangle", ["PREROUTING"]), { chains: [], rules: [] });
    const nat = list("4", "nat", ["POSTROUTING", "CNI-abc"]);
    const jump = nat.rules.find((r) => r.chain === "POSTROUTING")!;
    // A stale handle fails the whole batch: the jump stays.
    assert.match(
      driver("delete", "4", "nat", `POSTROUTING:${jump.handle},POSTROUTING:999999`, ""),
      /^error: test deletion: .*No such file or directory/,
    );
    assert.equal(saved("4", "nat", "POSTROUTING").length, 1);
    assert.equal(driver("delete", "4", "nat", `POSTROUTING:${jump.handle}`, "CNI-abc").trim(), "ok");
    assert.deepEqual(saved("4", "nat", "POSTROUTING"), []);
    assert.doesNotMatch(inNs("iptables", ["-t", "nat", "-S"]), /CNI-abc/);
    assert.match(inNs("ip6tables", ["-t", "nat", "-S"]), /CNI-abc/, "the other family is untouched");
  });

  test("rules added over netlink are the rules iptables-restore makes, and iptables takes them as its own", () => {
    execFileSync("ip", ["netns", "add", ns2]);
    const comment = 'name: "bench" id: "c2"';
    type Spec = { chains: string[]; rules: Array<{ chain: string; args: string[]; first?: boolean }> };
    const shapes = (v6: boolean): Record<"filter" | "nat", Spec> => {
      const [a, net, odd, mc] = v6
        ? ["fd00:2::7", "fd00:2::/64", "fd00:2::/60", "ff00::/8"]
        : ["10.2.3.4", "10.2.3.0/24", "10.2.0.0/20", "224.0.0.0/4"];
      return {
        filter: {
          chains: ["CNI-FORWARD", "CNI-ADMIN", "CNI-ISOLATION-STAGE-1"],
          rules: [
            { chain: "FORWARD", args: ["-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"], first: true },
            { chain: "CNI-FORWARD", args: ["-m", "comment", "--comment", "CNI firewall plugin admin overrides", "-j", "CNI-ADMIN"], first: true },
            { chain: "CNI-FORWARD", args: ["-d", `${a}/${v6 ? 128 : 32}`, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"] },
            { chain: "CNI-FORWARD", args: ["-s", `${a}/${v6 ? 128 : 32}`, "-j", "ACCEPT"] },
            { chain: "CNI-ISOLATION-STAGE-1", args: ["-i", "cni0", "!", "-o", "cni0", "-m", "comment", "--comment", "iso", "-j", "DROP"] },
            { chain: "CNI-ISOLATION-STAGE-1", args: ["-o", "veth+", "-j", "RETURN"] },
          ],
        },
        nat: {
          chains: ["CNI-n1"],
          rules: [
            { chain: "CNI-n1", args: ["-d", net, "-j", "ACCEPT", "-m", "comment", "--comment", comment] },
            { chain: "CNI-n1", args: ["-d", odd, "-j", "ACCEPT"] },
            { chain: "CNI-n1", args: ["!", "-d", mc, "-j", "MASQUERADE", "-m", "comment", "--comment", comment] },
            { chain: "POSTROUTING", args: ["-s", a, "-j", "CNI-n1", "-m", "comment", "--comment", comment] },
          ],
        },
      };
    };
    const quote = (w: string) => (/^[\w.:/!+,-]+$/.test(w) ? w : `"${w.replace(/(["\\])/g, "\\$1")}"`);
    for (const family of ["4", "6"] as const) {
      const tool = family === "4" ? "iptables" : "ip6tables";
      const spec = shapes(family === "6");
      // The reference, by iptables-restore in its own namespace.
      const script =
        Object.entries(spec)
          .flatMap(([table, { chains, rules }]) => [
            `*${table}`,
            ...chains.map((c) => `:${c} - [0:0]`),
            ...rules.map((r) => `${r.first ? `-I ${r.chain} 1` : `-A ${r.chain}`} ${r.args.map(quote).join(" ")}`),
            "COMMIT",
          ])
          .join("\n") + "\n";
      execFileSync("ip", ["netns", "exec", ns2, `${tool}-restore`, "--noflush"], { input: script });
      // Ours: the built-in chains made by iptables (as on a node), then chains and rules over netlink.
      const own = `tscni-nfo${family}-${tag}`;
      execFileSync("ip", ["netns", "add", own]);
      try {
        inNs(tool, ["-P", "FORWARD", "ACCEPT"], own);
        inNs(tool, ["-t", "nat", "-P", "POSTROUTING", "ACCEPT"], own);
        for (const [table, s] of Object.entries(spec)) {
          assert.equal(inNs(BUN, [DRIVER, "add", family, table, JSON.stringify(s)], own).trim(), "ok", `${family} ${table}`);
        }
        for (const table of ["filter", "nat"]) {
          assert.equal(inNs(tool, ["-t", table, "-S"], own), inNs(tool, ["-t", table, "-S"], ns2), `iptables -S ${family} ${table}`);
          // Expression for expression, chain by chain (handles and the nft warning aside).
          for (const chain of new Set(spec[table as "filter" | "nat"].rules.map((r) => r.chain))) {
            const exprs = (where: string) =>
              inNs("nft", ["--debug=netlink", "list", "chain", family === "4" ? "ip" : "ip6", table, chain], where)
                .split("\n")
                .filter((l) => l.startsWith("  ["))
                .join("\n");
            assert.equal(exprs(own), exprs(ns2), `nft expressions ${family} ${table} ${chain}`);
          }
        }
        // iptables takes them as its own: -C finds each (Go's plugins check this way), -D deletes by spec.
        for (const [table, { rules }] of Object.entries(spec)) {
          for (const r of rules) inNs(tool, ["-t", table, "-C", r.chain, ...r.args], own);
          const last = rules.at(-1)!;
          inNs(tool, ["-t", table, "-D", last.chain, ...last.args], own);
          assert.equal(spawnSync("ip", ["netns", "exec", own, tool, "-t", table, "-C", last.chain, ...last.args]).status, 1);
        }
        // A word outside the vocabulary is refused before anything is done.
        assert.equal(
          inNs(
            BUN,
            [
              DRIVER,
              "add",
              family,
              "filter",
              JSON.stringify({ chains: ["CNI-NEW"], rules: [{ chain: "CNI-NEW", args: ["-p", "icmp", "-j", "ACCEPT"] }] }),
            ],
            own,
          ).trim(),
          "not encodable",
        );
        assert.doesNotMatch(inNs(tool, ["-S"], own), /CNI-NEW/);
      } finally {
        spawnSync("ip", ["netns", "delete", own]);
      }
    }
  });

  test("portmap's shapes (ours and Go's): read as iptables -S prints them, added as iptables-restore adds them", () => {
    const quote = (w: string) => (/^[\w.:/!+,-]+$/.test(w) ? w : `"${w.replace(/(["\\])/g, "\\$1")}"`);
    const comment = 'dnat name: "bench" id: "c3"';
    const shapes = (v6: boolean) => {
      const [c, net, host, to] = v6
        ? ["fd00:3::9", "fd00:3::/64", "fd00:9::1", "[fd00:3::9]:80"]
        : ["10.3.0.9", "10.3.0.0/24", "192.0.2.1", "10.3.0.9:80"];
      return {
        chains: ["CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ", "CNI-HOSTPORT-DNAT", "CNI-DN-portmap"],
        rules: [
          {
            chain: "CNI-HOSTPORT-SETMARK",
            args: ["-m", "comment", "--comment", "CNI portfwd masquerade mark", "-j", "MARK", "--set-xmark", "0x2000/0x2000"],
          },
          { chain: "CNI-HOSTPORT-MASQ", args: ["-m", "mark", "--mark", "0x2000/0x2000", "-j", "MASQUERADE"] },
          { chain: "POSTROUTING", args: ["-m", "comment", "--comment", "CNI portfwd requiring masquerade", "-j", "CNI-HOSTPORT-MASQ"], first: true },
          { chain: "PREROUTING", args: ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"] },
          { chain: "OUTPUT", args: ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"] },
          {
            chain: "CNI-HOSTPORT-DNAT",
            args: [
              "-m",
              "comment",
              "--comment",
              comment,
              "-m",
              "multiport",
              "-p",
              "tcp",
              "--destination-ports",
              "8080,90,65535",
              "-j",
              "CNI-DN-portmap",
            ],
          },
          {
            chain: "CNI-HOSTPORT-DNAT",
            args: ["-m", "comment", "--comment", comment, "-m", "multiport", "-p", "udp", "--destination-ports", "53", "-j", "CNI-DN-portmap"],
          },
          {
            chain: "CNI-HOSTPORT-DNAT",
            args: ["-m", "comment", "--comment", comment, "-m", "multiport", "-p", "sctp", "--destination-ports", "9", "-j", "CNI-DN-portmap"],
          },
          { chain: "CNI-DN-portmap", args: ["-p", "tcp", "--dport", "8080", "-s", net, "-j", "CNI-HOSTPORT-SETMARK"] },
          { chain: "CNI-DN-portmap", args: ["-p", "tcp", "--dport", "8080", "-s", v6 ? "::/0" : "0.0.0.0/0", "-j", "CNI-HOSTPORT-SETMARK"] },
          ...(v6 ? [] : [{ chain: "CNI-DN-portmap", args: ["-p", "tcp", "--dport", "8080", "-s", "127.0.0.1", "-j", "CNI-HOSTPORT-SETMARK"] }]),
          { chain: "CNI-DN-portmap", args: ["-p", "tcp", "--dport", "8080", "-j", "DNAT", "--to-destination", to] },
          { chain: "CNI-DN-portmap", args: ["-p", "udp", "--dport", "53", "-d", host, "-j", "DNAT", "--to-destination", to] },
          { chain: "CNI-DN-portmap", args: ["-p", "sctp", "--dport", "9", "-j", "DNAT", "--to-destination", c] },
          { chain: "CNI-DN-portmap", args: ["-p", "tcp", "-m", "tcp", "--dport", "1", "-m", "mark", "--mark", "0x4", "-j", "ACCEPT"] },
        ],
      };
    };
    for (const family of ["4", "6"] as const) {
      const tool = family === "4" ? "iptables" : "ip6tables";
      const spec = shapes(family === "6");
      const [ref, own] = [`tscni-nfr${family}-${tag}`, `tscni-nfp${family}-${tag}`];
      execFileSync("ip", ["netns", "add", ref]);
      execFileSync("ip", ["netns", "add", own]);
      try {
        const script = [
          "*nat",
          ...spec.chains.map((c) => `:${c} - [0:0]`),
          ...spec.rules.map((r) => `${r.first ? `-I ${r.chain} 1` : `-A ${r.chain}`} ${r.args.map(quote).join(" ")}`),
          "COMMIT",
          "",
        ].join("\n");
        execFileSync("ip", ["netns", "exec", ref, `${tool}-restore`, "--noflush"], { input: script });
        // Read: every chain's rules render as iptables -S prints them, and each jump is known.
        const chains = ["PREROUTING", "OUTPUT", "POSTROUTING", ...spec.chains];
        const listing = JSON.parse(inNs(BUN, [DRIVER, "list", family, "nat", "all"], ref)) as Listing;
        for (const chain of chains) {
          assert.deepEqual(
            listing.rules.filter((r) => r.chain === chain).map((r) => r.line),
            inNs(tool, ["-t", "nat", "-S", chain], ref)
              .split("\n")
              .filter((l) => l.startsWith("-A ")),
            `${family} ${chain}`,
          );
        }
        assert.ok(listing.rules.every((r) => r.readable));
        assert.equal(listing.rules.filter((r) => r.jump === "CNI-DN-portmap").length, 3);
        // Added over netlink: the same table, expression for expression, and iptables -C takes each rule as its own.
        inNs(tool, ["-t", "nat", "-P", "POSTROUTING", "ACCEPT"], own);
        inNs(tool, ["-t", "nat", "-P", "PREROUTING", "ACCEPT"], own);
        inNs(tool, ["-t", "nat", "-P", "OUTPUT", "ACCEPT"], own);
        assert.equal(inNs(BUN, [DRIVER, "add", family, "nat", JSON.stringify(spec)], own).trim(), "ok");
        assert.equal(inNs(tool, ["-t", "nat", "-S"], own), inNs(tool, ["-t", "nat", "-S"], ref), `iptables -S ${family}`);
        for (const chain of chains) {
          const exprs = (where: string) =>
            inNs("nft", ["--debug=netlink", "list", "chain", family === "4" ? "ip" : "ip6", "nat", chain], where)
              .split("\n")
              .filter((l) => l.startsWith("  ["))
              .join("\n");
          assert.equal(exprs(own), exprs(ref), `nft expressions ${family} nat ${chain}`);
        }
        for (const r of spec.rules) inNs(tool, ["-t", "nat", "-C", r.chain, ...r.args], own);
      } finally {
        spawnSync("ip", ["netns", "delete", ref]);
        spawnSync("ip", ["netns", "delete", own]);
      }
    }
  });
});
