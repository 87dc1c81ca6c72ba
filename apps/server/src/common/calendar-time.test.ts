import { expect, it } from 'vitest';
import { isCalendarDateTime } from './calendar-time.js';

it('accepts real instants and refuses days, hours and offsets that do not exist', () => {
  for (const text of [
    '2026-02-28T23:59:59Z',
    '2024-02-29T00:00:00Z',
    '2026-12-31T10:00:00.123+02:00',
    '2016-12-31T23:59:60Z',
    '2026-01-01 00:00:00-0530',
  ]) {
    expect({ text, ok: isCalendarDateTime(text) }).toEqual({ text, ok: true });
  }
  for (const text of [
    '2026-02-29T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-01-00T00:00:00Z',
    '2026-02-28T24:00:00Z',
    '2026-02-28T10:60:00Z',
    '2026-02-28T10:00:00+24:00',
    'yesterday',
  ]) {
    expect({ text, ok: isCalendarDateTime(text) }).toEqual({ text, ok: false });
  }
});
