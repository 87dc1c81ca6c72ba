/** Where the server reads the time: the system clock, or a fake one in tests (5 days in a millisecond). */
export interface Clock {
  now(): Date;
}

/** The system clock. */
export const systemClock: Clock = { now: () => new Date() };
