/**
 * Undoing a half-done ADD: each step that changed something registers how to undo it, and when a later step
 * fails the undo steps run newest first (their own failures are ignored) before the error is passed on, so a
 * failed ADD leaves no address allocated and no link behind. Every interface-creating plugin uses it.
 * @module
 */
export class Rollback {
  private readonly steps: Array<() => Promise<unknown>> = [];

  /** Registers how to undo a step that has just succeeded. */
  add(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  /** Runs `work`; if it throws, undoes what was registered (newest first) and rethrows. */
  async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (e) {
      for (const step of this.steps.reverse()) await step().catch(() => undefined);
      throw e;
    }
  }
}
