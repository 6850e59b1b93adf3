/**
 * A plugin process's stdin and its writes to fds 1 and 2. Under Bun through Bun's own file I/O, so a call that fails
 * on its config loads no node:fs (docs/startup.md); under Node (no Bun global) through sys/stdio.ts, loaded on first
 * use.
 * @module
 */

interface BunStdio {
  stdin: { bytes(): Promise<Uint8Array> };
  mmap(path: string, opts?: { shared?: boolean }): Uint8Array;
  stdout: unknown;
  stderr: unknown;
  write(destination: unknown, data: string | Uint8Array): Promise<number>;
}

const bun = (): BunStdio | undefined => (globalThis as { Bun?: BunStdio }).Bun;

/**
 * Reads stdin to its end (the runtime closes it after the config). `inMemoryFile`: the C launcher has put the
 * config in an in-memory file that is our stdin (launcher.c, config_to_stdin); it is then mapped, which under Bun
 * costs no thread pool (anything that cannot be mapped, such as an empty file, is read as usual). The bytes as
 * they came, not a Buffer: a config refused by skel makes no Buffer (docs/startup.md).
 */
export async function readStdin(inMemoryFile = false): Promise<Uint8Array> {
  const b = bun();
  if (b && inMemoryFile) {
    try {
      return b.mmap("/proc/self/fd/0", { shared: false });
    } catch {
      /* read below */
    }
  }
  if (b) return await b.stdin.bytes();
  const { readFdToEnd } = await import("./stdio.js");
  return readFdToEnd(0);
}

/**
 * Writes all of `data` to fd 1 or 2. A reader that went away (EPIPE) loses the output, as with a stream; other
 * failures reject.
 */
export async function writeStd(fd: 1 | 2, data: string | Uint8Array): Promise<void> {
  const b = bun();
  if (!b) {
    const { writeFdFully } = await import("./stdio.js");
    writeFdFully(fd, data);
    return;
  }
  try {
    await b.write(fd === 1 ? b.stdout : b.stderr, data);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPIPE") throw e;
  }
}

/**
 * Writes to fds 1 and 2 in the order they were asked for, each whole; `flush` resolves when all are done (the
 * first failure rejects it).
 */
export class OrderedWriter {
  private pending: Promise<void> = Promise.resolve();
  private failure: unknown;

  write(fd: 1 | 2, data: string | Uint8Array): void {
    this.pending = this.pending
      .then(() => writeStd(fd, data))
      .catch((e: unknown) => {
        this.failure ??= e;
      });
  }

  async flush(): Promise<void> {
    await this.pending;
    if (this.failure !== undefined) throw this.failure;
  }
}
