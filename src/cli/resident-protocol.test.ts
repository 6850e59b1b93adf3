import { test } from "node:test";
import assert from "node:assert/strict";
import { ByteReader, CallerLeftError, encodeRequest, ProtocolError, readRequest } from "./resident-protocol.js";

const request = { program: "host-local", args: ["x"], env: { CNI_COMMAND: "ADD" }, stdin: Buffer.from("{}"), cwd: "/tmp" };

test("a request read back field by field, however the bytes arrive", async () => {
  const reader = new ByteReader();
  const bytes = encodeRequest(request);
  const read = readRequest(reader);
  for (let i = 0; i < bytes.length; i += 7) reader.push(bytes.subarray(i, i + 7));
  assert.deepEqual(await read, request);
});

test("a connection that ends before any of the request is a caller that left; one cut short is a protocol error", async () => {
  const gone = new ByteReader();
  gone.end();
  await assert.rejects(readRequest(gone), CallerLeftError);

  const cut = new ByteReader();
  cut.push(encodeRequest(request).subarray(0, 9));
  cut.end();
  await assert.rejects(readRequest(cut), (e: unknown) => e instanceof ProtocolError && !(e instanceof CallerLeftError));
});
