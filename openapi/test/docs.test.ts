import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromiumLaunchOptions } from '@scenario-scoring/testkit';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bundle,
  DOCS_HTML,
  errorCodes,
  loadBundle,
  type Node,
  type Operation,
  operationsOf,
  redocSlug,
} from './contract-bundle.js';

const VIEWPORT = { width: 1400, height: 900 };
const RENDER_TIMEOUT_MS = 15_000;
/** A blank 1400×900 PNG is a few kilobytes; a rendered page of text and code is far larger. */
const MIN_SCREENSHOT_BYTES = 30_000;

const bundle = loadBundle();
const docsUrl = pathToFileURL(DOCS_HTML).href;
const operations = operationsOf(bundle, 'paths');
const events = operationsOf(bundle, 'webhooks');
const codes = errorCodes(bundle);
const webhookGuide = bundle.tags?.find((tag) => tag.name === 'Webhook guide');
const batchGuide = bundle.tags?.find((tag) => tag.name === 'Batch scoring guide');

let browser: Browser;
let page: Page;
const refusedRequests: string[] = [];
const pageErrors: string[] = [];

/** Moves the single-page docs to an anchor, as a click on a link to it would. */
async function goToAnchor(hash: string): Promise<void> {
  await page.evaluate((target) => {
    window.location.hash = target;
  }, hash);
}

/**
 * Waits until the element with `id` is or holds a heading containing `text` at the top of the viewport:
 * Redoc renders sections lazily, so this proves the anchor rendered and was scrolled to.
 */
async function expectHeadingInView(id: string, text: string): Promise<void> {
  try {
    await page.waitForFunction(
      ([sectionId, headingText]) => {
        const section = document.getElementById(sectionId);
        const headings = section ? [section, ...Array.from(section.querySelectorAll('h1, h2, h3'))] : [];
        const heading = headings.find(
          (candidate) => /^H[1-3]$/.test(candidate.tagName) && candidate.textContent?.includes(headingText),
        );
        const box = heading?.getBoundingClientRect();
        // In the top quarter: where a jump to the anchor puts it, not merely somewhere on screen.
        return box !== undefined && box.height > 0 && box.top >= 0 && box.top <= window.innerHeight / 4;
      },
      [id, text] as const,
      { timeout: RENDER_TIMEOUT_MS },
    );
  } catch {
    const sections = await page.evaluate(() =>
      Array.from(document.querySelectorAll('[data-section-id]'), (el) => el.getAttribute('data-section-id')),
    );
    throw new Error(`no heading "${text}" in view at #${id}; sections: ${sections.join(' ')}`);
  }
}

/** The anchor Redoc gives an operation or event: its first tag's slug, then its lower-cased operationId. */
function anchorOf(operation: Operation): string {
  return `${redocSlug(operation.tags[0] ?? '')}/${operation.operationId.toLowerCase()}`;
}

/** Every problem-details object in the bundle's examples (a `code` from the enum beside a `type`). */
function problemExamples(node: unknown, at: string, found: { at: string; problem: Node }[] = []) {
  if (node === null || typeof node !== 'object') return found;
  const object = node as Node;
  if (typeof object.code === 'string' && codes.includes(object.code) && typeof object.type === 'string') {
    found.push({ at, problem: object });
  }
  for (const [key, value] of Object.entries(object)) problemExamples(value, `${at}/${key}`, found);
  return found;
}

/** The status each error-guide entry opens with (`## code` then `**422.**`), from the bundle's guide text. */
function guideStatuses(doc: Bundle): Map<string, number> {
  const entries = (doc.info.description ?? '').matchAll(/^## ([a-z_]+)\n\n\*\*(\d{3})\b/gm);
  return new Map([...entries].map(([, code, status]) => [code as string, Number(status)]));
}

beforeAll(async () => {
  browser = await chromium.launch(chromiumLaunchOptions('--disable-quic'));
  const context = await browser.newContext({ viewport: VIEWPORT, serviceWorkers: 'block' });
  // Everything but the file itself is refused, so the docs must work with no network at all.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:')) return route.continue();
    refusedRequests.push(url);
    return route.abort('blockedbyclient');
  });
  await context.routeWebSocket(/.*/, (socket) => {
    refusedRequests.push(socket.url());
    return socket.close();
  });
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(docsUrl);
  await page.waitForSelector('[id="section/errors"]', { timeout: RENDER_TIMEOUT_MS });
});

afterAll(async () => {
  await browser?.close();
});

describe('the offline API reference (dist/docs/index.html)', () => {
  it.each(operations)('renders operation $operationId with its summary "$summary"', async (operation) => {
    const anchor = anchorOf(operation);
    await goToAnchor(`#/${anchor}`);
    await expectHeadingInView(anchor, operation.summary);
  });

  it.each(events)('renders webhook event $key with its summary "$summary"', async (event) => {
    const anchor = anchorOf(event);
    await goToAnchor(`#/${anchor}`);
    await expectHeadingInView(anchor, event.summary);
  });

  it('has an error-guide entry for every ErrorCode, and none for codes that do not exist', async () => {
    const entries = await page.evaluate(() =>
      Array.from(document.querySelectorAll('h2[id^="section/errors/"]'), (el) => el.id.split('/').pop()),
    );
    expect([...entries].sort()).toEqual([...codes].sort());
  });

  it.each(codes)(
    'scrolls the error-guide entry %s into view at its link #section/errors/<code>',
    async (code) => {
      await goToAnchor(`#section/errors/${code}`);
      await expectHeadingInView(`section/errors/${code}`, code);
    },
  );

  it('scrolls to an error-guide entry when the docs are opened at its link', async () => {
    const code = codes.at(-1) as string;
    const fresh = await page.context().newPage();
    try {
      await fresh.goto(`${docsUrl}#section/errors/${code}`);
      await fresh.waitForFunction(
        (id) => {
          const box = document.getElementById(id)?.getBoundingClientRect();
          return box !== undefined && box.top >= 0 && box.top <= window.innerHeight / 4;
        },
        `section/errors/${code}`,
        { timeout: RENDER_TIMEOUT_MS },
      );
    } finally {
      await fresh.close();
    }
  });

  it('renders the webhook guide: every heading, and the express.raw receiver example', async () => {
    expect(webhookGuide?.['x-traitTag'], 'the contract has a "Webhook guide" trait tag').toBe(true);
    const headings = [...(webhookGuide?.description ?? '').matchAll(/^## (.+)$/gm)].map(([, text]) => text);
    expect(headings).toContain('Verifying the signature');
    for (const heading of headings as string[]) {
      const anchor = `webhook-guide/${redocSlug(heading)}`;
      await goToAnchor(`#/${anchor}`);
      await expectHeadingInView(anchor, heading);
    }
    await goToAnchor('#/webhook-guide/verifying-the-signature');
    await expectHeadingInView('webhook-guide/verifying-the-signature', 'Verifying the signature');
    // The guide has two receivers (standardwebhooks and the client); this is the first.
    const receiver = page.locator('pre', { hasText: 'webhook.verify(req.body, req.headers)' });
    await receiver.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
    await expect(receiver.textContent()).resolves.toContain("express.raw({ type: 'application/json' })");
    const box = await receiver.boundingBox();
    expect(box !== null && box.y >= 0 && box.y < VIEWPORT.height, 'the receiver example is on screen').toBe(
      true,
    );
  });

  it('renders the batch scoring guide: every heading, and the client example', async () => {
    expect(batchGuide?.['x-traitTag'], 'the contract has a "Batch scoring guide" trait tag').toBe(true);
    const headings = [...(batchGuide?.description ?? '').matchAll(/^## (.+)$/gm)].map(([, text]) => text);
    expect(headings).toContain('Restarts and failures');
    for (const heading of headings as string[]) {
      const anchor = `batch-scoring-guide/${redocSlug(heading)}`;
      await goToAnchor(`#/${anchor}`);
      await expectHeadingInView(anchor, heading);
    }
    const example = page.locator('pre', { hasText: 'await waitForRun(client, submitted.data.id' });
    await example.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
  });

  it.each([
    ['Scoring model', 'A worked example', 'factor:payment_history⇈'],
    ['Versioning', 'Deprecation', 'Sunset: <HTTP date>'],
    ['Personal data guide', 'The erasure event', 'rather than starting a second erasure'],
  ])('renders the %s guide: every heading, and its content', async (name, lastHeading, text) => {
    const guide = bundle.tags?.find((tag) => tag.name === name);
    expect(guide?.['x-traitTag'], `the contract has a "${name}" trait tag`).toBe(true);
    const headings = [...(guide?.description ?? '').matchAll(/^## (.+)$/gm)].map(([, heading]) => heading);
    expect(headings).toContain(lastHeading);
    for (const heading of headings as string[]) {
      const anchor = `${redocSlug(name)}/${redocSlug(heading)}`;
      await goToAnchor(`#/${anchor}`);
      await expectHeadingInView(anchor, heading);
    }
    await page.getByText(text).first().waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
  });

  it('shows a usable server address (the base_url default), and wraps long lines of code', async () => {
    const html = await page.content();
    expect(html).not.toContain('{base_url}');
    const toggle = page.locator('button[aria-haspopup="menu"]', { hasText: '/v1/scoring/score' }).first();
    await goToAnchor('#/scoring/scoresubject');
    await toggle.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
    await toggle.click();
    const entry = page.getByText('http://localhost:3000/v1/scoring/score', { exact: true }).first();
    await entry.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
    await page.keyboard.press('Escape');
    const whiteSpace = await page.evaluate(() => {
      const pre = document.querySelector('pre');
      return pre ? getComputedStyle(pre).whiteSpace : 'no pre';
    });
    expect(whiteSpace).toBe('pre-wrap');
  });

  it('renders a non-trivial page (screenshot)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-docs-'));
    try {
      const file = join(dir, 'webhook-guide.png');
      await page.screenshot({ path: file });
      expect(statSync(file).size).toBeGreaterThan(MIN_SCREENSHOT_BYTES);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Last, so that it covers the requests of every section rendered above.
  it('needed nothing from the network and threw no errors', () => {
    // Even Redoc's logo: scripts/finish-docs.mjs inlines it. Redoc's telemetry (otel.cloud.redocly.com) is off only when redocly.yaml says `telemetry: off`.
    expect([...new Set(refusedRequests)], 'requests the offline docs attempted').toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

describe("the problem examples' links to the error guide", () => {
  const problems = problemExamples(bundle, '#');
  const statuses = guideStatuses(bundle);

  it('finds problem examples to check', () => {
    expect(problems.length).toBeGreaterThan(10);
  });

  it('links every problem example to /docs#section/errors/<its code>', () => {
    const wrong = problems.filter(({ problem }) => problem.type !== `/docs#section/errors/${problem.code}`);
    expect(wrong.map(({ at, problem }) => `${at}: ${problem.type} for ${problem.code}`)).toEqual([]);
  });

  it('gives each code one title, and the status its error-guide entry states', () => {
    const titles = new Map<unknown, unknown>();
    for (const { at, problem } of problems) {
      if (!titles.has(problem.code)) titles.set(problem.code, problem.title);
      expect(problem.title, `${at} (${problem.code})`).toBe(titles.get(problem.code));
      expect(problem.status, `${at} (${problem.code})`).toBe(statuses.get(String(problem.code)));
    }
  });
});
