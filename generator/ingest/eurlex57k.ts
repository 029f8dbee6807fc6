// Adapter 'eurlex57k': EUR-Lex acts in the EURLEX57K format (Chalkidis et al. 2019), one JSON
// object per line: celex_id, uri (Cellar), document_type, title, header, recitals, main_body (the
// articles, in order), attachments (closing formula, signatures, footnotes and annexes) and
// eurovoc_concepts (EuroVoc descriptor ids, which route the act). English only.
//
// An act is cut into blocks, each sold as one P unit: the heading, the citations and recitals,
// each article, and the closing part with annexes. Block numbers are fixed by position (0 heading,
// 1 recitals, 1 + n article n, 2 + articles closing part), so a unit keeps its reference when
// another block of the act is empty. EURLEX57K does not carry article numbers: article n is the
// n-th element of main_body, which is Article n except in acts with inserted articles (1a).
import { CELEX } from './aligned-paragraphs.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject, readJsonLines } from './lines.ts';

export interface ActBlock {
  index: number; // position in the act (see above): the paragraph number of the unit
  part: string; // what the block is, for the citation: "recitals", "article 2 of 3", ...
  text: string;
}

export interface Eurlex57kAct {
  file: string;
  line: number;
  celex: string;
  cellar: string | null; // Cellar URI
  documentType: string;
  title: string;
  descriptors: string[]; // EuroVoc descriptor ids, sorted, each once
  blocks: ActBlock[]; // non-empty blocks, in order
}

const optionalText = (v: unknown) => v === null || typeof v === 'string';

export function checkEurlex57k(v: unknown): { ok: true; value: Omit<Eurlex57kAct, 'file' | 'line'> } | { ok: false; reason: string } {
  if (!isObject(v)) return { ok: false, reason: 'expected a JSON object' };
  const { celex_id, uri, document_type, title, header, recitals, main_body, attachments, eurovoc_concepts } = v;
  if (typeof celex_id !== 'string' || !CELEX.test(celex_id)) return { ok: false, reason: `celex_id must be a CELEX number, got ${JSON.stringify(celex_id)}` };
  if (typeof title !== 'string' || title.trim() === '') return { ok: false, reason: `title of ${celex_id} must be a non-empty string` };
  if (typeof header !== 'string') return { ok: false, reason: `header of ${celex_id} must be a string` };
  if (!optionalText(recitals) || !optionalText(attachments)) return { ok: false, reason: `recitals and attachments of ${celex_id} must be strings or null` };
  if (!Array.isArray(main_body) || !main_body.every((a) => typeof a === 'string')) return { ok: false, reason: `main_body of ${celex_id} must be an array of article texts` };
  if (!Array.isArray(eurovoc_concepts) || !eurovoc_concepts.every((d) => typeof d === 'string' && /^[0-9]+$|^c_[0-9a-f]{8}$/.test(d)))
    return { ok: false, reason: `eurovoc_concepts of ${celex_id} must be an array of EuroVoc descriptor ids` };
  if (uri !== undefined && typeof uri !== 'string') return { ok: false, reason: `uri of ${celex_id} must be a string` };
  const articles = main_body as string[];
  const blocks: ActBlock[] = [
    { index: 0, part: 'heading', text: header },
    { index: 1, part: 'citations and recitals', text: (recitals as string | null) ?? '' },
    ...articles.map((text, i) => ({ index: 2 + i, part: `article ${i + 1} of ${articles.length}`, text })),
    { index: 2 + articles.length, part: 'closing part and annexes', text: (attachments as string | null) ?? '' },
  ].filter((b) => b.text.trim() !== '');
  if (blocks.length === 0) return { ok: false, reason: `${celex_id} has no text` };
  return {
    ok: true,
    value: {
      celex: celex_id,
      cellar: (uri as string | undefined) ?? null,
      documentType: typeof document_type === 'string' ? document_type : '',
      title: title.trim(),
      descriptors: [...new Set(eurovoc_concepts as string[])].sort(),
      blocks,
    },
  };
}

export async function* readEurlex57k(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<Eurlex57kAct> {
  for await (const { line, value } of readJsonLines(file, displayName, onBad)) {
    const checked = checkEurlex57k(value);
    if (!checked.ok) {
      onBad(new IngestError(displayName, String(line), checked.reason));
      continue;
    }
    yield { file: displayName, line, ...checked.value };
  }
}
