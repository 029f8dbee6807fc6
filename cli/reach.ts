// What a command prints when the service it calls does not answer at all. fetch() says only
// "fetch failed" and hides the reason (ECONNREFUSED, ENOTFOUND, a timeout...) in `cause`: the line
// names the address tried, the reason, and what to do about it.

/** true when fetch() got no answer at all (its TypeError with a `cause`), not an HTTP error status. */
export function isUnreachable(err: unknown): boolean {
  return (err as Error)?.name === 'TypeError' && (err as { cause?: unknown }).cause !== undefined;
}

/** "cannot reach <url> (<reason>): <what to do>". */
export function cannotReach(err: unknown, url: string, whatToDo: string): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return `cannot reach ${url} (${why}): ${whatToDo}`;
}
