// Text helpers and the section type the docs emitters share: docs.ts imports the sections of
// agent-docs.ts, source-docs.ts and topup-docs.ts, so what they all need lives below all of them
// (scripts/import-cycles.ts keeps it that way).
import type { EmitContext } from './types.ts';

/** One H2 section of the generated docs, rendered from the build's context. */
export interface DocSection {
  /** Section heading (an H2); the table of contents links to it. */
  title: string;
  /** Markdown body under the heading, without the heading itself. */
  render: (ctx: EmitContext) => string;
}

/**
 * The anchor GitHub gives a heading (as github-slugger does): lower case; every character that is
 * not a letter, mark, number, connector (`_`), space or hyphen dropped; spaces to hyphens. A
 * repeated heading gets -1, -2, … (the caller counts). `text` is the heading's text without its
 * Markdown marks (a code span's content, a link's text).
 */
export function headingAnchor(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** A shell single-quoted word. */
export function shq(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A fenced Markdown code block. */
export const fence = (lang: string, body: string) => `\`\`\`${lang}\n${body}\n\`\`\``;

/** Digits grouped by thousands (12345 -> 12,345), independent of the machine's locale. */
export function groupDigits(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A Markdown table cell: no line breaks, pipes escaped. */
export function mdCell(text: string | number | null | undefined): string {
  return String(text ?? '').replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

export function mdTable(head: string[], rows: (string | number | null)[][]): string {
  const line = (cells: (string | number | null)[]) => `| ${cells.map(mdCell).join(' | ')} |`;
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}
