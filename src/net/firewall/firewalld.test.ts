import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { kindOfText, NetOpError } from "../errors.js";
import { type BusctlRunner, Firewalld } from "./firewalld.js";

/** A fake busctl: records calls, answers from `reply` (an Error: a failure of the kind busctl's words say, as runTool makes it). */
function fakeBusctl(reply: (args: string[]) => string | Error): { run: BusctlRunner; calls: string[][] } {
  const calls: string[][] = [];
  const run: BusctlRunner = async (args, operation) => {
    calls.push(args);
    const r = reply(args);
    if (r instanceof Error) throw new NetOpError(operation, r.message, 1, undefined, kindOfText(r.message, "busctl"));
    return { stdout: r, stderr: "" };
  };
  return { run, calls };
}

describe("firewalld through busctl", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-fwd-"));
  const socket = path.join(dir, "bus");
  writeFileSync(socket, "");
  const env = { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${socket}` };
  test.after(() => rmSync(dir, { recursive: true, force: true }));

  test("no bus socket: not running, and no process started", async () => {
    const bus = fakeBusctl(() => '{"type":"b","data":[true]}');
    assert.equal(await new Firewalld(bus.run, { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${dir}/missing` }).running(), false);
    assert.equal(bus.calls.length, 0);
  });

  test("running asks NameHasOwner for org.fedoraproject.FirewallD1", async () => {
    const bus = fakeBusctl((a) => (a[4] === "NameHasOwner" ? '{"type":"b","data":[true]}' : new Error("unexpected")));
    assert.equal(await new Firewalld(bus.run, env).running(), true);
    assert.deepEqual(bus.calls[0], [
      "call",
      "org.freedesktop.DBus",
      "/org/freedesktop/DBus",
      "org.freedesktop.DBus",
      "NameHasOwner",
      "s",
      "org.fedoraproject.FirewallD1",
    ]);
    const down = fakeBusctl(() => '{"type":"b","data":[false]}');
    assert.equal(await new Firewalld(down.run, env).running(), false);
    const broken = fakeBusctl(() => new Error("Failed to connect to bus"));
    assert.equal(await new Firewalld(broken.run, env).running(), false);
  });

  test("zone sources: addSource (ZONE_ALREADY_SET is fine), removeSource, querySource", async () => {
    const bus = fakeBusctl((a) => {
      if (a[4] === "addSource" && a[7] === "10.0.0.9/32") return new Error("Call failed: ZONE_ALREADY_SET: 10.0.0.9/32");
      if (a[4] === "addSource" && a[7] === "10.0.0.8/32") return new Error("Call failed: INVALID_ZONE: nozone");
      if (a[4] === "querySource") return '{"type":"b","data":[true]}';
      return '{"type":"s","data":["trusted"]}';
    });
    const fw = new Firewalld(bus.run, env);
    await fw.addSource("trusted", "10.0.0.5/32");
    assert.deepEqual(bus.calls[0], [
      "call",
      "org.fedoraproject.FirewallD1",
      "/org/fedoraproject/FirewallD1",
      "org.fedoraproject.FirewallD1.zone",
      "addSource",
      "ss",
      "trusted",
      "10.0.0.5/32",
    ]);
    await fw.addSource("trusted", "10.0.0.9/32");
    await assert.rejects(fw.addSource("trusted", "10.0.0.8/32"), /INVALID_ZONE/);
    await fw.removeSource("trusted", "10.0.0.5/32");
    assert.equal(bus.calls.at(-1)![4], "removeSource");
    assert.equal(await fw.querySource("trusted", "fd00::5/128"), true);
  });
});
