import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { describeTraceContext, isValidTraceparent, withTraceContext } from "./trace-context.js";

const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("trace context", () => {
  test("a traceparent is valid as W3C Trace Context defines it", () => {
    assert.ok(isValidTraceparent(PARENT));
    assert.ok(isValidTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later"), "a later version may add fields");
    for (const bad of [
      "",
      "00",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace ID
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent ID
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", // short trace ID
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
      `${PARENT}-extra`, // version 00 has four fields
      "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ]) {
      assert.equal(isValidTraceparent(bad), false, bad);
    }
  });

  test("a call's context replaces the environment's three variables; the rest stays", () => {
    const env = { PATH: "/bin", TRACEPARENT: "00-11111111111111111111111111111111-2222222222222222-01", TRACESTATE: "old=1", BAGGAGE: "k=v" };
    assert.deepEqual(withTraceContext(env, { traceparent: PARENT, tracestate: "congo=t61rcWkgMzE" }), {
      PATH: "/bin",
      TRACEPARENT: PARENT,
      TRACESTATE: "congo=t61rcWkgMzE",
    });
    assert.deepEqual(withTraceContext(env, { traceparent: PARENT, baggage: "user=alice" }), {
      PATH: "/bin",
      TRACEPARENT: PARENT,
      BAGGAGE: "user=alice",
    });
  });

  test("without a context, or with an invalid traceparent, the environment is passed as it is", () => {
    const env = { TRACEPARENT: "not even close", TRACESTATE: "x" };
    assert.equal(withTraceContext(env, undefined), env);
    assert.equal(withTraceContext(env, { traceparent: "00-zz", tracestate: "y" }), env);
  });

  test("described for a log line: only the variables present, each value one quoted JSON string", () => {
    assert.equal(describeTraceContext({ PATH: "/bin" }), "");
    assert.equal(describeTraceContext({ BAGGAGE: "a=1", TRACEPARENT: PARENT }), `TRACEPARENT="${PARENT}" BAGGAGE="a=1"`);
    assert.equal(describeTraceContext({ TRACESTATE: 'x\n"y"' }), 'TRACESTATE="x\\n\\"y\\""');
  });
});
