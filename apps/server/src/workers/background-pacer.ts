/**
 * Background work (a run's batch commits, an NDJSON upload's reading and line writes) gives way to
 * requests a client is waiting on. While no such request was seen for `quietMs`, background steps run as
 * they come, at full speed. While there are, background steps of the whole instance run one at a time,
 * each followed by a pause that keeps background work to `share` of the time (a step that took 20 ms with
 * a share of 0.5 is followed by 20 ms in which no background step starts): a tenant's million-line run
 * cannot take the event loop or the database's writer from another tenant's scoring, and still progresses
 * at no less than `share` of its speed. Work done outside a step (an upload's reading: the thread pool's
 * inflating included) is charged after it (`charge`), and sits out its own pause and the others'.
 */
export class BackgroundPacer {
  readonly share: number;
  readonly #quietMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  #lastForeground = Number.NEGATIVE_INFINITY;
  /** The background step in progress (or its pause) while the foreground is busy: the next waits for it. */
  #turn: Promise<void> = Promise.resolve();

  /**
   * `share` in (0, 1]: 1 never paces. `quietMs`: how long after the last foreground request background
   * work runs at full speed again.
   */
  constructor(
    options: {
      share?: number;
      quietMs?: number;
      now?: () => number;
      sleep?: (ms: number) => Promise<void>;
    } = {},
  ) {
    this.share = options.share ?? 0.5;
    if (!(this.share > 0 && this.share <= 1))
      throw new RangeError(`share must be in (0, 1], not ${this.share}`);
    this.#quietMs = options.quietMs ?? 1000;
    this.#now = options.now ?? (() => performance.now());
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** A request a client waits on arrived (any authenticated request but an NDJSON upload's). */
  noteForeground(): void {
    this.#lastForeground = this.#now();
  }

  /** Whether a foreground request was seen within the last `quietMs`. */
  get foregroundBusy(): boolean {
    return this.share < 1 && this.#now() - this.#lastForeground < this.#quietMs;
  }

  /**
   * Runs the background step `step`: at once while the foreground is quiet; otherwise after the steps
   * (and pauses) before it, then pausing after it in proportion to its duration plus `spentMs`, the event
   * loop's time the caller spent preparing it (parsing an upload's lines). Its result or error is the
   * step's own.
   */
  async run<T>(step: () => Promise<T>, spentMs = 0): Promise<T> {
    if (!this.foregroundBusy) return step();
    const before = this.#turn;
    let done!: () => void;
    this.#turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    await before;
    const started = this.#now();
    try {
      return await step();
    } finally {
      const took = this.#now() - started + spentMs;
      const pause = this.foregroundBusy ? (took * (1 - this.share)) / this.share : 0;
      if (pause > 0) this.#sleep(Math.min(pause, 1000)).then(done, done);
      else done();
    }
  }

  /**
   * Background work already done outside a step, `spentMs` of it (an NDJSON upload's reading of its body:
   * inflating, hashing, finding its lines): at once while the foreground is quiet; otherwise it waits for
   * the steps (and pauses) before it, then pauses as a step of that length would, and resolves after its
   * pause, so that the caller does no more of that work until then. `charge(0)` waits only for the steps
   * and pauses before it: background work done outside steps does not go on during another's pause.
   */
  async charge(spentMs: number): Promise<void> {
    if (!this.foregroundBusy) return;
    const before = this.#turn;
    let done!: () => void;
    this.#turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await before;
      const pause = this.foregroundBusy ? (spentMs * (1 - this.share)) / this.share : 0;
      if (pause > 0) await this.#sleep(Math.min(pause, 1000));
    } finally {
      done();
    }
  }
}
