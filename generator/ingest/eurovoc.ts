// Adapter 'eurovoc': the routing tables of the EuroVoc thesaurus (descriptors.csv: descriptor id,
// its microthesauri and domains). These are lookup tables, not units: they decide which product
// an act goes to and are never stored in the unit store.
import { join } from 'node:path';
import { readCsv } from './csv.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';

export interface DescriptorPlacement {
  microthesauri: string[];
  domains: string[];
  label?: string; // label_en, where the table has one (acts that carry labels are mapped through it)
}

const list = (v: string | undefined) => (v ?? '').split(';').map((s) => s.trim()).filter(Boolean);

/** descriptor id -> its microthesauri and domains, from <dir>/descriptors.csv. */
export async function readEuroVocDescriptors(dir: string, displayDir: string, onBad: BadRecordHandler): Promise<Map<string, DescriptorPlacement>> {
  const out = new Map<string, DescriptorPlacement>();
  const name = `${displayDir}/descriptors.csv`;
  for await (const { line, record } of readCsv(join(dir, 'descriptors.csv'), name, onBad)) {
    const id = record.descriptor_id?.trim();
    if (!id || record.mt_eurovoc_ids === undefined || record.domain_codes === undefined) {
      onBad(new IngestError(name, String(line), 'a descriptor needs descriptor_id, mt_eurovoc_ids and domain_codes'));
      continue;
    }
    if (out.has(id)) {
      onBad(new IngestError(name, String(line), `descriptor ${id} is listed twice`));
      continue;
    }
    const label = record.label_en?.trim();
    out.set(id, { microthesauri: list(record.mt_eurovoc_ids), domains: list(record.domain_codes), ...(label ? { label } : {}) });
  }
  return out;
}
