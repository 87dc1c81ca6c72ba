import { DEFAULT_REASON_LANGUAGE, isReasonLanguage, type ReasonLanguage } from '@scenario-scoring/engine';

/**
 * The statement language an `Accept-Language` header asks for (RFC 9110 §12.5.4, RFC 4647 basic
 * filtering on the primary subtag): the supported language (`en`, `de`) with the highest quality value,
 * the earlier one on a tie; `*` is the default. Anything else, a malformed header or none, gives the
 * default, `en`: an unsupported language is never an error.
 */
export function reasonLanguage(header: string | undefined): ReasonLanguage {
  if (header === undefined || header.length > 1024) return DEFAULT_REASON_LANGUAGE;
  let best: ReasonLanguage = DEFAULT_REASON_LANGUAGE;
  let bestQuality = 0;
  for (const part of header.split(',')) {
    const [range = '', ...parameters] = part.split(';').map((piece) => piece.trim());
    let quality = 1;
    for (const parameter of parameters) {
      const match = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i.exec(parameter);
      if (match) quality = Number(match[1]);
    }
    if (quality <= bestQuality) continue;
    const primary = range.toLowerCase().split('-')[0] ?? '';
    const language = primary === '*' ? DEFAULT_REASON_LANGUAGE : primary;
    if (!isReasonLanguage(language)) continue;
    best = language;
    bestQuality = quality;
  }
  return best;
}
