/**
 * The abort signal of the plugin call the current code runs for, carried in its async context: the resident server
 * runs many calls in one process, answers a call with an error at its time limit while its work may still be
 * waiting, and aborts this signal then, so that a wait of that work (a lock, sys/flock.ts) ends and what it guards
 * never runs for a caller that already has its answer (an ADD run after its caller gave up would leak an address).
 * Outside the server (exec mode, cnitool, the pod manager) no call has a signal: callSignal() is undefined, and a
 * process that ends with its call needs none. node:async_hooks is loaded only when a signal is first set
 * (docs/startup.md).
 * @module
 */
import type { AsyncLocalStorage } from "node:async_hooks";

let storage: AsyncLocalStorage<AbortSignal> | undefined;

/** Why a call's work was stopped: its caller had been answered (the call passed its time limit). */
export class CallAbandonedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CallAbandonedError";
  }
}

/** Runs `work` as a call whose signal is `signal`: code it runs, awaits and starts sees it as callSignal(). */
export function withCallSignal<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  if (!storage) {
    const { AsyncLocalStorage: Storage } = process.getBuiltinModule("node:async_hooks");
    storage = new Storage<AbortSignal>();
  }
  return storage.run(signal, work);
}

/** The signal of the call the current code runs for, if it has one (withCallSignal). */
export const callSignal = (): AbortSignal | undefined => storage?.getStore();
