/**
 * A client of the resident server in JavaScript (the launcher is the C one): for `cnitool daemon status` and
 * for tests. Same protocol (resident-protocol.ts), same outcomes: refused (run it yourself), or the call's stdout,
 * stderr and exit status, or a server that died during the call.
 * @module
 */
import net from "node:net";
import {
  ACCEPT, ByteReader, encodeHello, encodeRequest, REFUSE, TAG_EXIT, TAG_STDERR, TAG_STDOUT, type ResidentRequest,
} from "./resident-protocol.js";

/** What a call through the server gave. */
export type ResidentOutcome =
  | { kind: "refused"; reason: string }
  | { kind: "served"; stdout: string; stderr: string; status: number }
  | { kind: "died"; stdout: string; stderr: string };

/** Sends one call to the server at `socketPath` as build `buildId`. Rejects when no server answers. */
export async function callResident(socketPath: string, buildId: string, req: ResidentRequest): Promise<ResidentOutcome> {
  const socket = net.connect(socketPath);
  const reader = new ByteReader();
  socket.on("data", (b: Buffer) => reader.push(b));
  socket.on("end", () => reader.end());
  socket.on("close", () => reader.end());
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => reader.end());
  try {
    socket.write(encodeHello(buildId));
    const answer = (await reader.read(1))[0];
    if (answer === REFUSE) {
      const len = (await reader.read(2)).readUInt16LE(0);
      return { kind: "refused", reason: (await reader.read(len)).toString("utf8") };
    }
    if (answer !== ACCEPT) throw new Error(`unexpected answer 0x${answer?.toString(16)}`);
    socket.write(encodeRequest(req));
    let stdout = "";
    let stderr = "";
    for (;;) {
      let head: Buffer;
      try {
        head = await reader.read(5);
      } catch {
        return { kind: "died", stdout, stderr };
      }
      const data = await reader.read(head.readUInt32LE(1)).catch(() => undefined);
      if (!data) return { kind: "died", stdout, stderr };
      const tag = head.readUInt8(0);
      if (tag === TAG_STDOUT) stdout += data.toString();
      else if (tag === TAG_STDERR) stderr += data.toString();
      else if (tag === TAG_EXIT) return { kind: "served", stdout, stderr, status: data.readUInt32LE(0) };
    }
  } finally {
    socket.destroy();
  }
}
