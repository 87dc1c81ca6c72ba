import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Notice, Problem, ScoreResponse } from '@scenario-scoring/api-types';
import {
  buildLogRecord,
  canonicalBytes,
  cidOfBytes,
  effectivePolicy,
  scoreContext,
} from '@scenario-scoring/engine';
import { chromiumLaunchOptions } from '@scenario-scoring/testkit';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testErasureWorker } from '../../test/support/test-erasure-worker.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

const FULL_FILE = {
  subject: 'applicant-8841',
  context: {
    jurisdiction: 'DE',
    on_time_ratio: 0.96,
    utilization: 0.35,
    history_months: 84,
    debt_to_income: 0.28,
    inquiries_12m: 2,
  },
};
/** A screenshot of a page of text is several kilobytes; a blank page is far less. */
const MIN_PAGE_SCREENSHOT_BYTES = 5_000;

forEachDatabase('GET /v1/logs/{cid}/notice', ({ storage, kind }) => {
  let server: TestServer;
  let key: string;
  let other: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create(`notice-${kind}`));
    ({ key: other } = await testFeatures(storage()).keys.create(`notice-other-${kind}`));
  });
  afterAll(() => server.close());

  const scored = async (body: unknown = FULL_FILE) =>
    (await (await server.request('/v1/scoring/score', { key, body })).json()) as ScoreResponse;
  const record = async (cid: string) =>
    JSON.parse(
      new TextDecoder().decode(await (await server.request(`/v1/logs/${cid}`, { key })).arrayBuffer()),
    );

  it('when asked as JSON, then the notice is the record’s p50, time, model, policy and reasons in order', async () => {
    const answer = await scored();
    const logged = await record(answer.log_cid);
    const response = await server.request(`/v1/logs/${answer.log_cid}/notice`, { key });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('content-language')).toBe('en');
    const notice = (await response.json()) as Notice;
    expect(notice).toEqual({
      log_cid: answer.log_cid,
      language: 'en',
      score: logged.result.scenarios[1].score,
      score_range: { min: 0, max: 1000 },
      scored_at: logged.scored_at,
      model_version: 'scorecard-2',
      policy_id: 'DE',
      policy_version: logged.policy_version,
      reasons: logged.result.reasons.map((r: { rank: number; code: string; statement: string }) => ({
        rank: r.rank,
        code: r.code,
        statement: r.statement,
      })),
      disclaimer: 'Illustrative wording, not legal advice.',
    });
    expect(notice.score).toBe(690.7);
    expect(notice.reasons.map((r) => r.code)).toEqual(['UT1', 'PH1', 'DI1', 'HL1']);
  });

  it('when asked in German (or an unsupported language), then the statements follow, never an error', async () => {
    const answer = await scored();
    const german = (await (
      await server.request(`/v1/logs/${answer.log_cid}/notice`, { key, headers: { 'accept-language': 'de' } })
    ).json()) as Notice;
    expect(german.language).toBe('de');
    expect(german.reasons[1]?.statement).toBe('Zu wenige Zahlungen wurden pünktlich geleistet');
    expect(german.disclaimer).toBe('Beispielhafte Formulierung, keine Rechtsberatung.');
    const response = await server.request(`/v1/logs/${answer.log_cid}/notice`, {
      key,
      headers: { 'accept-language': 'fr' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-language')).toBe('en');
  });

  it('when the record is another tenant’s or unknown, then 404 not_found', async () => {
    const answer = await scored();
    const response = await server.request(`/v1/logs/${answer.log_cid}/notice`, { key: other });
    expect(response.status).toBe(404);
    expect(((await response.json()) as Problem).code).toBe('not_found');
  });

  it('when the record was scored by scorecard-1 (score-log/1), then 422 notice_unavailable', async () => {
    const features = testFeatures(storage());
    const tenant = await features.keys.find(key);
    const policy = effectivePolicy('DE');
    const bytes = canonicalBytes(
      buildLogRecord({
        policy_version: policy.policy_version,
        ...FULL_FILE,
        result: scoreContext(FULL_FILE.context, policy),
      }),
    );
    const cid = cidOfBytes(bytes);
    await features.logs.append({
      tenantId: tenant?.tenantId as string,
      cid,
      bytes,
      requestId: 'req_legacy',
      createdAt: new Date(),
      subject: FULL_FILE.subject,
    });
    expect((await server.request(`/v1/logs/${cid}`, { key })).status).toBe(200);
    const response = await server.request(`/v1/logs/${cid}/notice`, { key });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as Problem;
    expect(problem.code).toBe('notice_unavailable');
    expect(problem.detail).toContain('scorecard-1');
  });

  it('when the record was erased, then 410 log_record_erased, as GET /v1/logs/{cid} answers', async () => {
    const subject = `notice-erased-${kind}`;
    const answer = await scored({ subject, context: { jurisdiction: 'DE' } });
    const erasure = await server.request('/v1/erasures', { key, body: { subject } });
    expect(erasure.status).toBe(202);
    const worker = testErasureWorker(storage());
    expect(await worker.runOnce()).toBe(1);
    const response = await server.request(`/v1/logs/${answer.log_cid}/notice`, { key });
    expect(response.status).toBe(410);
    expect(((await response.json()) as Problem).code).toBe('log_record_erased');
  });

  it('when opened in headless Chromium in German, then it shows the record’s numbers and reasons, loads nothing, and prints (screenshot)', async () => {
    const answer = (await (
      await server.request('/v1/scoring/score', { key, body: FULL_FILE })
    ).json()) as ScoreResponse;
    const logged = JSON.parse(
      new TextDecoder().decode(
        await (await server.request(`/v1/logs/${answer.log_cid}`, { key })).arrayBuffer(),
      ),
    );
    const browser = await chromium.launch(chromiumLaunchOptions());
    const dir = mkdtempSync(join(tmpdir(), 'notice-page-'));
    try {
      const page = await browser.newPage({
        locale: 'de-DE',
        extraHTTPHeaders: { Authorization: `Bearer ${key}` },
      });
      const requested: string[] = [];
      const violations: string[] = [];
      page.on('request', (request) => requested.push(request.url()));
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
      const response = await page.goto(`${server.url}/v1/logs/${answer.log_cid}/notice`);
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-type']).toMatch(/^text\/html/);
      expect(response?.headers()['content-language']).toBe('de');
      expect(response?.headers()['content-security-policy']).toMatch(/default-src 'none'/);
      expect(await page.getAttribute('html', 'lang')).toBe('de');
      // The numbers on the page are the record's.
      expect(Number(await page.textContent('#score'))).toBe(logged.result.scenarios[1].score);
      expect(await page.getAttribute('#scored-at time', 'datetime')).toBe(logged.scored_at);
      expect((await page.textContent('#model'))?.trim()).toBe(logged.model_version);
      const items = page.locator('#reasons li');
      const codes = [];
      for (let i = 0; i < (await items.count()); i++)
        codes.push(await items.nth(i).getAttribute('data-code'));
      expect(codes).toEqual(logged.result.reasons.map((r: { code: string }) => r.code));
      const statements = await items.allTextContents();
      expect(statements[0]).toBe('Ein zu großer Teil des verfügbaren Kreditrahmens wird genutzt');
      expect(await page.textContent('body')).toContain('keine Rechtsberatung');
      // The style applied under the strict policy (allowed by its hash): the score is set large.
      // (A string to evaluate: the server's tsconfig has no DOM types.)
      expect(await page.evaluate("getComputedStyle(document.getElementById('score')).fontWeight")).toBe(
        '700',
      );
      expect(violations).toEqual([]);
      expect(requested).toEqual([`${server.url}/v1/logs/${answer.log_cid}/notice`]);
      const file = join(dir, 'notice.png');
      await page.screenshot({ path: file, fullPage: true });
      expect(statSync(file).size).toBeGreaterThan(MIN_PAGE_SCREENSHOT_BYTES);
      const pdf = await page.pdf({ format: 'A4' });
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    } finally {
      await browser.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
