// Time as a seam: services read the clock from their dependencies, so tests can set it.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
