import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  CniError,
  cniError,
  decodingFailure,
  ErrorCode,
  failure,
  incompatibleVersion,
  invalidCniArgs,
  invalidConfig,
  invalidEnv,
  invalidKey,
  invalidNetNS,
  ioFailure,
  messageOf,
  pluginNotAvailable,
  tryAgainLater,
  unknownContainer,
  unwrapCniError,
  WrappedError,
  wrap,
} from "./errors.js";

describe("CniError (Go types.Error)", () => {
  test("well-known codes", () => {
    assert.deepEqual(ErrorCode, {
      Unknown: 0,
      IncompatibleCNIVersion: 1,
      UnsupportedField: 2,
      UnknownContainer: 3,
      InvalidEnvironmentVariables: 4,
      IOFailure: 5,
      DecodingFailure: 6,
      InvalidNetworkConfig: 7,
      InvalidNetNS: 8,
      TryAgainLater: 11,
      PluginNotAvailable: 50,
      LimitedConnectivity: 51,
      Internal: 999,
    });
  });

  test("message is `msg; details`, or msg alone without details", () => {
    const e = new CniError(1234, "some message", "some details");
    assert.equal(e.message, "some message; some details");
    assert.deepEqual([e.code, e.msg, e.details], [1234, "some message", "some details"]);
    assert.equal(new CniError(1234, "some message").message, "some message");
    assert.equal(new CniError(1234, "some message", "").message, "some message");
    assert.ok(e instanceof Error);
  });

  test("JSON: code, msg, details (omitted when empty), no cniVersion", () => {
    assert.equal(JSON.stringify(new CniError(7, "bad", "why")), '{"code":7,"msg":"bad","details":"why"}');
    assert.equal(JSON.stringify(new CniError(7, "bad")), '{"code":7,"msg":"bad"}');
  });

  test("print() is MarshalIndent with 4 spaces and no trailing newline", () => {
    assert.equal(new CniError(4, "interface name is empty").print(), '{\n    "code": 4,\n    "msg": "interface name is empty"\n}');
    assert.equal(
      new CniError(1, "incompatible CNI versions", 'config is "0.1.0", plugin supports ["1.2.3"]').print(),
      '{\n    "code": 1,\n    "msg": "incompatible CNI versions",\n    "details": "config is \\"0.1.0\\", plugin supports [\\"1.2.3\\"]"\n}',
    );
    assert.equal(new CniError(999, "a<b>&c").print(), '{\n    "code": 999,\n    "msg": "a\\u003cb\\u003e\\u0026c"\n}');
  });

  test("CniError.from", () => {
    const c = new CniError(3, "x");
    assert.equal(CniError.from(c), c);
    const fromErr = CniError.from(new Error("boom"));
    assert.deepEqual([fromErr.code, fromErr.msg, fromErr.details], [999, "boom", ""]);
    assert.equal(CniError.from("text", 5).code, 5);
    assert.equal(CniError.from("text", 5).msg, "text");
  });

  test("WrappedError: `prefix: cause` and unwrapping finds the CniError", () => {
    const inner = new CniError(7, "invalid characters found in network name", "invalid-%%-name");
    const outer = new WrappedError('plugin type="noop" failed (add)', inner);
    assert.equal(outer.message, 'plugin type="noop" failed (add): invalid characters found in network name; invalid-%%-name');
    assert.equal(unwrapCniError(outer), inner);
    assert.equal(unwrapCniError(new WrappedError("a", new WrappedError("b", inner))), inner);
    assert.equal(unwrapCniError(new Error("plain")), undefined);
    assert.equal(unwrapCniError(undefined), undefined);
    assert.equal(new WrappedError("p", "str").message, "p: str");
  });

  test("CniError.from keeps the error it converts as its cause", () => {
    const boom = new Error("boom");
    assert.equal(CniError.from(boom).cause, boom);
  });
});

describe("the constructors", () => {
  test("each gives its code, the message and the details", () => {
    const made: Array<[CniError, number]> = [
      [failure("m", "d"), 999],
      [incompatibleVersion("m", "d"), 1],
      [unknownContainer("m", "d"), 3],
      [invalidEnv("m", "d"), 4],
      [ioFailure("m", "d"), 5],
      [decodingFailure("m", "d"), 6],
      [invalidConfig("m", "d"), 7],
      [invalidNetNS("m", "d"), 8],
      [tryAgainLater("m", "d"), 11],
      [pluginNotAvailable("m", "d"), 50],
      [cniError(42, "m", "d"), 42],
    ];
    for (const [e, code] of made) assert.deepEqual([e.code, e.msg, e.details, e.message], [code, "m", "d", "m; d"]);
    assert.deepEqual([failure("m").details, failure("m").message], ["", "m"]);
  });

  test("details given as an error: its message, and the error kept as the cause", () => {
    const e = new Error("EACCES: permission denied");
    const made = ioFailure("cannot read the record", e);
    assert.deepEqual([made.code, made.msg, made.details], [5, "cannot read the record", "EACCES: permission denied"]);
    assert.equal(made.cause, e);
    assert.equal(failure("m", 12).details, "12");
  });

  test("invalidKey names the key and the value; invalidCniArgs says why", () => {
    const e = invalidKey("mtu", 10, "want 0 for the default, or 68 to 65535");
    assert.deepEqual([e.code, e.msg], [7, 'invalid "mtu": 10 (want 0 for the default, or 68 to 65535)']);
    const cause = new Error('ARGS: unknown args ["X"]');
    const args = invalidCniArgs(cause);
    assert.deepEqual([args.code, args.msg, args.cause], [4, 'invalid CNI_ARGS: ARGS: unknown args ["X"]', cause]);
  });

  test("wrap keeps a CniError's code and details, else takes the code given (999 by default)", () => {
    const inner = new CniError(11, "busy", "the lock is held");
    const outer = wrap("failed to allocate for range 0", inner);
    assert.deepEqual([outer.code, outer.msg, outer.details, outer.cause], [11, "failed to allocate for range 0: busy", "the lock is held", inner]);
    assert.deepEqual([wrap("p", new Error("x")).code, wrap("p", new Error("x")).msg], [999, "p: x"]);
    assert.equal(wrap("p", new Error("x"), ErrorCode.IOFailure).code, 5);
    assert.equal(unwrapCniError(outer), outer);
  });

  test("messageOf: an error's message, or the text of anything else", () => {
    assert.equal(messageOf(new Error("boom")), "boom");
    assert.equal(messageOf({ message: "like an error" }), "like an error");
    assert.equal(messageOf("text"), "text");
    assert.equal(messageOf(undefined), "undefined");
  });
});
