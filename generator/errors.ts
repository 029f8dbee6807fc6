// Errors found in catalog-src/: every one names its file, a JSON pointer and a reason, and they
// are reported all at once so a publisher fixes everything in one pass.

export interface SourceError {
  file: string; // relative to catalog-src/
  pointer: string; // RFC 6901 JSON pointer ('' = the whole document)
  reason: string;
}

export class CatalogErrors extends Error {
  constructor(readonly errors: SourceError[]) {
    super(`catalog-src has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n` + errors.map(formatError).join('\n'));
  }
}

export function formatError(e: SourceError): string {
  return `  ${e.file}#${e.pointer}: ${e.reason}`;
}

export function pointer(...parts: (string | number)[]): string {
  return parts.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}
