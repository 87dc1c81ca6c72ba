import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chromiumLaunchOptions,
  type FileSnapshot,
  type PrismServer,
  snapshotFile,
  startPrism,
} from '@scenario-scoring/testkit';
import { build } from 'esbuild';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The client in a browser: esbuild bundles a small page that uses it (as a web app's bundler would), and
 * headless Chromium runs that page against the mock of the API (cross-origin, as a web app calls an API).
 */
const CONTRACT = fileURLToPath(new URL('../../../openapi/dist/openapi.yaml', import.meta.url));
const CLIENT_ENTRY = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const HELLO_CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';

/** The page's code: score through the typed helper, and compute a CID with WebCrypto. */
const PAGE_SCRIPT = `
import { computeLogCid, createClient, scoreSubject } from '@scenario-scoring/client';

const client = createClient({ baseUrl: window.API_BASE_URL, apiKey: 'sk_${'a1B2c3D4e5'.repeat(4)}', retries: false });
const scored = await scoreSubject(client, { subject: 'applicant-8841', context: { jurisdiction: 'DE', utilization: 0.35 } });
const refused = await client.POST('/v1/scoring/score', { body: { subject: 'x', context: { jurisdiction: 'de' } } });
document.getElementById('result').textContent = JSON.stringify({
  scores: scored.data?.result.scenarios.map((s) => s.score),
  refusal: refused.error?.code,
  cid: await computeLogCid('hello world'),
});
`;

let workDir = '';
let snapshot: FileSnapshot;
let mock: PrismServer;
let pages: Server;
let browser: Browser;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'ss-client-browser-'));
  await writeFile(join(workDir, 'page.js'), PAGE_SCRIPT);
  await build({
    entryPoints: [join(workDir, 'page.js')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outfile: join(workDir, 'bundle.js'),
    alias: { '@scenario-scoring/client': CLIENT_ENTRY },
    logLevel: 'silent',
  });
  snapshot = snapshotFile(CONTRACT);
  mock = await startPrism(snapshot.path);
  const html = `<!doctype html><meta charset="utf-8"><pre id="result"></pre>
<script>window.API_BASE_URL = ${JSON.stringify(mock.baseUrl)};</script><script type="module" src="/bundle.js"></script>`;
  const { readFile } = await import('node:fs/promises');
  const bundle = await readFile(join(workDir, 'bundle.js'));
  pages = createServer((req, res) => {
    if (req.url === '/bundle.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  browser = await chromium.launch(chromiumLaunchOptions());
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
  await mock?.stop();
  snapshot?.remove();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('the client bundled for a browser', () => {
  it('scores through the mock, reads a problem, and computes a CID in Chromium', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`http://127.0.0.1:${(pages.address() as AddressInfo).port}/`);
    const result = page.locator('#result');
    await page.waitForFunction(() => document.getElementById('result')?.textContent !== '', undefined, {
      timeout: 20_000,
    });
    expect(errors).toEqual([]);
    expect(JSON.parse((await result.textContent()) ?? '')).toEqual({
      scores: [655.5, 690.7, 726],
      refusal: 'validation_failed',
      cid: HELLO_CID,
    });
  }, 60_000);
});
