import { describe, expect, it } from 'vitest';
import { explainEntries, explainMarker } from './explain-marker.js';

describe('explainMarker', () => {
  it.each([
    [-1000, '⇊'],
    [-75, '⇊'],
    [-74.99999999, '↓'],
    [-15.00000001, '↓'],
    [-15, '↓'],
    [-14.99999999, '≈'],
    [0, '≈'],
    [-0, '≈'],
    [14.99999999, '≈'],
    [15, '↑'],
    [15.00000001, '↑'],
    [74.99999999, '↑'],
    [75, '⇈'],
    [1000, '⇈'],
  ])('when the attribution is %d, then the marker is %s', (a, marker) => {
    expect(explainMarker(a)).toBe(marker);
  });

  it('when the attribution is just beside ±75 or ±15 by one ulp, then the threshold still decides', () => {
    const below = (x: number) => x - Math.abs(x) * Number.EPSILON;
    const above = (x: number) => x + Math.abs(x) * Number.EPSILON;
    expect([explainMarker(below(-75)), explainMarker(above(-75))]).toEqual(['⇊', '↓']);
    expect([explainMarker(below(-15)), explainMarker(above(-15))]).toEqual(['↓', '≈']);
    expect([explainMarker(below(15)), explainMarker(above(15))]).toEqual(['≈', '↑']);
    expect([explainMarker(below(75)), explainMarker(above(75))]).toEqual(['↑', '⇈']);
  });
});

describe('explainEntries', () => {
  it('when more than four factors contribute, then the four largest |a| are kept, largest first', () => {
    expect(
      explainEntries([
        { name: 'payment_history', value: 10 },
        { name: 'utilization', value: -80 },
        { name: 'history_length', value: 20 },
        { name: 'debt_to_income', value: -5 },
        { name: 'recent_inquiries', value: 90 },
      ]),
    ).toEqual([
      'factor:recent_inquiries⇈',
      'factor:utilization⇊',
      'factor:history_length↑',
      'factor:payment_history≈',
    ]);
  });

  it('when |a| ties across the cut-off, then the name decides, ascending, whatever the sign', () => {
    expect(
      explainEntries([
        { name: 'utilization', value: 30 },
        { name: 'recent_inquiries', value: -30 },
        { name: 'payment_history', value: 30 },
        { name: 'history_length', value: -30 },
        { name: 'debt_to_income', value: 30 },
      ]),
    ).toEqual([
      'factor:debt_to_income↑',
      'factor:history_length↓',
      'factor:payment_history↑',
      'factor:recent_inquiries↓',
    ]);
  });

  it('when fewer than four factors are active, then all of them are listed', () => {
    expect(explainEntries([{ name: 'utilization', value: 0 }])).toEqual(['factor:utilization≈']);
  });
});
