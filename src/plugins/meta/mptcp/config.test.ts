/** The mptcp config as the Go plugin of containernetworking/plugins#1239 reads it, and where ours refuses more. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ErrorCode } from "#spec/errors.js";
import { loadMptcpConf } from "./config.js";

const PREV = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/run/netns/x" }], ips: [{ address: "10.1.0.2/24", interface: 0 }] };
const load = (keys: Record<string, unknown>) =>
  loadMptcpConf(Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net1", type: "mptcp", ...keys })));

function invalid(keys: Record<string, unknown>, msg: RegExp): void {
  assert.throws(
    () => load(keys),
    (e: { code?: number; msg?: string }) => {
      assert.equal(e.code, ErrorCode.InvalidNetworkConfig, e.msg);
      assert.match(e.msg ?? "", msg);
      return true;
    },
  );
}

describe("mptcp config", () => {
  test("endpoint flags become MPTCP_PM_ADDR_FLAG_* bits; limits left unset stay unset", () => {
    const n = load({ endpoints: { subflow: true, backup: true }, prevResult: PREV });
    assert.equal(n.flags, 0x2 | 0x4);
    assert.equal(n.limits, undefined);
    assert.deepEqual(n.prevResult?.ips, [{ address: "10.1.0.2/24", interface: 0 }]);
    assert.equal(load({ endpoints: { signal: true } }).flags, 0x1);
    assert.equal(load({ endpoints: { fullmesh: true, subflow: true } }).flags, 0xa);
  });

  test("limits: each is a uint32 and may be left out", () => {
    assert.deepEqual(load({ limits: { subflows: 2, addAddrAccepted: 1 } }).limits, { subflows: 2, addAddrAccepted: 1 });
    assert.deepEqual(load({ limits: { subflows: 0 } }).limits, { subflows: 0 });
    assert.deepEqual(load({ limits: {} }).limits, {});
    invalid({ limits: { subflows: -1 } }, /"limits\.subflows": -1/);
    invalid({ limits: { addAddrAccepted: "2" } }, /"limits\.addAddrAccepted": "2"/);
  });

  test("keys in any letter case, as Go's decoder reads them", () => {
    assert.equal(load({ Endpoints: { SUBFLOW: true } }).flags, 0x2);
    assert.deepEqual(load({ LIMITS: { AddAddrAccepted: 3 } }).limits, { addAddrAccepted: 3 });
  });

  test("neither endpoints nor limits, or endpoints without a flag, are refused (as Go's parseConf)", () => {
    invalid({}, /at least one of "endpoints" or "limits"/);
    invalid({ endpoints: null }, /at least one of "endpoints" or "limits"/);
    invalid({ endpoints: {} }, /"endpoints": \{.*no flag is set/);
    invalid({ endpoints: { signal: false } }, /"endpoints".*no flag is set/);
  });

  test("signal with fullmesh is refused up front: the kernel refuses such an endpoint", () => {
    invalid({ endpoints: { signal: true, fullmesh: true } }, /"endpoints".*signal and fullmesh/);
  });

  test("a wrong type is code 7 naming the key", () => {
    invalid({ endpoints: { signal: "yes" } }, /"endpoints\.signal": "yes"/);
    invalid({ endpoints: [] }, /"endpoints"/);
  });
});
