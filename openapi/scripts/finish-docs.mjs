/**
 * Finishes the Redoc page that `redocly build-docs` wrote (dist/docs/index.html), so that it reads right
 * offline and on a server:
 *
 * - the server address: the contract's `servers` entry is the template `{base_url}`, which Redoc shows
 *   verbatim (and, after a navigation, resolves against the page: `…/docs/{base_url}`). The static page
 *   shows the variable's default, `http://localhost:3000`, instead; a server that serves /docs replaces
 *   that address with its `PUBLIC_BASE_URL`, once (apps/server/src/docs/docs-routes.ts).
 * - the Redocly logo in the sidebar is fetched from a CDN: it is inlined, so the page needs no network.
 * - long lines of code blocks wrap instead of being cut off at the right edge.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DOCS = fileURLToPath(new URL('../dist/docs/index.html', import.meta.url));
const BUNDLE = fileURLToPath(new URL('../dist/openapi.json', import.meta.url));

/** The address the static page shows: the default of the `base_url` server variable. */
function defaultBaseUrl() {
  const { servers = [] } = JSON.parse(readFileSync(BUNDLE, 'utf8'));
  const templated = servers.find((server) => server.url === '{base_url}');
  const fallback = templated?.variables?.base_url?.default;
  if (typeof fallback !== 'string') throw new Error('the contract has no {base_url} server with a default');
  return fallback;
}

const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="20"><text x="0" y="15" font-family="sans-serif" font-size="13" fill="#888">Redocly</text></svg>';
const LOGO = `data:image/svg+xml;base64,${Buffer.from(LOGO_SVG).toString('base64')}`;

const WRAP_CODE_CSS =
  '<style>pre, pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; word-break: break-word; }</style>';

let html = readFileSync(DOCS, 'utf8');
const before = html;
html = html.replaceAll('{base_url}', defaultBaseUrl());
html = html
  .replaceAll('https://cdn.redoc.ly/redoc/logo-mini-full.svg', LOGO)
  .replaceAll('https://cdn.redoc.ly/redoc/logo-mini.svg', LOGO);
if (!html.includes(WRAP_CODE_CSS)) html = html.replace('</head>', `${WRAP_CODE_CSS}</head>`);
if (html === before)
  throw new Error(`finish-docs: nothing to finish in ${DOCS}: has Redoc's output changed?`);
writeFileSync(DOCS, html);
console.log(`finish-docs: ${DOCS} shows ${defaultBaseUrl()}, needs no CDN, wraps code`);
