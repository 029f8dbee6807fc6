// Findings in catalog-src/: every one names its file, a JSON pointer and a reason (and, once
// located, the line and column of the value), and they are reported all at once so a publisher
// fixes everything in one pass. Errors stop a build; warnings (a licence nothing uses) do not.

import { isAbsolute, relative, resolve } from 'node:path';

export type Severity = 'error' | 'warning';

export interface SourceError {
  file: string; // relative to catalog-src/
  pointer: string; // RFC 6901 JSON pointer ('' = the whole document)
  reason: string;
  /** Default 'error'. */
  severity?: Severity;
  /** 1-based position of the value in the file (of its nearest existing ancestor for a missing one); set by the loader. */
  line?: number;
  col?: number;
  /** The value the field must hold, when the check can compute it (`check --fix` writes quote_sha256 ones). */
  expected?: string;
}

export const isError = (f: SourceError) => (f.severity ?? 'error') === 'error';

/** Thrown by loadCatalogSrc (and so by `build`) when there is at least one error; its message is `check`'s text report. */
export class CatalogErrors extends Error {
  readonly errors: SourceError[];
  constructor(
    readonly findings: SourceError[],
    /** How the folder was named to the command (`--src my-src`), for the summary line. */
    readonly folder: string,
    /** The folder itself, to print each file's path. */
    readonly root: string,
  ) {
    super(formatText(findings, folder, root));
    this.errors = findings.filter(isError);
  }
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** A file of the folder as the user would type it: relative to the current directory inside it, absolute elsewhere. */
export function shownPath(root: string, file: string, cwd = process.cwd()): string {
  const abs = resolve(root, file);
  const rel = relative(cwd, abs);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? abs : rel;
}

/** `<path>:<line>:<col>: error|warning: <file>#<pointer>: <reason>` (a compiler's format, which editors and CI logs link). */
export function formatFinding(f: SourceError, root: string): string {
  return `${shownPath(root, f.file)}:${f.line ?? 1}:${f.col ?? 1}: ${f.severity ?? 'error'}: ${f.file}#${f.pointer}: ${f.reason}`;
}

/** `<folder>: 3 errors, 1 warning` */
export function summaryLine(findings: SourceError[], folder: string): string {
  const errors = findings.filter(isError).length;
  return `${folder}: ${plural(errors, 'error')}, ${plural(findings.length - errors, 'warning')}`;
}

export function formatText(findings: SourceError[], folder: string, root: string): string {
  return [...findings.map((f) => formatFinding(f, root)), summaryLine(findings, folder)].join('\n');
}

export function pointer(...parts: (string | number)[]): string {
  return parts.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}
