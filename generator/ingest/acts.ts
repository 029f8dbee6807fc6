// The act metadata file that routes paragraphs: one JSON object per line with celex_id and
// eurovoc_concepts.all_levels (EuroVoc descriptor ids). Lines can be megabytes (they carry the
// full act text in every language); only the routing fields are kept.
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject, readJsonLines } from './lines.ts';

export interface ActDescriptors {
  line: number;
  celex: string;
  descriptors: string[];
}

export async function* readActs(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<ActDescriptors> {
  for await (const { line, value: v } of readJsonLines(file, displayName, onBad)) {
    const concepts = isObject(v) ? v.eurovoc_concepts : undefined;
    const all = isObject(concepts) ? concepts.all_levels : undefined;
    if (!isObject(v) || typeof v.celex_id !== 'string' || v.celex_id === '') {
      onBad(new IngestError(displayName, String(line), 'celex_id must be a non-empty string'));
      continue;
    }
    if (!Array.isArray(all) || !all.every((d) => typeof d === 'string' && d !== '')) {
      onBad(new IngestError(displayName, String(line), `eurovoc_concepts.all_levels of ${v.celex_id} must be an array of descriptor ids`));
      continue;
    }
    yield { line, celex: v.celex_id, descriptors: [...new Set(all as string[])].sort() };
  }
}
