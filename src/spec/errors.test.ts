import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { CniError, ErrorCode, unwrapCniError, WrappedError } from "./errors.js";

describe("CniError (Go types.Error)", () => {
  test("well-known codes", () => {
    assert.deepEqual(ErrorCode, {
      Unknown: 0, IncompatibleCNIVersion: 1, UnsupportedField: 2, UnknownContainer: 3, InvalidEnvironmentVariables: 4,
      IOFailure: 5, DecodingFailure: 6, InvalidNetworkConfig: 7, InvalidNetNS: 8, TryAgainLater: 11,
      PluginNotAvailable: 50, LimitedConnectivity: 51, Internal: 999,
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
    assert.equal(new CniError(1, "incompatible CNI versions", 'config is "0.1.0", plugin supports ["1.2.3"]').print(),
      '{\n    "code": 1,\n    "msg": "incompatible CNI versions",\n    "details": "config is \\"0.1.0\\", plugin supports [\\"1.2.3\\"]"\n}');
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
});
