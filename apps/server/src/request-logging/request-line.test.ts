import fc from 'fast-check';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type RequestLine, requestLineWriter } from './request-line.js';
import { scrubSecrets } from './secret-scrubber.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) };
  return { lines, stream };
}

describe('requestLineWriter', () => {
  it('writes the line in the logger format: level label, ISO time, message "request" and the fields', () => {
    const { lines, stream } = capture();
    requestLineWriter('info', stream)('info', {
      requestId: 'req_1',
      tenant: 'acme',
      operation: 'scoreSubject',
      method: 'POST',
      status: 200,
      durationMs: 1.5,
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        message: 'request',
        requestId: 'req_1',
        tenant: 'acme',
        operation: 'scoreSubject',
        method: 'POST',
        status: 200,
        durationMs: 1.5,
      }),
    ]);
  });

  it('masks a key or secret in the free-text fields, the request id a client may choose and the tenant', () => {
    const { lines, stream } = capture();
    requestLineWriter('info', stream)('error', {
      requestId: 'sk_0123456789abcdefghijklmnopqrstuvwxyzABCD',
      tenant: 'whsec_c2VjcmV0c2VjcmV0',
      method: 'GET',
      status: 500,
      durationMs: 2,
      aborted: true,
    });
    expect(lines[0]).toMatchObject({
      level: 'error',
      requestId: 'sk_[redacted]',
      tenant: 'whsec_[redacted]',
      aborted: true,
    });
    expect(JSON.stringify(lines)).not.toContain('0123456789');
  });

  it('drops lines below the configured level', () => {
    const { lines, stream } = capture();
    const write = requestLineWriter('error', stream);
    write('info', { requestId: 'r', method: 'GET', status: 200, durationMs: 1 });
    write('error', { requestId: 'r', method: 'GET', status: 503, durationMs: 1 });
    expect(lines.map((line) => line.status)).toEqual([503]);
  });

  describe('byte for byte what pino writes for the same line', () => {
    afterEach(() => vi.useRealTimers());

    it('for any fields, severity and time', () => {
      const lineArbitrary: fc.Arbitrary<RequestLine> = fc.record(
        {
          requestId: fc.string({ unit: 'binary' }),
          tenant: fc.string({ unit: 'binary' }),
          operation: fc.constantFrom('scoreSubject', 'getRun', 'weird "op"\n'),
          method: fc.constantFrom('GET', 'POST', 'HEAD'),
          status: fc.integer({ min: 100, max: 599 }),
          durationMs: fc.oneof(fc.double({ noNaN: false }), fc.integer()),
          aborted: fc.constant(true as const),
        },
        { requiredKeys: ['requestId', 'method', 'status', 'durationMs'] },
      );
      fc.assert(
        fc.property(
          lineArbitrary,
          fc.constantFrom('info' as const, 'error' as const),
          fc.integer({ min: 0, max: 4_102_444_800_000 }),
          (line, severity, time) => {
            vi.useFakeTimers({ now: time, toFake: ['Date'] });
            const ours: string[] = [];
            requestLineWriter('info', { write: (text: string) => ours.push(text) })(severity, line);
            const theirs: string[] = [];
            // The logger's pino configuration: the line must be byte for byte what pino would write.
            const log = pino(
              {
                level: 'info',
                messageKey: 'message',
                timestamp: pino.stdTimeFunctions.isoTime,
                formatters: { level: (label) => ({ level: label }) },
              },
              { write: (text: string) => theirs.push(text) },
            );
            const fields = {
              ...line,
              requestId: scrubSecrets(line.requestId),
              ...(line.tenant !== undefined && { tenant: scrubSecrets(line.tenant) }),
            };
            log[severity](fields, 'request');
            vi.useRealTimers();
            expect(ours).toEqual(theirs);
          },
        ),
        { numRuns: 300 },
      );
    });
  });
});
