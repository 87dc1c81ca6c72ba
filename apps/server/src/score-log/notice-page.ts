import { createHash } from 'node:crypto';
import type { Notice } from '@scenario-scoring/api-types';
import type { ReasonLanguage } from '@scenario-scoring/engine';

/** The page's words, per language (illustrative wording, not legal advice). */
const WORDS: Readonly<Record<ReasonLanguage, Readonly<Record<string, string>>>> = {
  en: {
    title: 'Your score and the main reasons for it',
    score: 'Score',
    range: 'on a range from 0 to 1000',
    scored: 'Date scored',
    model: 'Model',
    policy: 'Policy',
    reasons: 'The main reasons your score was not higher, most important first:',
    none: 'No factor lowered the score.',
    record: 'Record',
  },
  de: {
    title: 'Ihr Score und die wichtigsten Gründe dafür',
    score: 'Score',
    range: 'auf einer Skala von 0 bis 1000',
    scored: 'Datum der Bewertung',
    model: 'Modell',
    policy: 'Richtlinie',
    reasons: 'Die wichtigsten Gründe, warum Ihr Score nicht höher ist, der wichtigste zuerst:',
    none: 'Kein Faktor hat den Score gesenkt.',
    record: 'Datensatz',
  },
};

/** The page's only style, inline and allowed by its hash: no external resource of any kind. */
const STYLE =
  'body{font:16px/1.5 Georgia,serif;color:#111;max-width:40em;margin:2em auto;padding:0 1em}' +
  'h1{font-size:1.4em}dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}' +
  'dt{font-weight:bold}.score{font-size:2em;font-weight:bold}.note{font-size:.85em;color:#444;' +
  'border-top:1px solid #999;margin-top:2em;padding-top:.5em}@media print{body{margin:0}}';

/**
 * The notice page's Content-Security-Policy: nothing may load or run, its one inline style allowed by
 * hash, no base, no form, no framing.
 */
export const NOTICE_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);

/**
 * A notice as a printable, self-contained HTML page in its language: the score, its range, the date scored,
 * the model and policy, the reasons' statements in rank order, and the disclaimer. Every value is escaped.
 */
export function noticePage(notice: Notice): string {
  const words = WORDS[notice.language];
  const date = notice.scored_at.slice(0, 10);
  const reasons =
    notice.reasons.length === 0
      ? `<p>${escapeHtml(words.none as string)}</p>`
      : `<p>${escapeHtml(words.reasons as string)}</p><ol id="reasons">${notice.reasons
          .map((r) => `<li data-code="${escapeHtml(r.code)}">${escapeHtml(r.statement)}</li>`)
          .join('')}</ol>`;
  return `<!doctype html>
<html lang="${notice.language}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${escapeHtml(words.title as string)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(words.title as string)}</h1>
<p>${escapeHtml(words.score as string)}: <span class="score" id="score">${notice.score}</span> ${escapeHtml(words.range as string)}</p>
<dl><dt>${escapeHtml(words.scored as string)}</dt><dd id="scored-at"><time datetime="${escapeHtml(notice.scored_at)}">${escapeHtml(date)}</time></dd>
<dt>${escapeHtml(words.model as string)}</dt><dd id="model">${escapeHtml(notice.model_version)}</dd>
<dt>${escapeHtml(words.policy as string)}</dt><dd>${escapeHtml(notice.policy_id)} (${escapeHtml(notice.policy_version)})</dd>
<dt>${escapeHtml(words.record as string)}</dt><dd><code>${escapeHtml(notice.log_cid)}</code></dd></dl>
${reasons}
<p class="note">${escapeHtml(notice.disclaimer)}</p>
</body></html>
`;
}
