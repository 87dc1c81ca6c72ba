/** What the suite runs against: the Prism mock of the contract, or the real server. */
export type TargetKind = 'mock' | 'server';

/** A running target and the keys to call it with. */
export interface Target {
  kind: TargetKind;
  baseUrl: string;
  /** A key of the `default` tenant. */
  apiKey: string;
  /** A key of another tenant, which must not see the first tenant's logs. */
  otherTenantKey: string;
  /** Stops the target; for the server, throws unless it exited 0 on SIGTERM. */
  stop(): Promise<void>;
}

/** Settings the server target honours; the mock has no such limits. */
export interface TargetOptions {
  /** `RATE_LIMIT_PER_SECOND` of the server. */
  rateLimitPerSecond?: number;
}
