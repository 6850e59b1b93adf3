/**
 * docs/trust.md names, for each peer a peer rule judges, the rule's constant and quotes the rule in words: this
 * test holds each quoted rule to the code's constant (describeRule), and requires a row for every privileged peer
 * tscni talks to, so the document's table and the code's checks cannot drift apart unnoticed.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { CALLER_RULE } from "#plugins/ipam/dhcp/daemon.js";
import { DAEMON_LISTENER_RULE } from "#plugins/ipam/dhcp/protocol.js";
import { CRI_LISTENER_RULE } from "#runtime/cri/runtime-service.js";
import { describeRule, type PeerRule, SAME_PROCESS_RULE } from "#sys/peer.js";
import { ROOT } from "#testing/harness.js";

const RULES: Record<string, PeerRule> = { SAME_PROCESS_RULE, CALLER_RULE, DAEMON_LISTENER_RULE, CRI_LISTENER_RULE };

/** The rows of the table under "Who is served, and who is sent to": cells by column. */
function rows(): string[][] {
  const text = readFileSync(path.join(ROOT, "docs/trust.md"), "utf8");
  const section = text.slice(text.indexOf("## Who is served, and who is sent to"));
  const lines = section.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| direction") && !l.startsWith("|---"));
  return lines.map((l) =>
    l
      .replaceAll("\\|", "{pipe}")
      .split("|")
      .slice(1, -1)
      .map((c) => c.replaceAll("{pipe}", "|").trim()),
  );
}

test("docs/trust.md: every rule the table names by its constant is quoted as the code has it", () => {
  const named = rows().flatMap(([direction, rule]) => {
    const m = /^`([A-Z_]+)`: (.*)$/.exec(rule ?? "");
    return m ? [{ direction: direction!, name: m[1]!, words: m[2]! }] : [];
  });
  assert.ok(named.length >= 5, `rules named: ${named.map((n) => n.name)}`);
  for (const { direction, name, words } of named) {
    const rule = RULES[name];
    assert.ok(rule, `${direction}: ${name} is not a rule the code has`);
    assert.ok(words.startsWith(describeRule(rule)), `${direction}: the document says "${words.slice(0, 120)}", the code "${describeRule(rule)}"`);
  }
  assert.deepEqual([...new Set(named.map((n) => n.name))].sort(), Object.keys(RULES).sort(), "every rule of the code is in the table");
});

test("docs/trust.md: a row for every privileged peer tscni serves or talks to", () => {
  const directions = rows().map(([d]) => d!);
  for (const peer of [
    /resident server ← caller/,
    /launcher → listener/,
    /cnitool daemon/,
    /dhcp daemon ← caller/,
    /dhcp plugin → listener/,
    /CRI runtime/,
    /etcd/,
    /firewalld/,
  ])
    assert.ok(
      directions.some((d) => peer.test(d)),
      `no row for ${peer}: ${directions.join(" / ")}`,
    );
});
