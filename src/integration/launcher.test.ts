/**
 * The C launcher in exec mode (launcher/launcher.c): it moves the config from the caller's pipe into an in-memory
 * file that becomes the program's stdin, and marks that with TSCNI_STDIN_MEMFD for the program alone. Checked
 * through a delegating plugin (flannel) and a delegate that records what it got (the whole config, large or
 * empty, and an environment without the mark), and through a stand-in program beside a copy of the launcher
 * (what its stdin is and holds: an in-memory file, or a pipe when memfd_create fails; a non-blocking stdin).
 * A stdin that cannot be read, a call missing a variable and a server that dies mid-call give the error
 * documents a Go plugin would print. No namespace is touched (flannel only renders and delegates).
 */

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { missing, OUR_BIN } from "#testing/harness.js";
import { standInServer } from "#testing/stand-in-server.js";

const launcherBuilt = existsSync(path.join(OUR_BIN, "..", "tscni"));
const skip = process.getuid?.() !== 0 ? "needs root" : launcherBuilt ? undefined : "the C launcher is not built (no C compiler)";
if (skip) console.log(`# skipping launcher tests: ${skip}`);

describe("launcher, exec mode", { skip }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-launcher-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // The delegate: records its stdin and environment, answers a result.
  const delegateDir = path.join(dir, "bin");
  spawnSync("mkdir", ["-p", delegateDir]);
  writeFileSync(
    path.join(delegateDir, "recorder"),
    `#!/bin/sh\ncat > "${dir}/stdin"\nenv > "${dir}/env"\necho '{"cniVersion":"1.0.0","ips":[{"address":"10.9.3.2/24"}]}'\n`,
  );
  chmodSync(path.join(delegateDir, "recorder"), 0o755);
  writeFileSync(path.join(dir, "subnet.env"), "FLANNEL_NETWORK=10.9.0.0/16\nFLANNEL_SUBNET=10.9.3.1/24\nFLANNEL_MTU=1400\nFLANNEL_IPMASQ=false\n");

  const flannel = (config: string) =>
    spawnSync(path.join(OUR_BIN, "flannel"), [], {
      input: config,
      encoding: "utf8",
      env: {
        PATH: process.env["PATH"],
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: "launcher-test",
        CNI_NETNS: "/run/netns/tscni-launcher-none",
        CNI_IFNAME: "eth0",
        CNI_PATH: `${delegateDir}:${OUR_BIN}`,
        TSCNI_RESIDENT_SOCKET: "",
      },
    });
  const conf = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "launcher-test",
      type: "flannel",
      subnetFile: path.join(dir, "subnet.env"),
      dataDir: path.join(dir, "data"),
      delegate: { type: "recorder" },
      ...extra,
    });

  test("the program reads the whole config, and the delegate gets its config but not the launcher's mark", () => {
    const r = flannel(conf());
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(JSON.parse(r.stdout).ips[0].address, "10.9.3.2/24");
    const delegated = JSON.parse(readFileSync(path.join(dir, "stdin"), "utf8"));
    assert.equal(delegated.type, "recorder");
    assert.equal(delegated.name, "launcher-test");
    const env = readFileSync(path.join(dir, "env"), "utf8");
    assert.match(env, /^CNI_COMMAND=ADD$/m);
    assert.doesNotMatch(env, /TSCNI_STDIN_MEMFD/);
  });

  test("a config larger than the launcher's read buffer arrives whole", () => {
    const padding = "x".repeat(300_000);
    const r = flannel(conf({ padding }));
    assert.equal(r.status, 0, r.stdout + r.stderr);
    // A config cut short would be a JSON error: the program parsed all of it.
    assert.equal(JSON.parse(r.stdout).cniVersion, "1.0.0");
  });

  test("an empty or broken config is the same CNI error as without the launcher", () => {
    for (const input of ["", "{"]) {
      const viaLauncher = flannel(input);
      const direct = spawnSync(path.join(OUR_BIN, "..", "tscni-js"), [], {
        input,
        encoding: "utf8",
        argv0: "flannel",
        env: {
          PATH: process.env["PATH"],
          CNI_COMMAND: "ADD",
          CNI_CONTAINERID: "x",
          CNI_NETNS: "/run/netns/x",
          CNI_IFNAME: "eth0",
          CNI_PATH: OUR_BIN,
        },
      });
      assert.equal(viaLauncher.status, 1);
      assert.equal(viaLauncher.stdout, direct.stdout, `stdin ${JSON.stringify(input)}`);
    }
  });

  test("a closed stdin or a directory as stdin is the Go plugin's I/O error (code 5)", () => {
    const goBridge = "/usr/lib/cni/bridge";
    const env = {
      PATH: process.env["PATH"],
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: "x",
      CNI_NETNS: "/run/netns/x",
      CNI_IFNAME: "eth0",
      CNI_PATH: OUR_BIN,
      TSCNI_RESIDENT_SOCKET: "",
    };
    const cases = [
      ["<&-", "bad file descriptor"],
      ["< /", "is a directory"],
    ] as const;
    for (const [redirect, reason] of cases) {
      const run = (plugin: string) => spawnSync("sh", ["-c", `exec "$0" ${redirect}`, plugin], { encoding: "utf8", env });
      const ours = run(path.join(OUR_BIN, "bridge"));
      assert.equal(ours.status, 1);
      assert.deepEqual(JSON.parse(ours.stdout), { code: 5, msg: `error reading from stdin: read /dev/stdin: ${reason}` });
      if (existsSync(goBridge)) assert.equal(ours.stdout, run(goBridge).stdout, redirect);
    }
  });

  test("a server that dies mid-call: CNI error 999 naming it, escaped as JSON; the caller's mark is not forwarded", async () => {
    // A stand-in server (trusted as the real one: it holds the socket's lock) that takes the call and goes away; its
    // socket path has characters JSON must escape.
    const socketPath = path.join(dir, 'a"<b>\\c.sock');
    const received = path.join(dir, "received-request");
    const server = await standInServer(
      socketPath,
      `(c) => {
      let request = Buffer.alloc(0);
      c.once("data", () => {
        c.write(Buffer.from([0x59, 0x30, 0x75, 0, 0]));
        c.on("data", (d) => {
          request = Buffer.concat([request, d]);
          if (request.subarray(-5).equals(Buffer.from([0x5a, 0, 0, 0, 0]))) { fs.writeFileSync(${JSON.stringify(received)}, request); c.destroy(); }
        });
      });
    }`,
    );
    try {
      const child = spawn(path.join(OUR_BIN, "bridge"), [], {
        env: {
          PATH: process.env["PATH"],
          CNI_COMMAND: "ADD",
          CNI_CONTAINERID: "x",
          CNI_NETNS: "/run/netns/x",
          CNI_IFNAME: "eth0",
          CNI_PATH: OUR_BIN,
          TSCNI_RESIDENT_SOCKET: socketPath,
          TSCNI_STDIN_MEMFD: "1",
        },
      });
      child.stdin.end("{}");
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
      assert.equal(status, 1);
      assert.deepEqual(JSON.parse(out), { code: 999, msg: `tscni resident server died during the call: ${socketPath}` });
      assert.match(out, /\\u003cb\\u003e/); // as Go's encoder writes < and >
      const request = readFileSync(received, "latin1");
      assert.match(request, /CNI_CONTAINERID=x/);
      assert.doesNotMatch(request, /TSCNI_STDIN_MEMFD/);
    } finally {
      server.stop();
    }
  });

  test("a call missing a required variable is refused without reading stdin, as Go's (a stdin that never ends)", async () => {
    const fifo = path.join(dir, "never-ends");
    spawnSync("mkfifo", [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY); // held open and never written: a read would wait forever
    try {
      const env = {
        PATH: process.env["PATH"],
        CNI_COMMAND: "ADD",
        CNI_NETNS: "/run/netns/x",
        CNI_IFNAME: "eth0",
        CNI_PATH: OUR_BIN,
        TSCNI_RESIDENT_SOCKET: "",
      };
      const r = spawnSync(path.join(OUR_BIN, "bridge"), [], { stdio: [reader, "pipe", "pipe"], env, encoding: "utf8", timeout: 10_000 });
      assert.equal(r.status, 1, `${r.error ?? ""}${r.stdout}${r.stderr}`);
      assert.deepEqual(JSON.parse(r.stdout), { code: 4, msg: "required env variables [CNI_CONTAINERID] missing" });
    } finally {
      closeSync(writer);
      closeSync(reader);
    }
  });
});

/**
 * The launcher as the program it starts sees it: a copy of dist/tscni beside a stand-in `tscni-js` (a shell script)
 * that records its environment, what its stdin is and what it holds.
 */
describe("launcher, seen from the program it starts", { skip }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-launcher-program-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(path.join(OUR_BIN, "..", "tscni"), path.join(dir, "tscni"));
  symlinkSync("tscni", path.join(dir, "bridge"));
  writeFileSync(
    path.join(dir, "tscni-js"),
    `#!/bin/sh\nenv > "${dir}/env"\nreadlink /proc/self/fd/0 > "${dir}/stdin-is"\ncat > "${dir}/stdin"\necho '{"cniVersion":"1.0.0"}'\n`,
  );
  chmodSync(path.join(dir, "tscni-js"), 0o755);
  const env = {
    PATH: process.env["PATH"],
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "x",
    CNI_NETNS: "/run/netns/x",
    CNI_IFNAME: "eth0",
    CNI_PATH: "/nowhere",
    TSCNI_RESIDENT_SOCKET: "",
  };
  const seen = () => ({
    mark: /^TSCNI_STDIN_MEMFD=.*$/m.exec(readFileSync(path.join(dir, "env"), "utf8"))?.[0],
    stdinIs: readFileSync(path.join(dir, "stdin-is"), "utf8").trim(),
    stdin: readFileSync(path.join(dir, "stdin"), "utf8"),
  });

  test("the config in an in-memory file, marked by the launcher whatever the caller set", () => {
    const config = '{"cniVersion":"1.0.0","name":"n","type":"bridge"}';
    const r = spawnSync(path.join(dir, "bridge"), [], { input: config, env: { ...env, TSCNI_STDIN_MEMFD: "caller's" }, encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const s = seen();
    assert.equal(s.mark, "TSCNI_STDIN_MEMFD=1");
    assert.match(s.stdinIs, /^\/memfd:tscni-config/);
    assert.equal(s.stdin, config);
  });

  test("without memfd_create (strace makes it fail) a pipe holds the whole config, and the caller's mark is dropped", (t) => {
    const reason = missing(spawnSync("strace", ["-V"]).status !== 0 ? "strace is not installed (it injects the failure)" : undefined);
    if (reason) {
      t.skip(reason);
      return;
    }
    const config = JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "bridge", padding: "x".repeat(300_000) });
    const r = spawnSync(
      "strace",
      ["-f", "-qq", "-o", "/dev/null", "-e", "trace=memfd_create", "-e", "inject=memfd_create:error=ENOSYS", path.join(dir, "bridge")],
      { input: config, env: { ...env, TSCNI_STDIN_MEMFD: "1" }, encoding: "utf8", maxBuffer: 1 << 20 },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const s = seen();
    assert.equal(s.mark, undefined);
    assert.match(s.stdinIs, /^pipe:/);
    assert.equal(s.stdin.length, config.length);
    assert.equal(s.stdin, config);
  });

  test("a non-blocking stdin is waited on until the config comes (Go's os.Stdin waits too)", async () => {
    const fifo = path.join(dir, "late");
    spawnSync("mkfifo", [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    const config = '{"cniVersion":"1.0.0","name":"late","type":"bridge"}';
    try {
      const child = spawn(path.join(dir, "bridge"), [], { stdio: [reader, "pipe", "pipe"], env });
      setTimeout(() => {
        writeSync(writer, config);
        closeSync(writer);
      }, 300);
      const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
      assert.equal(status, 0);
      assert.equal(seen().stdin, config);
    } finally {
      closeSync(reader);
    }
  });
});

describe("a plugin copied without its program", { skip }, () => {
  test("every command, VERSION included, fails with a CNI error naming the missing program and where it was looked for", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-launcher-alone-"));
    try {
      // What `cp /opt/cni/bin/bridge /host/opt/cni/bin/` copies: the launcher, under the plugin's name.
      copyFileSync(path.join(OUR_BIN, "bridge"), path.join(dir, "bridge"));
      chmodSync(path.join(dir, "bridge"), 0o755);
      const env = {
        PATH: process.env["PATH"],
        CNI_CONTAINERID: "x",
        CNI_NETNS: "/run/netns/x",
        CNI_IFNAME: "eth0",
        CNI_PATH: dir,
        TSCNI_RESIDENT_SOCKET: "",
      };
      for (const command of ["VERSION", "ADD", "DEL", "CHECK", "GC", "STATUS"]) {
        const r = spawnSync(path.join(dir, "bridge"), [], {
          input: '{"cniVersion":"1.0.0","name":"n","type":"bridge"}',
          encoding: "utf8",
          env: { ...env, CNI_COMMAND: command },
        });
        assert.equal(r.status, 1, command);
        const error = JSON.parse(r.stdout) as { code: number; msg: string };
        assert.equal(error.code, 999, command);
        assert.equal(
          error.msg,
          `tscni: this plugin is tscni's launcher, and the program it runs is missing: ${dir}/tscni-js (no such file or directory); ` +
            "copy the whole plugin directory (tscni, tscni-js and the links), or install with `cnitool install --bin-dir <dir>`",
          command,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
