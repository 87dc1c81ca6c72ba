/**
 * A loop that runs beside the HTTP server (the delivery worker, the run worker). The runtime starts every
 * worker after the storage is open, reports them in `/readyz`, and stops them on shutdown before the
 * storage closes.
 */
export interface BackgroundWorker {
  /** A short name for logs and metrics, e.g. `webhook-delivery`. */
  readonly name: string;
  /** Starts claiming work. Called once. */
  start(): void;
  /**
   * Stops claiming new work, lets the work in flight finish (or releases its claims so another instance
   * takes it over), and resolves when nothing of this worker runs any more.
   */
  stop(): Promise<void>;
  /** True between start() and stop(), while the loop is healthy. */
  readonly running: boolean;
}
