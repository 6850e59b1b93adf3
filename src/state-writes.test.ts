/**
 * The state rule (docs/state.md): every file of tscni's state is written through src/sys/state.ts, where the crash
 * simulator sees it. Kept over the product sources: a call of a node:fs function that makes, changes or removes a
 * file is allowed only in sys/state.ts and in the modules NOT_STATE names, each with what it writes and why that is
 * not state a crash could leave torn (kernel interfaces, lock files that hold no data, the resident server's and the
 * dhcp daemon's runtime files under /run, an installation).
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";

const SRC = path.join(ROOT, "src");

/** Modules that write files which are not state, and why. */
const NOT_STATE: Record<string, string> = {
  "sys/state.ts": "the module that writes state",
  "sys/flock.ts": "lock files: empty, their existence and flock are the whole of them",
  "plugins/common/lock-file.ts": "lock files (Go's filemutex): empty",
  "runtime/pod-locks.ts": "the pod manager's lock directory: empty lock files",
  "resident/socket-dir.ts": "the resident server's socket, lock and directory under /run: gone at a reboot, remade at a start",
  "resident/own-cgroup.ts": "cgroupfs: the kernel's interface, not files",
  "resident/server-log.ts": "the server's log under /run: appended lines read by people, never by a recovery; a torn last line is a torn log line",
  "resident/warm-up.ts": "a private temporary store for the warm-up, removed after it",
  "plugins/ipam/dhcp/daemon.ts": "the daemon's socket, its directory and its pid file under /run, as Go's daemon writes them",
  "net/sysctl.ts": "/proc/sys: the kernel's interface",
  "plugins/ipam/dhcp/netns-sockets6.ts": "/proc/sys of a container's namespace: the kernel's interface",
  "cnitool/install.ts": "an installation (binaries, links, systemd units), replaced atomically; not state of calls",
  "sys/stdio.ts": "the process's own stdout and stderr",
  "sys/phase-trace.ts": "a diagnostic log the operator asks for (--trace-phases): appended JSON lines, a torn last line is a lost trace",
};

/** A node:fs call that makes, changes or removes a file (or opens one to write). */
const WRITES =
  /\b(writeFileSync|writeFile|appendFileSync|appendFile|renameSync|rename|unlinkSync|unlink|rmSync|rm|rmdirSync|rmdir|mkdirSync|mkdir|copyFileSync|copyFile|symlinkSync|symlink|linkSync|truncateSync|ftruncateSync|writeSync|fsyncSync|mkdtempSync)\s*\(/;

/** An open(2) that may create or write a file. */
const OPENS_TO_WRITE = /\bopenSync\([^;]*(O_CREAT|O_WRONLY|O_RDWR|O_TRUNC|O_APPEND|["'][wa]\+?["'])/;

function productSources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!["testing", "integration", "demo"].includes(entry.name)) productSources(file, out);
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") && !entry.name.endsWith(".d.ts")) {
      out.push(file);
    }
  }
  return out;
}

/** The names a module gives node:fs's write functions by renaming them in an import (`writeFileSync as put`). */
function aliasedWrites(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*["'](?:node:)?fs(?:\/promises)?["']/g)) {
    for (const part of m[1]!.split(",")) {
      const [name, alias] = part.trim().split(/\s+as\s+/);
      if (alias && WRITES.test(`${name}(`)) out.push(alias.trim());
    }
  }
  return out;
}

test("every file write of state goes through sys/state.ts", () => {
  const problems: string[] = [];
  for (const file of productSources(SRC)) {
    const rel = path.relative(SRC, file);
    if (NOT_STATE[rel]) continue;
    const source = readFileSync(file, "utf8");
    // A write function imported under another name is a write under that name (the crash simulator also sees the
    // files that change around sys/state.ts at run time: src/testing/crash/run.ts).
    const aliases = aliasedWrites(source);
    const aliased = aliases.length ? new RegExp(`\\b(${aliases.join("|")})\\s*\\(`) : undefined;
    source.split("\n").forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, "").replace(/^\s*\*.*$/, "");
      const m = WRITES.exec(code) ?? OPENS_TO_WRITE.exec(code) ?? (aliased && !/^\s*import\b/.test(code) ? aliased.exec(code) : null);
      // (methods of other objects: a socket's write, a Map's, a string's, cnitool's own commands)
      if (m && !/\.(write|end|rename|rm)\s*\(/.test(code.slice(Math.max(0, m.index - 1)))) problems.push(`${rel}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(problems, [], "write these through sys/state.ts, or name the module in NOT_STATE with why it is not state");
});

test("a write function imported under another name is seen", () => {
  assert.deepEqual(aliasedWrites(`import { readdirSync, writeFileSync as put } from "node:fs";`), ["put"]);
  assert.deepEqual(aliasedWrites(`import {\n  renameSync as mv,\n  readFileSync as read,\n} from "fs";`), ["mv"]);
});

test("the modules NOT_STATE names exist (a rename must not leave a stale exception)", () => {
  const all = new Set(productSources(SRC).map((f) => path.relative(SRC, f)));
  assert.deepEqual(
    Object.keys(NOT_STATE).filter((m) => !all.has(m)),
    [],
  );
});
