/**
 * The hand-rolled protobuf of the CRI messages node GC exchanges, against the bytes @grpc/proto-loader (protobufjs)
 * makes from the CRI proto the containerd test speaks: our requests encode to the same bytes, and we decode its
 * responses, including fields we skip (metadata, created_at as a large int64, labels), and the wire's edge cases.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as protoLoader from "@grpc/proto-loader";
import { CRI_PROTO } from "#testing/cri-client.js";
import { ProtobufError, ProtoWriter, readFields } from "./protobuf.js";
import { decodeListPodSandboxResponse, decodeVersionResponse, encodeListPodSandboxRequest, encodeVersionRequest } from "./runtime-service.js";

type Serialize = (value: object) => Buffer;
const definition = protoLoader.loadSync(CRI_PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
const method = (name: string) =>
  (
    definition["runtime.v1.RuntimeService"] as unknown as Record<
      string,
      {
        requestSerialize: Serialize;
        responseSerialize: Serialize;
      }
    >
  )[name]!;

describe("CRI messages against protobufjs", () => {
  test("VersionRequest", () => {
    assert.deepEqual(encodeVersionRequest("v1"), method("Version").requestSerialize({ version: "v1" }));
    assert.deepEqual(encodeVersionRequest(""), method("Version").requestSerialize({}));
  });

  test("ListPodSandboxRequest without a filter is the empty message", () => {
    assert.deepEqual(encodeListPodSandboxRequest(), method("ListPodSandbox").requestSerialize({}));
    assert.equal(encodeListPodSandboxRequest().length, 0);
  });

  test("VersionResponse", () => {
    const bytes = method("Version").responseSerialize({
      version: "0.1.0",
      runtimeName: "containerd",
      runtimeVersion: "v1.6.20",
      runtimeApiVersion: "v1",
    });
    assert.deepEqual(decodeVersionResponse(bytes), {
      version: "0.1.0",
      runtimeName: "containerd",
      runtimeVersion: "v1.6.20",
      runtimeApiVersion: "v1",
    });
    assert.deepEqual(decodeVersionResponse(Buffer.alloc(0)), { version: "", runtimeName: "", runtimeVersion: "", runtimeApiVersion: "" });
  });

  test("ListPodSandboxResponse: ids and states, every other field skipped", () => {
    const id = (n: number) => n.toString(16).padStart(64, "0");
    const bytes = method("ListPodSandbox").responseSerialize({
      items: [
        {
          id: id(1),
          metadata: { name: "web", uid: "u-1", namespace: "default", attempt: 3 },
          state: "SANDBOX_READY",
          createdAt: "1700000000123456789",
          labels: { app: "web", ünïcode: "✓" },
        },
        { id: id(2), metadata: { name: "db", uid: "u-2", namespace: "prod" }, state: "SANDBOX_NOTREADY", createdAt: "-1" },
        { id: id(3) },
      ],
    });
    assert.deepEqual(decodeListPodSandboxResponse(bytes), [
      { id: id(1), state: "SANDBOX_READY" },
      { id: id(2), state: "SANDBOX_NOTREADY" },
      { id: id(3), state: "SANDBOX_READY" },
    ]);
    assert.deepEqual(decodeListPodSandboxResponse(method("ListPodSandbox").responseSerialize({ items: [] })), []);
  });

  test("a state this client does not know is kept by number", () => {
    const sandbox = Buffer.concat([new ProtoWriter().string(1, "abc").finish(), Buffer.from([0x18, 0x07])]);
    const response = new ProtoWriter().bytes(1, sandbox).finish();
    assert.deepEqual(decodeListPodSandboxResponse(response), [{ id: "abc", state: "STATE_7" }]);
  });
});

describe("the wire format", () => {
  test("fields of every proto3 wire type are read, unknown ones skipped", () => {
    const bytes = Buffer.concat([
      Buffer.from([0x08, 0x96, 0x01]), // 1: varint 150
      Buffer.from([0x11, 1, 2, 3, 4, 5, 6, 7, 8]), // 2: fixed64
      Buffer.from([0x1d, 9, 9, 9, 9]), // 3: fixed32
      new ProtoWriter().string(4, "hé").finish(),
      Buffer.from([0xa0, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // 500: varint 2^64-1
    ]);
    const fields = [...readFields(bytes)].map((f) => [f.field, f.wireType, typeof f.value === "bigint" ? f.value : f.value.toString("hex")]);
    assert.deepEqual(fields, [
      [1, 0, 150n],
      [2, 1, "0102030405060708"],
      [3, 5, "09090909"],
      [4, 2, Buffer.from("hé").toString("hex")],
      [500, 0, 2n ** 64n - 1n],
    ]);
    // Fields a message does not know, of every wire type, around one it knows.
    const unknown = Buffer.from([0x28, 0x96, 0x01, 0x31, 1, 2, 3, 4, 5, 6, 7, 8, 0x3d, 9, 9, 9, 9, 0x42, 0x01, 0x61]);
    const version = Buffer.concat([unknown, new ProtoWriter().string(2, "containerd").finish(), unknown]);
    assert.deepEqual(decodeVersionResponse(version), { version: "", runtimeName: "containerd", runtimeVersion: "", runtimeApiVersion: "" });
  });

  test("a length-delimited field longer than 127 bytes (a two-byte length)", () => {
    const long = "x".repeat(300);
    const bytes = new ProtoWriter().string(1, long).finish();
    assert.deepEqual(bytes.subarray(0, 3), Buffer.from([0x0a, 0xac, 0x02]));
    assert.equal(decodeVersionResponse(bytes).version, long);
  });

  test("malformed messages are errors, never garbage", () => {
    const cases: Array<[string, Buffer, RegExp]> = [
      ["truncated varint", Buffer.from([0x08, 0x96]), /truncated varint/],
      ["length past the end", Buffer.from([0x0a, 0x05, 0x61]), /ends before/],
      ["truncated fixed64", Buffer.from([0x11, 1, 2]), /truncated fixed-size/],
      ["group", Buffer.from([0x0b]), /wire type 3/],
      ["field 0", Buffer.from([0x00, 0x00]), /field number 0/],
      ["overlong varint", Buffer.from([0x08, ...Array<number>(11).fill(0x80)]), /longer than 10 bytes/],
    ];
    for (const [name, bytes, message] of cases)
      assert.throws(
        () => [...readFields(bytes)],
        (e: Error) => e instanceof ProtobufError && message.test(e.message),
        name,
      );
  });

  test("a known field of the wrong wire type is refused", () => {
    assert.throws(() => decodeVersionResponse(Buffer.from([0x08, 0x01])), /version \(field 1\) is not length-delimited/);
    assert.throws(
      () => decodeListPodSandboxResponse(new ProtoWriter().bytes(1, Buffer.from([0x1a, 0x00])).finish()),
      /PodSandbox.state \(field 3\) is not a varint/,
    );
  });
});
