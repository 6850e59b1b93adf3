/**
 * `dhcp daemon`'s command line as Go's flag package reads upstream's: defaults, both dash styles, `=`
 * values, booleans, Go durations, the errors and help.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FlagError, HelpRequested, parseDaemonFlags, parseGoDuration, usage } from "./flags.js";

describe("daemon flags", () => {
  test("upstream's defaults, plus the lease directory", () => {
    assert.deepEqual(parseDaemonFlags([]), {
      broadcast: false,
      hostprefix: "",
      leasedir: "/var/lib/cni/dhcp",
      pidfile: "",
      resendmax: 62_000,
      resendtimeout: 208_000,
      socketpath: "/run/cni/dhcp.sock",
      timeout: 10_000,
    });
  });

  test("-name value, --name=value, booleans with and without a value", () => {
    const f = parseDaemonFlags([
      "-socketpath",
      "/tmp/d.sock",
      "--pidfile=/run/d.pid",
      "-broadcast",
      "-timeout=2s",
      "--resendmax",
      "5s",
      "-leasedir",
      "/var/d",
    ]);
    assert.equal(f.socketpath, "/tmp/d.sock");
    assert.equal(f.pidfile, "/run/d.pid");
    assert.equal(f.broadcast, true);
    assert.equal(f.timeout, 2000);
    assert.equal(f.resendmax, 5000);
    assert.equal(f.leasedir, "/var/d");
    assert.equal(parseDaemonFlags(["-broadcast=false"]).broadcast, false);
  });

  test("parsing stops at the first non-flag and at --", () => {
    assert.equal(parseDaemonFlags(["-timeout", "3s", "extra", "-broadcast"]).broadcast, false);
    assert.equal(parseDaemonFlags(["--", "-broadcast"]).broadcast, false);
  });

  test("mistakes are FlagErrors worded as Go's; -h and -help ask for the usage", () => {
    assert.throws(
      () => parseDaemonFlags(["-nope"]),
      (e: Error) => e instanceof FlagError && e.message === "flag provided but not defined: -nope",
    );
    assert.throws(
      () => parseDaemonFlags(["-timeout", "ten"]),
      (e: Error) => e instanceof FlagError && /invalid value "ten" for flag -timeout/.test(e.message),
    );
    assert.throws(() => parseDaemonFlags(["-timeout"]), /flag needs an argument: -timeout/);
    assert.throws(() => parseDaemonFlags(["-broadcast=maybe"]), /invalid boolean value "maybe"/);
    assert.throws(() => parseDaemonFlags(["---x"]), /bad flag syntax/);
    assert.throws(() => parseDaemonFlags(["-h"]), HelpRequested);
    assert.throws(() => parseDaemonFlags(["--help"]), HelpRequested);
    assert.match(usage(), /^Usage of daemon:\n {2}-broadcast\n/);
    assert.match(usage(), / {2}-timeout duration\n {4}\toptional dhcp client timeout duration for each request \(default 10s\)/);
  });

  test("Go durations", () => {
    const cases: Array<[string, number | undefined]> = [
      ["10s", 10_000],
      ["1m2s", 62_000],
      ["3m28s", 208_000],
      ["1.5h", 5_400_000],
      ["300ms", 300],
      ["0", 0],
      ["2h45m", 9_900_000],
      [".5s", 500],
      ["1500us", 1.5],
      ["-1s", -1000],
      ["10", undefined],
      ["s", undefined],
      ["", undefined],
      ["1x", undefined],
    ];
    for (const [text, ms] of cases) assert.equal(parseGoDuration(text), ms, text);
  });
});
