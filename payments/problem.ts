// RFC 9457 problem details. Every refusal the service gives is a Problem with a stable `type`
// per case, so HTTP, MCP and A2A clients can all branch on the same identifiers.

export const PROBLEM_BASE = 'https://lds.example/problems/';

export class Problem extends Error {
  readonly type: string;
  constructor(
    readonly status: number,
    slug: string,
    readonly title: string,
    readonly detail?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail ?? title);
    this.type = PROBLEM_BASE + slug;
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
