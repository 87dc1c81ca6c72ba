/**
 * The answer the contract documents for a request: its status and, when the contract gives several, the
 * name of the example. Sent as an RFC 7240 `Prefer` header, it tells Prism which documented answer to
 * give; the server ignores it and must give that answer by itself.
 */
export interface DocumentedAnswer {
  status: number;
  example?: string;
}

/** The `Prefer` header that asks Prism for `answer`. */
export function preferHeader(answer: DocumentedAnswer): { Prefer: string } {
  return {
    Prefer: `code=${answer.status}${answer.example === undefined ? '' : `, example=${answer.example}`}`,
  };
}
