/**
 * The dhcp config as upstream reads it: the socket path, `provide` (fixed values and values from CNI_ARGS),
 * `request` (names, numbers, `skipDefault`), `priority`; the pod name as host name; tscni's `families` and
 * `duidType`; and errors that name the key and the value (code 7) or the CNI_ARGS entry (code 4).
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_SOCKET_PATH, parseDhcpBasics, parseDhcpConfig } from "./config.js";

const parse = (ipam: Record<string, unknown> | undefined, cniArgs = "") =>
  parseDhcpConfig(
    Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "macvlan", ...(ipam ? { ipam: { type: "dhcp", ...ipam } } : {}) })),
    cniArgs,
  );
const text = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString() : undefined);

describe("dhcp config", () => {
  test("defaults: the socket, upstream's request list plus DNS and routes, no options, no priority", () => {
    const c = parse({});
    assert.equal(c.socketPath, DEFAULT_SOCKET_PATH);
    assert.deepEqual(c.requestList, [1, 3, 6, 15, 119, 121]);
    assert.equal(c.sendOptions.size, 0);
    assert.equal(c.priority, 0);
    assert.equal(c.name, "net");
    assert.deepEqual(c.families, ["ipv4"], "DHCPv4 alone, as before DHCPv6 existed");
    assert.equal(c.duidKind, "ll");
  });

  test("families: IPv4, IPv6 or both (always IPv4 first); duidType: ll, llt or uuid", () => {
    assert.deepEqual(parse({ families: ["ipv6"] }).families, ["ipv6"]);
    assert.deepEqual(parse({ families: ["ipv6", "ipv4"] }).families, ["ipv4", "ipv6"]);
    assert.deepEqual(parse({ families: null }).families, ["ipv4"]);
    for (const kind of ["ll", "llt", "uuid"]) assert.equal(parse({ duidType: kind }).duidKind, kind);
    assert.throws(() => parse({ families: [] }), { code: 7, msg: 'invalid "ipam.families": [] (want "ipv4", "ipv6" or both)' });
    assert.throws(() => parse({ families: ["ipv4", "ip6"] }), { code: 7, msg: 'invalid "ipam.families[1]": "ip6" (want "ipv4" or "ipv6")' });
    assert.throws(() => parse({ families: ["ipv6", "ipv6"] }), { code: 7, msg: 'invalid "ipam.families[1]": "ipv6" (given twice)' });
    assert.throws(() => parse({ families: "ipv6" }), { code: 7, msg: /"ipam\.families"/ });
    assert.throws(() => parse({ duidType: "mac" }), { code: 7, msg: 'invalid "ipam.duidType": "mac" (want one of "ll", "llt", "uuid")' });
  });

  test("daemonSocketPath, priority", () => {
    const c = parse({ daemonSocketPath: "/run/other.sock", priority: 100 });
    assert.equal(c.socketPath, "/run/other.sock");
    assert.equal(c.priority, 100);
  });

  test("provide: a value, a value from CNI_ARGS (upstream's raw split), a later entry for a code wins", () => {
    const c = parse(
      {
        provide: [
          { option: "host-name", value: "fixed" },
          { option: "user-class", fromArg: "CLASS" },
          { option: "224", value: "first" },
          { option: "224", value: "second" },
          { option: "host-name", fromArg: "K8S_POD_NAME" },
          { option: "60", fromArg: "ABSENT" },
        ],
      },
      "IgnoreUnknown=1;K8S_POD_NAME=web-0;CLASS=a=b;junk",
    );
    assert.equal(text(c.sendOptions.get(12)), "web-0");
    assert.equal(text(c.sendOptions.get(77)), "a=b");
    assert.equal(text(c.sendOptions.get(224)), "second");
    assert.equal(c.sendOptions.has(60), false);
  });

  test("K8S_POD_NAME is sent as the host name unless the config provides one", () => {
    assert.equal(text(parse({}, "K8S_POD_NAME=api-1").sendOptions.get(12)), "api-1");
    assert.equal(text(parse({ provide: [{ option: "12", value: "mine" }] }, "K8S_POD_NAME=api-1").sendOptions.get(12)), "mine");
    assert.equal(parse({}, "K8S_POD_NAME=").sendOptions.has(12), false);
  });

  test("request: names and numbers first, then the defaults; skipDefault drops them", () => {
    assert.deepEqual(parse({ request: [{ option: "42" }, { option: "routers" }] }).requestList, [42, 3, 1, 6, 15, 119, 121]);
    assert.deepEqual(parse({ request: [{ option: "121" }, { skipDefault: true }] }).requestList, [121]);
    assert.deepEqual(parse({ request: [{ skipDefault: true }] }).requestList, []);
  });

  test("bad options are code 7 naming the key and the value", () => {
    assert.throws(() => parse({ request: [{ option: "routerz" }] }), {
      code: 7,
      msg: /^invalid "ipam\.request\[0\]\.option": "routerz" \(want an option name \(dhcp-client-identifier, .*\) or a number from 0 to 255\)$/,
    });
    assert.throws(() => parse({ provide: [{ option: "300", value: "x" }] }), { code: 7, msg: /"ipam\.provide\[0\]\.option": "300"/ });
    assert.throws(() => parse({ provide: [{ value: "x" }] }), { code: 7, msg: /"ipam\.provide\[0\]\.option": ""/ });
    assert.throws(() => parse({ provide: [{ option: "53", value: "x" }] }), {
      code: 7,
      msg: /"ipam\.provide\[0\]\.option": "53" \(want an option the client does not set itself/,
    });
    assert.throws(() => parse({ provide: [{ option: "12", value: "x".repeat(256) }] }), {
      code: 7,
      msg: /"ipam\.provide\[0\]\.value".*want at most 255 bytes/,
    });
    assert.throws(() => parse({ provide: [{ option: "12", fromArg: "LONG" }] }, `LONG=${"y".repeat(300)}`), {
      code: 4,
      msg: /CNI_ARGS LONG .* 300 bytes/,
    });
    assert.throws(() => parse({ request: "routers" }), { code: 7, msg: /"ipam\.request"/ });
    assert.throws(() => parse({ priority: "high" }), { code: 7, msg: /"ipam\.priority"/ });
  });

  test("DEL, STATUS and GC read only the network, the socket and the attachments", () => {
    const stdin = Buffer.from(
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "net",
        type: "macvlan",
        "cni.dev/valid-attachments": [{ containerID: "c", ifname: "eth0" }],
        ipam: { type: "dhcp", daemonSocketPath: "/run/d.sock", request: [{ option: "bogus" }], provide: 5 },
      }),
    );
    assert.deepEqual(parseDhcpBasics(stdin), {
      cniVersion: "1.1.0",
      name: "net",
      socketPath: "/run/d.sock",
      validAttachments: [{ containerID: "c", ifname: "eth0" }],
    });
    assert.throws(() => parseDhcpBasics(Buffer.from('{"cniVersion":"1.0.0","name":"n"}')), { code: 7 });
  });

  test("no ipam is code 7", () => {
    assert.throws(() => parse(undefined), { code: 7, msg: /missing 'ipam'/ });
  });
});
