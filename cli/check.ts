// `lds check` (every finding of catalog-src/ in one run, as text, GitHub workflow commands or one
// JSON document; --fix writes the licence text hashes it asked for) and `lds licence hash FILE`.
// The checks themselves are generator/load.ts, the same code `lds build` loads through.
import { readFile, writeFile } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { formatText, isError, shownPath, summaryLine, type SourceError } from '../generator/errors.ts';
import { jsonSpans } from '../generator/json-positions.ts';
import { CatalogUnreadable, checkCatalogSrc, sha256File } from '../generator/load.ts';

export const FORMATS = ['text', 'json', 'github'] as const;
export type Format = (typeof FORMATS)[number];

/** Exit statuses of `check`, documented in the README. */
export const EXIT = { clean: 0, errors: 1, couldNotRun: 2 } as const;

export interface CheckIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  cwd?: string;
}

/** GitHub's escaping of a workflow command's message and of its properties (actions/toolkit, command.ts). */
const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (s: string) => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** The report in `format`: findings, then the summary line naming the folder (json: one document). */
export function renderFindings(format: Format, findings: SourceError[], folder: string, root: string, cwd = process.cwd()): string {
  const errors = findings.filter(isError).length;
  if (format === 'json')
    return JSON.stringify({
      src: folder,
      errors,
      warnings: findings.length - errors,
      findings: findings.map((f) => ({
        severity: f.severity ?? 'error',
        file: shownPath(root, f.file, cwd),
        pointer: f.pointer,
        line: f.line ?? 1,
        col: f.col ?? 1,
        message: f.reason,
      })),
    }, null, 2);
  if (format === 'github') {
    // GitHub wants paths relative to the repository root, which is where a workflow step runs.
    const lines = findings.map((f) => {
      const path = relative(cwd, resolve(root, f.file));
      return `::${f.severity ?? 'error'} file=${escapeProperty(path)},line=${f.line ?? 1},col=${f.col ?? 1}::${escapeData(`${f.file}#${f.pointer}: ${f.reason}`)}`;
    });
    return [...lines, summaryLine(findings, folder)].join('\n');
  }
  return formatText(findings, folder, root);
}

/** Writes each expected quote_sha256 into its source file, keeping the file's formatting. Returns what it changed. */
export async function fixHashes(root: string, findings: SourceError[]): Promise<string[]> {
  const changed: string[] = [];
  const byFile = new Map<string, SourceError[]>();
  for (const f of findings)
    if (f.expected !== undefined && f.pointer.endsWith('/quote_sha256')) byFile.set(f.file, [...(byFile.get(f.file) ?? []), f]);
  for (const [file, fixes] of byFile) {
    const path = resolve(root, file);
    let text = await readFile(path, 'utf8');
    // Later positions first, so earlier offsets stay valid.
    const edits = fixes
      .map((f) => {
        const spans = jsonSpans(text);
        const at = spans.get(f.pointer);
        if (at) return { start: at.start, end: at.end, insert: JSON.stringify(f.expected), f, old: text.slice(at.start, at.end) };
        // Missing: add it after quote_file, on a line of its own indented like quote_file's.
        const beside = spans.get(f.pointer.replace(/quote_sha256$/, 'quote_file'));
        if (!beside) return null;
        const lineStart = text.lastIndexOf('\n', beside.start) + 1;
        const indent = /^\s*/.exec(text.slice(lineStart))![0];
        return { start: beside.end, end: beside.end, insert: `,\n${indent}"quote_sha256": ${JSON.stringify(f.expected)}`, f, old: null };
      })
      .filter((e) => e !== null)
      .sort((a, b) => b.start - a.start);
    for (const e of edits) {
      text = text.slice(0, e.start) + e.insert + text.slice(e.end);
      changed.push(`${shownPath(root, file)}: ${file}#${e.f.pointer}: ${e.old === null ? 'added' : `${e.old} ->`} ${JSON.stringify(e.f.expected)}`);
    }
    if (edits.length) await writeFile(path, text);
  }
  return changed;
}

/** `lds check`: returns the exit status. */
export async function runCheck(o: { src: string; format: Format; fix?: boolean }, io: CheckIo): Promise<number> {
  const root = resolve(io.cwd ?? process.cwd(), o.src);
  const folder = o.src.replace(/(.)\/+$/, '$1');
  try {
    let { findings, cat } = await checkCatalogSrc(root);
    if (o.fix) {
      const changed = await fixHashes(root, findings);
      for (const c of changed) io.stderr(`fixed ${c}`);
      io.stderr(changed.length ? `--fix: wrote ${changed.length} quote_sha256 value${changed.length === 1 ? '' : 's'}; checking again` : '--fix: no quote_sha256 to write');
      if (changed.length) ({ findings, cat } = await checkCatalogSrc(root));
    }
    io.stdout(renderFindings(o.format, findings, folder, root, io.cwd));
    // stderr: stdout holds exactly the findings and the summary line.
    if (cat && o.format === 'text')
      io.stderr(`${folder} is valid: ${cat.products.length} products, ${cat.sources.size} sources, ${cat.licences.size} licence${cat.licences.size === 1 ? '' : 's'}`);
    return findings.some(isError) ? EXIT.errors : EXIT.clean;
  } catch (err) {
    const reason = err instanceof CatalogUnreadable ? err.message : `${(err as Error).message}`;
    if (o.format === 'github') io.stdout(`::error::${escapeData(`lds check could not run: ${reason}`)}`);
    io.stderr(`error: could not check ${folder}: ${reason}`);
    return EXIT.couldNotRun;
  }
}

/** `lds licence hash FILE`: the value a ruling's quote_sha256 must hold for this licence text (SHA-256 of its bytes, as the check computes it). */
export async function licenceHash(file: string): Promise<string | null> {
  return sha256File(resolve(file));
}
