/** Where an instance is in its life: `/readyz` answers 503 unless it is `running`. */
export type InstancePhase = 'starting' | 'running' | 'draining';

/**
 * The instance's phase, moved forward by the runtime: `starting` until the workers run, `running`, then
 * `draining` from the first moment of a shutdown, so the load balancer stops sending requests before the
 * listener closes. It never goes back.
 */
export class InstanceLifecycle {
  #phase: InstancePhase;

  constructor(phase: InstancePhase = 'starting') {
    this.#phase = phase;
  }

  get phase(): InstancePhase {
    return this.#phase;
  }

  /** The instance serves: storage open, listening, workers started. */
  markRunning(): void {
    if (this.#phase === 'starting') this.#phase = 'running';
  }

  /** The instance is shutting down. */
  markDraining(): void {
    this.#phase = 'draining';
  }
}
