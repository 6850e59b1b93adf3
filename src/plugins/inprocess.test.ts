/**
 * In-process delegation behaves exactly like exec'ing the delegate: same result, same CNI error, same stderr;
 * and an executable that is not our binary is still exec'd.
 */

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { after, describe, test } from "node:test";
import { RawExec } from "#invoke/exec.js";
import { delegateAdd, delegateDel } from "#invoke/plugin.js";
import { CniError } from "#spec/errors.js";
import { marshalResult } from "#spec/result/index.js";
import { OUR_BIN } from "#testing/harness.js";
import { MulticallExec } from "./inprocess.js";

const BIN = OUR_BIN;
const self = realpathSync(path.join(BIN, "host-local"));
const scratch = mkdtempSync(path.join(os.tmpdir(), "tscni-inproc-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

class Capture extends Writable {
  text = "";
  override _write(chunk: Buffer, _enc: string, cb: () => void) {
    this.text += chunk.toString();
    cb();
  }
}

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env["PATH"],
  TSCNI_RESIDENT: "exec",
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "inproc1",
  CNI_NETNS: "/run/netns/none",
  CNI_IFNAME: "eth0",
  CNI_ARGS: "",
  CNI_PATH: BIN,
  ...extra,
});
const conf = (dataDir: string, extra: Record<string, unknown> = {}) =>
  Buffer.from(
    JSON.stringify({ cniVersion: "1.1.0", name: "inproc", type: "bridge", ipam: { type: "host-local", subnet: "10.77.0.0/24", dataDir, ...extra } }),
  );

describe("in-process delegation", { skip: existsSync(path.join(BIN, "host-local")) ? undefined : "dist/bin/host-local is not built" }, () => {
  test("runs our delegate in-process with the same result as an exec", async () => {
    const inproc = new MulticallExec(self);
    const a = await delegateAdd("host-local", conf(path.join(scratch, "a")), { exec: inproc, env: env() });
    const b = await delegateAdd("host-local", conf(path.join(scratch, "b")), { exec: new RawExec(), env: env() });
    assert.equal(marshalResult(a), marshalResult(b));
    assert.equal(inproc.inProcessRuns, 1, "ran in-process, not exec'd");
    assert.ok(existsSync(path.join(scratch, "a", "inproc", "10.77.0.2")), "the in-process delegate wrote the store");
    await delegateDel("host-local", conf(path.join(scratch, "a")), { exec: inproc, env: env({ CNI_COMMAND: "DEL" }) });
    assert.equal(existsSync(path.join(scratch, "a", "inproc", "10.77.0.2")), false);
  });

  test("reports a delegate's CNI error exactly as an exec does", async () => {
    const bad = conf(path.join(scratch, "c"), { subnet: "10.77.0.0/33" });
    const errors: CniError[] = [];
    for (const exec of [new MulticallExec(self), new RawExec()]) {
      await assert.rejects(delegateAdd("host-local", bad, { exec, env: env() }), (e: unknown) => {
        errors.push(e as CniError);
        return e instanceof CniError;
      });
    }
    assert.deepEqual(errors[0]!.toJSON(), errors[1]!.toJSON());
    assert.equal(errors[0]!.code, 7);
  });

  test("a delegate's stdout is captured, never written to this process's stdout, whatever fails", async () => {
    // CNI_NETNS naming the plugin's own namespace: skel refuses before the handler runs (code 8).
    const own = env({ CNI_NETNS: "/proc/self/ns/net" });
    const written: string[] = [];
    const realWrite = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => (written.push(String(chunk)), true)) as typeof process.stdout.write;
    const errors: CniError[] = [];
    try {
      for (const exec of [new MulticallExec(self), new RawExec()]) {
        await assert.rejects(delegateAdd("host-local", conf(path.join(scratch, "own")), { exec, env: own }), (e: unknown) => {
          errors.push(e as CniError);
          return e instanceof CniError;
        });
      }
    } finally {
      process.stdout.write = realWrite;
    }
    // (node:test's own reporting goes through process.stdout too; only CNI documents matter here.)
    assert.deepEqual(
      written.filter((w) => /"(msg|ips|cniVersion)"/.test(w)),
      [],
    );
    assert.deepEqual(errors[0]!.toJSON(), errors[1]!.toJSON());
    assert.deepEqual(errors[0]!.toJSON(), { code: 8, msg: "plugin's netns and netns from CNI_NETNS should not be the same" });
    assert.equal(existsSync(path.join(scratch, "own", "inproc")), false, "nothing allocated");
  });

  test("an executable that is not ours is exec'd, first in CNI_PATH order", async () => {
    const foreign = path.join(scratch, "foreign");
    rmSync(foreign, { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(foreign));
    writeFileSync(
      path.join(foreign, "host-local"),
      '#!/bin/sh\necho \'foreign ipam ran\' >&2\necho \'{"cniVersion":"1.1.0","ips":[{"address":"192.0.2.9/24"}]}\'\n',
    );
    chmodSync(path.join(foreign, "host-local"), 0o755);
    const stderr = new Capture();
    const exec = new MulticallExec(self);
    const r = await delegateAdd("host-local", conf(path.join(scratch, "d")), {
      exec,
      env: env({ CNI_PATH: `${foreign}:${BIN}` }),
      stderr,
    });
    assert.equal(exec.inProcessRuns, 0);
    assert.equal(marshalResult(r), '{"cniVersion":"1.1.0","ips":[{"address":"192.0.2.9/24"}]}');
    assert.equal(stderr.text, "foreign ipam ran\n");
  });

  test("TSCNI_NO_INPROCESS in the call's environment forces an exec", async () => {
    const exec = new MulticallExec(self);
    const r = await delegateAdd("host-local", conf(path.join(scratch, "e")), { exec, env: env({ TSCNI_NO_INPROCESS: "1" }) });
    assert.equal(marshalResult(r).includes("10.77.0.2/24"), true);
    assert.equal(exec.inProcessRuns, 0);
  });
});
