/**
 * Wakes whoever waits for a tenant's next signed checkpoint in this process: the sequencer notifies after
 * each batch it committed, and a scoring that asked for its inclusion proof waits for it instead of
 * polling the database. Instances on one PostgreSQL do not share it: a waiter there also polls (see
 * inclusion-wait.ts).
 */
export class CheckpointSignal {
  readonly #waiting = new Map<string, Set<() => void>>();

  /** A checkpoint of `tenantId`'s log committed: wakes every waiter of that tenant. */
  notify(tenantId: string): void {
    const waiters = this.#waiting.get(tenantId);
    if (waiters === undefined) return;
    this.#waiting.delete(tenantId);
    for (const wake of waiters) wake();
  }

  /**
   * A wait for the tenant's next notify: `done` resolves then, or after `timeoutMs`, or at `cancel()`,
   * whichever comes first (never rejects); cancel a wait no longer needed, so nothing stays registered.
   */
  next(tenantId: string, timeoutMs: number): { done: Promise<void>; cancel(): void } {
    let waiters = this.#waiting.get(tenantId);
    if (waiters === undefined) {
      waiters = new Set();
      this.#waiting.set(tenantId, waiters);
    }
    const set = waiters;
    let wake = () => {};
    const done = new Promise<void>((resolve) => {
      wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.#waiting.get(tenantId) === set) this.#waiting.delete(tenantId);
        resolve();
      };
    });
    const timer = setTimeout(wake, Math.max(0, timeoutMs));
    set.add(wake);
    return { done, cancel: wake };
  }

  /** Tenants with someone waiting (tests check nothing is left behind). */
  get waitingTenants(): number {
    return this.#waiting.size;
  }
}
