import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryText } from './explain-marker.js';
import { FACTORS } from './factor-table.js';
import {
  buildLogRecord,
  buildLogRecordV2,
  canonicalBytes,
  type LogRecord,
  type LogRecordStamp,
  type LogRecordV2,
  logRecordBytes,
  scoringRecordBytes,
} from './log-record.js';
import {
  answerResultUtf8,
  logRecordJson,
  oneDecimal,
  scoringRecordV2Utf8,
  utf8AsLatin1,
} from './log-record-json.js';
import { scoreAndLog } from './logged-scoring.js';
import { effectivePolicy } from './policy-loader.js';
import { restateReasons } from './reason-finder.js';
import type { ScoreContext } from './score-types.js';
import { scoreContext, scoreScorecard2 } from './scorecard-model.js';

/** More runs with FUZZ_RUNS (e.g. 100000), fewer by default so CI stays quick. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
/** Property runs are CPU-bound; on a shared, loaded machine they can take longer than vitest's 5 s. */
const PROPERTY_TIMEOUT_MS = 120_000;
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Any string: ASCII, full Unicode with astral characters, and JSON's escapes (controls, quotes, backslashes). */
const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', 'é', '⇈', '😀') }),
);
/** Any finite double, -0 and the extremes included, and small decimals like real inputs. */
const anyNumber = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: 0, max: 1200 }),
  fc.integer({ min: 0, max: 10_000 }).map((n) => n / 1000),
);
const context = fc.record(
  {
    jurisdiction: anyString,
    on_time_ratio: anyNumber,
    utilization: anyNumber,
    history_months: anyNumber,
    debt_to_income: anyNumber,
    inquiries_12m: anyNumber,
  },
  { requiredKeys: ['jurisdiction'] },
);
const scenario = fc.record({
  name: anyString,
  score: anyNumber,
  explain: fc.array(anyString, { maxLength: 5 }),
});
const lever = fc.record({ name: anyString, direction: anyString, delta: anyNumber, step: anyNumber });
const record = fc.record({
  schema: anyString,
  model_version: anyString,
  policy_version: anyString,
  subject: anyString,
  context,
  result: fc.record({
    scenarios: fc.array(scenario, { maxLength: 4 }),
    levers: fc.array(lever, { maxLength: 4 }),
  }),
}) as fc.Arbitrary<LogRecord>;

/** A reason of any strings and numbers, with or without its lever. */
const reason = fc.record(
  {
    code: anyString,
    factor: anyString,
    rank: anyNumber,
    points_below_max: anyNumber,
    statement: anyString,
    lever: anyString,
  },
  { requiredKeys: ['code', 'factor', 'rank', 'points_below_max', 'statement'] },
);
/** A record's result with reasons (scorecard-2) or without (scorecard-1). */
const withOrWithoutReasons = fc.oneof(
  record,
  fc
    .tuple(record, fc.array(reason, { maxLength: 6 }))
    .map(([r, reasons]) => ({ ...r, result: { ...r.result, reasons } })),
);

/** Any score-log/2 record of either kind, every string any string, every number any number. */
const recordV2 = fc
  .tuple(
    withOrWithoutReasons,
    fc.oneof(
      fc.record({ kind: anyString, request_id: anyString }),
      fc.record({ kind: anyString, run_id: anyString, item: anyNumber }),
    ),
    fc.record({ scored_at: anyString, salt: anyString, policy_id: anyString }),
  )
  .map(([r, identity, stamp]) => ({ ...r, ...identity, ...stamp })) as unknown as fc.Arbitrary<LogRecordV2>;

/** A stamp as the server makes them: either kind, an ISO time, a base64url salt (and, rarely, odd strings). */
const anyStamp: fc.Arbitrary<LogRecordStamp> = fc.record({
  identity: fc.oneof(
    fc.record({
      kind: fc.constant('score' as const),
      request_id: fc.oneof(
        fc.ulid().map((u) => `req_${u}`),
        anyString,
      ),
    }),
    fc.record({
      kind: fc.constant('run_item' as const),
      run_id: fc.oneof(
        fc.ulid().map((u) => `run_${u}`),
        anyString,
      ),
      item: fc.nat(),
    }),
  ),
  scored_at: fc.oneof(
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    anyString,
  ),
  salt: fc.oneof(
    fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64url')),
    anyString,
  ),
});

/** A stamp of a scoring request, fixed. */
const STAMP: LogRecordStamp = {
  identity: { kind: 'score', request_id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X' },
  scored_at: '2026-11-26T12:00:00.000Z',
  salt: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8',
};

/** The score-log/1 bytes of a scoring (no longer logged, still recomputed): the v1 fast path. */
function v1Bytes(subject: string, context: ScoreContext): Uint8Array {
  const policy = effectivePolicy(context.jurisdiction);
  const result = scoreContext(context, policy);
  return scoringRecordBytes({ policy_version: policy.policy_version, subject, context, result });
}

/** The record `scoreAndLog` is meant to have logged, built by hand for the generic serializer. */
function v2Record(subject: string, context: ScoreContext, stamp: LogRecordStamp): LogRecordV2 {
  const policy = effectivePolicy(context.jurisdiction);
  return buildLogRecordV2({
    ...stamp,
    model_version: 'scorecard-2',
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    subject,
    context,
    result: scoreScorecard2(context, policy),
  });
}

/** The generic serializer's answer: its text, or the fact that it threw. */
function generic(value: unknown): string {
  try {
    return text(canonicalBytes(value));
  } catch {
    return 'threw';
  }
}
function specialised(value: LogRecord | LogRecordV2): string {
  try {
    return text(logRecordBytes(value));
  } catch {
    return 'threw';
  }
}

describe('logRecordJson', () => {
  it(
    'when given any record of the log record shape, then it writes what the canonicalize library writes',
    () => {
      fc.assert(
        fc.property(record, (r) => {
          expect(logRecordJson(r)).toBe(canonicalize(r));
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'when given any record of the score-log/2 shape, either kind, then it writes what the canonicalize library writes',
    () => {
      fc.assert(
        fc.property(recordV2, (r) => {
          expect(logRecordJson(r)).toBe(canonicalize(r));
          expect(logRecordJson(r)).not.toBeUndefined();
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'when given real scorings, then its bytes are the canonicalize library’s',
    () => {
      fc.assert(
        fc.property(
          anyString,
          fc.record(
            Object.fromEntries(
              FACTORS.map((f) => [
                f.key,
                f.integer
                  ? fc.integer({ min: f.range[0], max: f.range[1] })
                  : fc.double({ min: f.range[0], max: f.range[1], noNaN: true }),
              ]),
            ),
            { requiredKeys: [] },
          ),
          fc.constantFrom('DE', 'US', 'US-CA', 'FR', 'GB', 'ZZ-123'),
          anyStamp,
          (subject, inputs, jurisdiction, stamp) => {
            const context = { jurisdiction, ...inputs };
            const scoring = scoreAndLog(subject, context, stamp);
            expect(text(scoring.logBytes)).toBe(canonicalize(JSON.parse(text(scoring.logBytes))));
            expect(text(scoring.logBytes)).toBe(canonicalize(v2Record(subject, context, stamp)));
            // score-log/1, no longer logged, is still recomputed by its own fast path.
            const rebuilt = buildLogRecord({
              policy_version: scoring.policy.policy_version,
              subject,
              context,
              result: scoreContext(context, scoring.policy),
            });
            expect(text(v1Bytes(subject, context))).toBe(canonicalize(rebuilt));
          },
        ),
        { numRuns: Math.ceil(RUNS / 4) },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'when a record strays from the shape, then it declines and logRecordBytes gives the generic bytes',
    () => {
      const strays = fc.oneof(
        // A key too many, at every level.
        record.map((r) => ({ ...r, extra: 1 })),
        record.map((r) => ({ ...r, context: { ...r.context, utilisation: 0.3 } })),
        record.map((r) => ({ ...r, result: { ...r.result, note: 'x' } })),
        // A key missing, a wrong type, a number JSON cannot write, an undefined member.
        record.map(({ subject: _, ...r }) => ({ ...r, other: 'x' })),
        record.map((r) => ({ ...r, subject: 42 })),
        record.map((r) => ({ ...r, context: { ...r.context, utilization: Number.NaN } })),
        record.map((r) => ({ ...r, context: { ...r.context, utilization: Number.POSITIVE_INFINITY } })),
        record.map((r) => ({ ...r, context: { ...r.context, utilization: undefined } })),
        record.map((r) => ({ ...r, context: { ...r.context, jurisdiction: 7 } })),
        // A lone surrogate, which RFC 8785 refuses.
        record.map((r) => ({ ...r, subject: `${r.subject}\ud800` })),
        // Not a plain object.
        record.map((r) => Object.assign(new (class Rec {})(), r)),
        record.map((r) => ({ ...r, result: { ...r.result, levers: [null] } })),
      );
      fc.assert(
        fc.property(strays, (r) => {
          const stray = r as unknown as LogRecord;
          expect(specialised(stray)).toBe(generic(stray));
        }),
        { numRuns: Math.ceil(RUNS / 4) },
      );
      const straysV2 = fc.oneof(
        recordV2.map((r) => ({ ...r, extra: 1 })),
        recordV2.map((r) => ({ ...r, context: { ...r.context, utilisation: 0.3 } })),
        recordV2.map(({ salt: _, ...r }) => ({ ...r, pepper: 'x' })),
        recordV2.map((r) => ({ ...r, request_id: 'both', run_id: 'kinds', item: 1 })),
        recordV2.map((r) => ({ ...r, salt: 42 })),
        recordV2.map((r) => ({ ...r, item: Number.NaN, run_id: 'r', request_id: undefined })),
        recordV2.map((r) => ({ ...r, scored_at: `${r.scored_at}\udc00` })),
        recordV2.map((r) => Object.assign(new (class Rec {})(), r)),
        // A reason that strays: a key too many or missing, a wrong type, reasons not an array.
        recordV2.map((r) => ({ ...r, result: { ...r.result, reasons: [{ code: 'PH1' }] } })),
        recordV2.map((r) => ({
          ...r,
          result: {
            ...r.result,
            reasons: [{ code: 'PH1', factor: 'x', rank: 1, points_below_max: 2, statement: 's', why: 1 }],
          },
        })),
        recordV2.map((r) => ({
          ...r,
          result: {
            ...r.result,
            reasons: [{ code: 'PH1', factor: 'x', rank: '1', points_below_max: 2, statement: 's' }],
          },
        })),
        recordV2.map((r) => ({ ...r, result: { ...r.result, reasons: 'none' } })),
      );
      fc.assert(
        fc.property(straysV2, (r) => {
          const stray = r as unknown as LogRecordV2;
          expect(specialised(stray)).toBe(generic(stray));
        }),
        { numRuns: Math.ceil(RUNS / 4) },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it('when a scoring’s subject has a lone surrogate, then scoreAndLog does what the generic path does', () => {
    const context = { jurisdiction: 'DE', utilization: 0.3 };
    const outcome = (fn: () => Uint8Array) => {
      try {
        return text(fn());
      } catch (error) {
        return `threw ${String(error)}`;
      }
    };
    const policy = effectivePolicy('DE');
    const viaEngine = outcome(() => v1Bytes('lone \ud800', context));
    const generic = outcome(() =>
      canonicalBytes(
        buildLogRecord({
          policy_version: policy.policy_version,
          subject: 'lone \ud800',
          context,
          result: scoreContext(context, policy),
        }),
      ),
    );
    expect(viaEngine).toBe(generic);
    expect(viaEngine).toMatch(/^threw/);
    const viaEngineV2 = outcome(() => scoreAndLog('lone \ud800', context, STAMP).logBytes);
    const genericV2 = outcome(() => canonicalBytes(v2Record('lone \ud800', context, STAMP)));
    expect(viaEngineV2).toBe(genericV2);
    expect(viaEngineV2).toMatch(/^threw/);
  });

  it('when a context member is undefined, then it is left out as JSON leaves it out', () => {
    const r = buildLogRecord({
      policy_version: 'v',
      subject: 's',
      context: { jurisdiction: 'DE', utilization: undefined },
      result: { scenarios: [] as unknown as LogRecord['result']['scenarios'], levers: [] },
    });
    expect(logRecordJson(r)).toBe(canonicalize(r));
    expect(logRecordJson(r)).toContain('"context":{"jurisdiction":"DE"}');
  });
});

describe('scoringRecordUtf8 (the bytes of scoreAndLog)', () => {
  it('when it writes the engine’s own strings without JSON.stringify, then JSON would not escape them', () => {
    // Every explain entry (each factor, each marker), lever name and direction, scenario name and the model
    // version: scoringRecordUtf8 writes them between quotes as they are.
    const attributionPerMarker = [-100, -20, 0, 20, 100];
    const own = [
      ...FACTORS.flatMap((f) => [
        f.name,
        f.direction ?? '+',
        ...attributionPerMarker.map((a) => entryText(f.name, a)),
      ]),
      'p10',
      'p50',
      'p90',
    ];
    expect(new Set(own.filter((s) => s.startsWith('factor:')).map((s) => s.at(-1))).size).toBe(5);
    for (const s of own) expect(JSON.stringify(s)).toBe(`"${s}"`);
  });

  it('when given any well-formed string, then utf8AsLatin1 holds its UTF-8 bytes one per character', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        fc.pre((s as string & { isWellFormed(): boolean }).isWellFormed());
        const held = utf8AsLatin1(s);
        expect(Buffer.from(held, 'latin1')).toEqual(Buffer.from(s, 'utf8'));
      }),
      { numRuns: RUNS },
    );
  });

  it('when a number is written by oneDecimal, then it is what String (and JSON) writes', () => {
    for (let k = 0; k <= 20_000; k++) expect(oneDecimal(k / 10)).toBe(String(k / 10));
    for (const x of [-0, -0.1, -12.5, 1e-7, 0.05, 0.15, 1e15, 1e16 + 0.5, 1e21, 1e300, 5e-324]) {
      expect(oneDecimal(x)).toBe(String(x));
    }
    fc.assert(
      fc.property(anyNumber, (x) => {
        expect(oneDecimal(x)).toBe(String(x));
        expect(oneDecimal(Math.round(x * 10) / 10)).toBe(String(Math.round(x * 10) / 10));
      }),
      { numRuns: RUNS * 10 },
    );
  });

  it('when a scoring’s subject, context and result take every form, then the bytes are canonical', () => {
    // Non-ASCII and escaped subjects, every context key present or missing, integer and fractional inputs.
    for (const subject of ['a', 'é⇈😀', '"\\\u0000\u2028', '']) {
      for (const context of [
        { jurisdiction: 'US-CA' },
        { jurisdiction: 'DE', utilization: 0.97, on_time_ratio: 0.4, history_months: 3 },
        { jurisdiction: 'GB', debt_to_income: 0, inquiries_12m: 0, utilization: 1, on_time_ratio: 1 },
      ]) {
        for (const bytes of [
          v1Bytes(subject, context),
          scoreAndLog(subject, context, STAMP).logBytes,
          scoreAndLog(subject, context, {
            ...STAMP,
            identity: { kind: 'run_item', run_id: 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0', item: 41 },
          }).logBytes,
        ]) {
          expect(text(bytes)).toBe(canonicalize(JSON.parse(text(bytes))));
          expect(Buffer.from(bytes)).toEqual(Buffer.from(text(bytes), 'utf8'));
        }
        // The fast path wrote it (the generic path would give the same bytes, slower).
        const written = scoringRecordV2Utf8({ ...v2Record(subject, context, STAMP), ...STAMP });
        expect(written).toBe(utf8AsLatin1(canonicalize(v2Record(subject, context, STAMP)) as string));
      }
    }
  });

  it('when two scorings follow each other, then the first one’s bytes are not overwritten', () => {
    const first = scoreAndLog('first', { jurisdiction: 'DE', utilization: 0.3 }, STAMP).logBytes;
    const copy = Uint8Array.from(first);
    scoreAndLog('second, a longer subject than the first', { jurisdiction: 'US', utilization: 0.9 }, STAMP);
    expect(first).toEqual(copy);
    expect(first.byteOffset).toBe(0);
    expect(first.buffer.byteLength).toBe(first.length);
  });
});

describe('answerResultUtf8', () => {
  /** A context the contract accepts: any subset of the inputs, each anywhere in its range. */
  const validContext: fc.Arbitrary<ScoreContext> = fc
    .tuple(
      fc.constantFrom('DE', 'US', 'US-CA', 'US-NY', 'FR', 'GB', 'ZZ', 'XX-9AB'),
      ...FACTORS.map((f) =>
        fc.option(
          f.integer
            ? fc.integer({ min: f.range[0], max: f.range[1] })
            : fc.oneof(
                fc.double({ min: f.range[0], max: f.range[1], noNaN: true }),
                fc.integer({ min: f.range[0] * 100, max: f.range[1] * 100 }).map((n) => n / 100),
              ),
          { nil: undefined },
        ),
      ),
    )
    .map(([jurisdiction, ...values]) => {
      const context: Record<string, unknown> = { jurisdiction };
      FACTORS.forEach((f, i) => {
        if (values[i] !== undefined) context[f.key] = values[i];
      });
      return context as unknown as ScoreContext;
    });

  it(
    'when the engine scores any valid context, then it is JSON.stringify of the result, as UTF-8 bytes one per character',
    () => {
      fc.assert(
        fc.property(validContext, fc.constantFrom('en', 'de'), (context, language) => {
          const result = scoreScorecard2(context, effectivePolicy(context.jurisdiction), {
            language: language as 'en' | 'de',
          });
          expect(answerResultUtf8(result)).toBe(utf8AsLatin1(JSON.stringify(result)));
          // As the server answers another language: scored in English, the statements restated.
          const english = scoreScorecard2(context, effectivePolicy(context.jurisdiction));
          const restated = { ...english, reasons: restateReasons(english.reasons, 'de') };
          expect(answerResultUtf8(restated)).toBe(utf8AsLatin1(JSON.stringify(restated)));
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
