import { describe, expect, it } from 'vitest';
import { requestLineWriter } from './request-line.js';

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
});
