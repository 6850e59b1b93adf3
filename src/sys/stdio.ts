/**
 * The process's standard streams as plain file descriptors. A plugin call reads its stdin once and writes one
 * document; touching process.stdin or process.stdout would build the stream machinery at every call's start-up
 * (docs/startup.md), so plugins use these instead.
 * @module
 */
import { readSync, writeSync } from "node:fs";

/** Blocks the thread for `ms` (a descriptor that is non-blocking has nothing to read or no room yet). */
function nap(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

const retryable = (e: unknown): boolean => {
  const code = (e as NodeJS.ErrnoException).code;
  return code === "EAGAIN" || code === "EINTR";
};

/** Reads `fd` to its end (the runtime closes our stdin after the config). */
export function readFdToEnd(fd = 0): Buffer {
  const chunks: Buffer[] = [];
  let chunk = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (e) {
      if (retryable(e)) {
        nap(1);
        continue;
      }
      if ((e as NodeJS.ErrnoException).code === "EOF") break; // Windows-only spelling of end of file; harmless here
      throw e;
    }
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
    if (n === chunk.length) chunk = Buffer.allocUnsafe(chunk.length * 2);
    else chunk = chunk.subarray(n);
  }
  return Buffer.concat(chunks);
}

/**
 * Writes all of `data` to `fd`. A reader that went away (EPIPE) loses the output, as it would with a stream;
 * any other failure is thrown.
 */
export function writeFdFully(fd: number, data: string | Uint8Array): void {
  let bytes = typeof data === "string" ? Buffer.from(data) : data;
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(fd, bytes));
    } catch (e) {
      if (retryable(e)) {
        nap(1);
        continue;
      }
      if ((e as NodeJS.ErrnoException).code === "EPIPE") return;
      throw e;
    }
  }
}
