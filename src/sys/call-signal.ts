/**
 * The abort signal of the plugin call the current code runs for, carried in its async context: the resident server
 * runs many calls in one process, answers a call with an error at its time limit while its work may still be
 * waiting, and aborts this signal then, so that a wait of that work (a lock, sys/flock.ts) ends and what it guards
 * never runs for a caller that already has its answer (an ADD run after its caller gave up would leak an address).
 * Outside the server (exec mode, cnitool, the pod manager) no call has a signal: callSignal() is undefined, and a
 * process that ends with its call needs none. node:async_hooks is loaded only when a signal is first set
 * (docs/startup.md).
 *
 * The same context carries how the call may step aside while it waits on the kernel's work for other calls too (a
 * batch of veth deletions, net/link/veth-batch.ts): the server lends the call's place (resident/places.ts) to a call
 * waiting for one, so that the waiting call joins the batch rather than the next. stepAside(wait) is `wait` itself
 * outside the server.
 * @module
 */
import type { AsyncLocalStorage } from "node:async_hooks";

/** What the current call's code sees of the call that runs it. */
interface CallContext {
  signal: AbortSignal;
  aside: (<T>(wait: Promise<T>) => Promise<T>) | undefined;
}

let storage: AsyncLocalStorage<CallContext> | undefined;

/** Why a call's work was stopped: its caller had been answered (the call passed its time limit). */
export class CallAbandonedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CallAbandonedError";
  }
}

/**
 * Runs `work` as a call whose signal is `signal`: code it runs, awaits and starts sees it as callSignal(), and
 * waits through `aside` when it calls stepAside (the call's place lent out meanwhile).
 */
export function withCallSignal<T>(signal: AbortSignal, work: () => Promise<T>, aside?: <W>(wait: Promise<W>) => Promise<W>): Promise<T> {
  if (!storage) {
    const { AsyncLocalStorage: Storage } = process.getBuiltinModule("node:async_hooks");
    storage = new Storage<CallContext>();
  }
  return storage.run({ signal, aside }, work);
}

/** The signal of the call the current code runs for, if it has one (withCallSignal). */
export const callSignal = (): AbortSignal | undefined => storage?.getStore()?.signal;

/** Waits for `wait`, the call's place lent out meanwhile when it has one (see the module comment). */
export function stepAside<T>(wait: Promise<T>): Promise<T> {
  const aside = storage?.getStore()?.aside;
  return aside ? aside(wait) : wait;
}
