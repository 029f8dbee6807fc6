// Adapter 'csv': one record per CSV row (header row = column names), streamed through csv-parse.
// Rows that csv-parse cannot read (bad quoting, wrong column count) are reported with their line.
import { createReadStream } from 'node:fs';
import { parse, type CsvError } from 'csv-parse';
import { type BadRecordHandler, IngestError } from './errors.ts';

export interface CsvRecord {
  file: string;
  line: number;
  record: Record<string, string>;
}

export async function* readCsv(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<CsvRecord> {
  const parser = createReadStream(file).pipe(
    parse({ columns: true, info: true, bom: true, skip_empty_lines: true, skip_records_with_error: true }),
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
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
      if (failure) break;
      yield { file: displayName, line: info.lines, record };
    }
  } catch (err) {
    if (!failure) throw new IngestError(displayName, String((err as CsvError).lines ?? '?'), (err as Error).message);
  }
  if (failure) throw failure;
}
