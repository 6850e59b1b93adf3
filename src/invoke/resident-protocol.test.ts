import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeRequest, encodeHello, encodeRequest, FixedBuffer, MAX_BUILD_ID, ProtocolError, parseHello } from "./resident-protocol.js";

const request = { program: "host-local", args: ["x"], env: { CNI_COMMAND: "ADD", EMPTY: "" }, stdin: Buffer.from("{}"), cwd: "/tmp" };

test("a request read back whole, however its bytes arrive, each chunk copied once into a buffer of the announced size", () => {
  const bytes = encodeRequest(request);
  const collected = new FixedBuffer(bytes.length);
  for (let i = 0; i < bytes.length; i += 7) {
    assert.equal(collected.complete, false);
    assert.ok(collected.add(bytes.subarray(i, i + 7)));
  }
  assert.ok(collected.complete);
  assert.deepEqual(decodeRequest(collected.bytes), request);
  assert.equal(new FixedBuffer(3).add(Buffer.alloc(4)), false, "a chunk past the announced size is refused");
});

test("a request cut short, running past its end, with bytes after its end or an unknown tag is a protocol error", () => {
  const bytes = encodeRequest(request);
  for (const bad of [
    bytes.subarray(0, bytes.length - 5),
    bytes.subarray(0, 9),
    Buffer.concat([bytes, Buffer.from([0])]),
    Buffer.from([0x51, 0, 0, 0, 0]),
  ]) {
    assert.throws(() => decodeRequest(bad), ProtocolError);
  }
  const lying = Buffer.from(bytes);
  lying.writeUInt32LE(0xffffffff, 1);
  assert.throws(() => decodeRequest(lying), /runs past the request's end/);
});

test("a hello is read as its bytes arrive: build ID and announced length; anything else is refused early", () => {
  const hello = encodeHello("abc123", 4242);
  for (let n = 0; n < hello.length; n++) assert.equal(parseHello(hello.subarray(0, n)), undefined, `${n} bytes: more needed`);
  assert.deepEqual(parseHello(hello), { buildId: "abc123", requestLength: 4242, size: hello.length });
  assert.throws(() => parseHello(Buffer.from("GET / HTTP/1.1")), /bad hello/);
  assert.throws(() => parseHello(Buffer.from("TSCNI\x01")), /bad hello/, "the previous protocol's hello");
  const long = encodeHello("x".repeat(MAX_BUILD_ID + 1), 1);
  assert.throws(() => parseHello(long), /too long/);
});
