import { describe, expect, expectTypeOf, it } from 'vitest';
import { API_KEY, BASE_URL, jsonResponse, problemResponse, scriptedFetch } from '../test/scripted-fetch.js';
import type { Notice, Reason } from './api-types.js';
import { createClient } from './client-factory.js';
import { getNotice, reasonsOf } from './reasons.js';

const REASONS: Reason[] = [
  {
    code: 'PH1',
    factor: 'payment_history',
    rank: 2,
    points_below_max: 77.8,
    statement: 'Too few payments were made on time',
    lever: 'payment_history',
  },
  {
    code: 'UT1',
    factor: 'utilization',
    rank: 1,
    points_below_max: 129.6,
    statement: 'Too much of the available credit is in use',
    lever: 'utilization',
  },
];
const RESULT = { scenarios: [], levers: [], reasons: REASONS } as never;
const NOTICE: Notice = {
  log_cid: 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
  language: 'de',
  score: 690.7,
  score_range: { min: 0, max: 1000 },
  scored_at: '2026-11-26T09:30:00.000Z',
  model_version: 'scorecard-2',
  policy_id: 'DE',
  policy_version: '2026-11-01',
  reasons: [
    { rank: 1, code: 'UT1', statement: 'Ein zu großer Teil des verfügbaren Kreditrahmens wird genutzt' },
  ],
  disclaimer: 'Beispielhafte Formulierung, keine Rechtsberatung.',
};

describe('reasonsOf', () => {
  it('gives the reasons of an answer or a result in rank order, and none for a result without them', () => {
    expect(reasonsOf({ result: RESULT }).map((r) => r.code)).toEqual(['UT1', 'PH1']);
    expect(reasonsOf(RESULT).map((r) => r.rank)).toEqual([1, 2]);
    expect(reasonsOf({ scenarios: [], levers: [] } as never)).toEqual([]);
    expectTypeOf(reasonsOf(RESULT)).toEqualTypeOf<Reason[]>();
  });
});

describe('getNotice', () => {
  it('asks for JSON in the language given, and answers the notice or the problem', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(NOTICE), problemResponse(422, 'notice_unavailable'));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    const ok = await getNotice(client, NOTICE.log_cid, { language: 'de' });
    expectTypeOf(ok.data).toEqualTypeOf<Notice | undefined>();
    expect(ok.data?.reasons[0]?.code).toBe('UT1');
    expect(sent[0]?.url).toBe(`${BASE_URL}/v1/logs/${NOTICE.log_cid}/notice`);
    expect(sent[0]?.headers.get('accept')).toBe('application/json');
    expect(sent[0]?.headers.get('accept-language')).toBe('de');
    const refused = await getNotice(client, NOTICE.log_cid);
    expect(refused.error?.code).toBe('notice_unavailable');
    expect(sent[1]?.headers.get('accept-language')).toBeNull();
  });

  it('with format html, asks for the page and answers its text', async () => {
    const page = '<!doctype html><html lang="en"><title>Notice</title></html>';
    const { fetch, sent } = scriptedFetch(
      new Response(page, { headers: { 'Content-Type': 'text/html; charset=utf-8' } }),
    );
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    const answer = await getNotice(client, NOTICE.log_cid, { format: 'html' });
    expectTypeOf(answer.data).toEqualTypeOf<string | undefined>();
    expect(answer.data).toBe(page);
    expect(sent[0]?.headers.get('accept')).toBe('text/html');
  });
});
