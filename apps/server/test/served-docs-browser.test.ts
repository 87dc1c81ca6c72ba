import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumLaunchOptions } from '@scenario-scoring/testkit';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';

/**
 * The docs as a browser shows them when the built server serves them: the server address in the
 * operation panel is the configured `PUBLIC_BASE_URL` (not `{base_url}`, not `…/docs/{base_url}` after a
 * navigation), and the page needs nothing from the network.
 */
const RENDER_TIMEOUT_MS = 20_000;
/** A screenshot of a line of text is a few hundred bytes at least; a blank box is far less. */
const MIN_TEXT_SCREENSHOT_BYTES = 600;
/** The address the docs are told to show (the server listens on 127.0.0.1 on a free port). */
const PUBLIC_BASE_URL = 'https://scoring.example.test';

let database: TestDatabase;
let server: BuiltServer;
let browser: Browser;
let page: Page;
let origin = '';
const offsite: string[] = [];

beforeAll(async () => {
  requireBuiltServer();
  database = await createTestDatabase('sqlite');
  server = new BuiltServer({ ...databaseEnv(database), PUBLIC_BASE_URL });
  origin = await server.baseUrl();
  browser = await chromium.launch(chromiumLaunchOptions());
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
    offsite.push(url);
    return route.abort();
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await database?.dispose();
});

/** Opens the server list of an operation's panel and returns the entry naming the public address. */
async function serverEntry(operationPath: string) {
  const toggle = page.locator('button[aria-haspopup="menu"]', { hasText: operationPath }).first();
  await toggle.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
  await toggle.click();
  const entry = page.getByText(`${PUBLIC_BASE_URL}${operationPath}`, { exact: true }).first();
  await entry.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
  return entry;
}

describe('the docs served by the built server', () => {
  it('show the public address of the server in the operation panel (screenshot)', async () => {
    await page.goto(`${origin}/docs#tag/Scoring/operation/scoreSubject`);
    const entry = await serverEntry('/v1/scoring/score');
    const dir = mkdtempSync(join(tmpdir(), 'served-docs-'));
    try {
      const file = join(dir, 'server-address.png');
      await entry.screenshot({ path: file });
      expect(statSync(file).size).toBeGreaterThan(MIN_TEXT_SCREENSHOT_BYTES);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await page.content()).not.toContain('{base_url}');
  }, 60_000);

  it('still show it after a navigation to another operation', async () => {
    await page.keyboard.press('Escape');
    // A click on a link inside the page, as a reader navigates (no DOM types in the server's tsconfig).
    await page.evaluate("location.hash = '#tag/Runs/operation/createRun'");
    const entry = await serverEntry('/v1/scoring/runs');
    expect((await entry.textContent())?.trim()).toBe(`${PUBLIC_BASE_URL}/v1/scoring/runs`);
    expect(await page.content()).not.toContain('/docs/{base_url}');
  }, 60_000);

  it('fetched nothing from outside the server (the logo is inlined)', () => {
    expect(offsite).toEqual([]);
  });
});
