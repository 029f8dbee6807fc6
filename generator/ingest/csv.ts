// Adapter 'csv' and the reader every CSV-based adapter uses: one record per CSV row (header row =
// column names), streamed through csv-parse. Rows that csv-parse cannot read (bad quoting, wrong
// column count, a file cut off mid-record) are reported with their line; so are rows that are not
// valid UTF-8 (decoding turns bad bytes into U+FFFD, which a UTF-8 export never contains) and a
// header without the columns the caller needs (a wrong file: always fatal, never skipped).
import { createReadStream } from 'node:fs';
import { parse, type CsvError } from 'csv-parse';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { NOT_UTF8 } from './lines.ts';

export interface CsvRecord {
  file: string;
  line: number; // where the record starts (a quoted field may hold line breaks)
  record: Record<string, string>;
}

export interface CsvOptions {
  /** Field separator (default ","). */
  delimiter?: string;
  /** Columns the header must have; other columns are kept as they are. */
  columns?: readonly string[];
}

export async function* readCsv(file: string, displayName: string, onBad: BadRecordHandler, opts: CsvOptions = {}): AsyncGenerator<CsvRecord> {
  let header: string[] | null = null;
  const parser = createReadStream(file).pipe(
    parse({
      columns: (h: string[]) => (header = h),
      delimiter: opts.delimiter ?? ',',
      info: true,
      bom: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
    }),
  );
  // csv-parse drops a bad record and emits 'skip'; the handler decides whether that ends the build.
  let failure: unknown;
  parser.on('skip', (err: CsvError) => {
    try {
      onBad(new IngestError(displayName, String(err.lines ?? '?'), err.message));
    } catch (e) {
      failure ??= e;
      parser.destroy();
    }
  });
  let checked = false;
  const checkHeader = () => {
    checked = true;
    const h: string[] = header ?? [];
    if (h.some((c) => c.includes('\uFFFD'))) throw new IngestError(displayName, '1', `header ${NOT_UTF8}`);
    const missing = (opts.columns ?? []).filter((c) => !h.includes(c));
    if (missing.length) throw new IngestError(displayName, '1', `wrong column set: missing ${missing.join(', ')} (header has ${h.join(', ') || 'no columns'})`);
  };
  // csv-parse reports the line a record ends on; it starts after the previous record (or the
  // header, or a bad record) and the empty lines skipped since.
  let ended = 0;
  let empty = 0;
  parser.on('skip', (err: CsvError) => {
    if (typeof err.lines === 'number') ended = err.lines;
  });
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number; empty_lines: number } }>) {
      if (failure) break;
      if (!checked) {
        checkHeader();
        ended = Math.max(ended, 1);
      }
      const line = Math.min(ended + 1 + (info.empty_lines - empty), info.lines);
      ended = info.lines;
      empty = info.empty_lines;
      if (Object.values(record).some((v) => v.includes('\uFFFD'))) {
        onBad(new IngestError(displayName, String(line), NOT_UTF8));
        continue;
      }
      yield { file: displayName, line, record };
    }
  } catch (err) {
    if (err instanceof IngestError) throw err;
    if (!failure) throw new IngestError(displayName, String((err as CsvError).lines ?? '?'), (err as Error).message);
  }
  if (failure) throw failure;
  if (!checked && opts.columns?.length) checkHeader(); // a file with a header and no rows
}
