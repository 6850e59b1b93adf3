/**
 * Callers that break the trust rules on purpose, for the tests of docs/trust.md: command prefixes that run a
 * program as a root without capabilities, as the root of a user namespace, with no_new_privs, or under a seccomp
 * filter that makes setns(2) fail (a small C program built here with gcc, as containerd.ts builds its pause), and
 * a raw client of the resident server that speaks the protocol without the launcher's checks (an attacker's).
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./harness.js";

/** A root process with no capabilities at all. */
export const CAPLESS = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"];
/** The root of a new user namespace, mapped to uid 0 outside. */
export const USERNS_ROOT = ["unshare", "--user", "--map-root-user", "--"];
/** A root process with no_new_privs set. */
export const NO_NEW_PRIVS = ["setpriv", "--no-new-privs", "--"];

const SECCOMP_EXEC = `#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
/* Runs argv[1..] under a seccomp filter that makes setns(2) fail with EPERM and allows everything else. */
int main(int argc, char **argv) {
  struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setns, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
  if (argc < 2 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp-exec");
    return 127;
  }
  execvp(argv[1], argv + 1);
  perror("seccomp-exec: exec");
  return 127;
}
`;

let seccompExec: string | undefined;
/** A prefix that runs a program under a seccomp filter denying setns (built on first use; throws without gcc). */
export function seccompNoSetns(): string[] {
  if (!seccompExec) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-seccomp-"));
    const out = path.join(dir, "seccomp-exec");
    const r = spawnSync("gcc", ["-O2", "-x", "c", "-", "-o", out], { input: SECCOMP_EXEC, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`cannot build the seccomp helper: ${r.error?.message ?? r.stderr}`);
    seccompExec = out;
  }
  return [seccompExec];
}

/** The build ID the launcher speaks with. */
export const buildId = (): string => readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();

/**
 * A node script (for `node -e`) that connects to `socket`, sends a hello announcing a request of `requestBytes`,
 * and prints the server's first answer byte and its reason ("N <reason>", or "Y"), then exits: a client that
 * skips every check the launcher makes.
 */
export function rawHelloScript(socket: string, requestBytes = 100): string {
  return `const net = require("net");
    const id = Buffer.from(${JSON.stringify(buildId())});
    const s = net.connect(${JSON.stringify(socket)});
    const hello = Buffer.alloc(12 + id.length);
    hello.write("TSCNI\\x02", 0, "latin1"); hello.writeUInt16LE(id.length, 6); id.copy(hello, 8); hello.writeUInt32LE(${requestBytes}, 8 + id.length);
    let got = Buffer.alloc(0);
    s.on("data", (d) => (got = Buffer.concat([got, d])));
    s.on("error", () => {});
    s.on("close", () => { process.stdout.write(got.length === 0 ? "" : got[0] === 0x4e ? "N " + got.subarray(3).toString() : String.fromCharCode(got[0])); process.exit(0); });
    s.write(hello);
    setTimeout(() => s.destroy(), 3000);`;
}
