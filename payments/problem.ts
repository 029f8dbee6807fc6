// RFC 9457 problem details. Every refusal the service gives is a Problem with a stable `type`
// per case, so HTTP, MCP and A2A clients can all branch on the same identifiers.
//
// `type` = <docs_url>problems/<slug> (contract/problems.ts), the page the build publishes for it.
// The service learns docs_url from the catalogue in dist/ at start (payments/serve.ts calls
// useProblemBase), so the types always point at the documentation of the build being served. One
// base per process: every server a process starts serves a build of the same docs_url.
import { problemBase } from '../contract/problems.ts';

/** Until a server has read its catalogue: the base of a local build (`lds build --local`). */
let base = problemBase('http://127.0.0.1:8080/docs/');

/** Sets the base of every problem `type` from the served catalogue's docs_url. */
export function useProblemBase(docsUrl: string): void {
  base = problemBase(docsUrl);
}

/** The current base of problem types (`<docs_url>problems/`). */
export function currentProblemBase(): string {
  return base;
}

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail ?? title);
  }

  get type(): string {
    return base + this.slug;
  }

  toJSON(instance?: string): Record<string, unknown> {
    return { type: this.type, title: this.title, status: this.status, ...(this.detail ? { detail: this.detail } : {}), ...(instance ? { instance } : {}), ...this.extra };
  }
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Content Too Large', 431: 'Request Header Fields Too Large' };

/**
 * A whole HTTP/1.1 response carrying the problem, for the few refusals written straight to a socket
 * because Node's HTTP parser fails before any request object exists (payments/serve.ts
 * 'clientError': a malformed request line, a header too large, a request that took too long).
 * The connection is closed after it.
 */
export function rawProblemResponse(p: Problem): string {
  const body = JSON.stringify(p.toJSON());
  return (
    `HTTP/1.1 ${p.status} ${REASONS[p.status] ?? 'Error'}\r\n` +
    `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Cache-Control: no-store\r\n' +
    'Connection: close\r\n\r\n' +
    body
  );
}
