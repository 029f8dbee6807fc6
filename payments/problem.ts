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
