import { describe, expect, it } from 'vitest';
import { pairedRatios, type Round, roundOrder } from './load-report.ts';

const round = (target: string, rps: number): Round => ({ target, rps, p50: 1, p99: 2, errors: 0, non2xx: 0 });

describe('roundOrder', () => {
  it('gives the targets as they are in odd rounds and reversed in even ones, without changing the list', () => {
    const targets = ['a', 'b', 'c'];
    expect(roundOrder(targets, 1)).toEqual(['a', 'b', 'c']);
    expect(roundOrder(targets, 2)).toEqual(['c', 'b', 'a']);
    expect(roundOrder(targets, 3)).toEqual(['a', 'b', 'c']);
    expect(targets).toEqual(['a', 'b', 'c']);
  });
});

describe('pairedRatios', () => {
  it("divides each round's rate by the same round's rate of the base, and gives their median and quartiles", () => {
    // The machine halves its speed in the last two rounds: both move, the paired ratios do not.
    const rounds = [
      round('new', 110),
      round('old', 100),
      round('old', 100),
      round('new', 120),
      round('new', 50),
      round('old', 50),
      round('old', 40),
      round('new', 48),
    ];
    const paired = pairedRatios(rounds, 'new', 'old');
    expect(paired?.ratios.map((r) => Number(r.toFixed(2)))).toEqual([1.1, 1.2, 1, 1.2]);
    expect(paired?.median).toBeCloseTo(1.15);
    expect(paired?.q1).toBeCloseTo(1.1);
    expect(paired?.q3).toBeCloseTo(1.2);
  });

  it('is undefined when the two targets were not measured in the same rounds', () => {
    expect(pairedRatios([round('new', 1), round('new', 2), round('old', 1)], 'new', 'old')).toBeUndefined();
    expect(pairedRatios([], 'new', 'old')).toBeUndefined();
  });
});
