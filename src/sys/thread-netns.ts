/**
 * Running a few synchronous steps with the calling thread in another network namespace: a socket belongs to the
 * namespace of the thread that created it, so netlink and DHCP sockets for a container are made there. The thread
 * enters with setns(2), runs the steps and comes straight back; no other code runs in between (it is synchronous),
 * which is what lets one process (a resident server, the dhcp daemon) do this for many calls.
 * @module
 */
import { closeSync, openSync } from "node:fs";

const CLONE_NEWNET = 0x40000000;

/** setns(2) as bound through FFI (sys/libc.ts). */
export type SetnsFn = (fd: number, nstype: number) => number;

/** The thread could not enter the namespace; `errno` when the system call said why. */
export class NetnsEnterError extends Error {
  constructor(
    readonly netnsPath: string,
    readonly errno: number | undefined,
  ) {
    super(`cannot enter network namespace ${netnsPath}${errno !== undefined ? ` (errno ${errno})` : ""}`);
    this.name = "NetnsEnterError";
  }
}

/**
 * Runs `make` with the calling thread in the network namespace at `netnsPath` and returns what it gives. Opening
 * the namespace throws node:fs's error (ENOENT: it is gone); a failed setns throws NetnsEnterError. Not coming
 * back would leave every later step of this process (tools it starts included) in the container's namespace, so
 * that ends the process (exit 70) after `who` says so on stderr.
 */
export function inThreadNetns<T>(setns: SetnsFn, errno: () => number | undefined, netnsPath: string, make: () => T, who: string): T {
  const target = openSync(netnsPath, "r");
  try {
    const home = openSync("/proc/thread-self/ns/net", "r");
    try {
      if (setns(target, CLONE_NEWNET) !== 0) throw new NetnsEnterError(netnsPath, errno());
      try {
        return make();
      } finally {
        if (setns(home, CLONE_NEWNET) !== 0) {
          process.stderr.write(`${who}: could not return to this process's network namespace after working in ${netnsPath}; stopping\n`);
          process.exit(70);
        }
      }
    } finally {
      closeSync(home);
    }
  } finally {
    closeSync(target);
  }
}
