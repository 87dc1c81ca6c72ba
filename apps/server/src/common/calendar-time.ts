/**
 * True when an RFC 3339 date-time (already matched by the contract's `format: date-time`, which checks only
 * its shape) names a real instant: a day that exists in its month (leap years counted), hours 00–23,
 * minutes and seconds 00–59 (a leap second, :60, is taken as the next second), an offset within ±23:59.
 * `new Date` would roll `2026-02-30` over to 2 March instead of refusing it.
 */
export function isCalendarDateTime(text: string): boolean {
  const match =
    /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute, second, offsetHours = '0', offsetMinutes = '0'] = match
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part))) as number[];
  if (month === undefined || month < 1 || month > 12 || day === undefined || day < 1) return false;
  if (day > new Date(Date.UTC(year ?? 0, month, 0)).getUTCDate()) return false;
  if ((hour ?? 99) > 23 || (minute ?? 99) > 59 || (second ?? 99) > 60) return false;
  return Number(offsetHours) <= 23 && Number(offsetMinutes) <= 59;
}
