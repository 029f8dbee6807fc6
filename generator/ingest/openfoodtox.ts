// Adapter 'openfoodtox': tables of EFSA's OpenFoodTox chemical hazards database, as exported in
// CSV (UTF-8 with BOM). The table is named by the file (SubstanceCharacterisation*,
// ReferenceValues*, ReferencePoints*) and its header is checked against that table's columns.
// Rows have no identifier of their own (a substance has many reference values), so a record is
// identified by the SHA-256 of its values: stable as long as the row is, and never a line number
// that moves when the export grows.
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { readCsv } from './csv.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { describe, type SourceRecord } from './records.ts';

interface Table {
  id: string; // in unit references
  name: string; // in citations
  columns: readonly string[];
  title: (r: Record<string, string>) => string;
}

export const OPENFOODTOX_TABLES: Record<string, Table> = {
  SubstanceCharacterisation: {
    id: 'substance',
    name: 'substance characterisation',
    columns: ['Substance', 'has', 'Component', 'CASNumber', 'ECRefNo', 'MolecularFormula', 'smiles'],
    title: (r) => `${r.Substance}: ${r.has} ${r.Component}`,
  },
  ReferenceValues: {
    id: 'reference-value',
    name: 'reference value',
    columns: ['Substance', 'Author', 'Year', 'OutputID', 'Assessment', 'qualfier', 'value', 'unit', 'Population'], // "qualfier" as spelt by EFSA
    title: (r) => `${r.Substance}: ${r.Assessment} for ${r.Population}`,
  },
  ReferencePoints: {
    id: 'reference-point',
    name: 'reference point',
    columns: ['Substance', 'Author', 'Year', 'OutputID', 'Study', 'TestType', 'Species', 'Route', 'DurationDays', 'Endpoint', 'qualifier', 'value', 'unit', 'Effect', 'Toxicity'],
    title: (r) => `${r.Substance}: ${r.Endpoint} (${r.Species}, ${r.Study})`,
  },
};

export function openFoodToxTable(file: string): Table | null {
  const name = basename(file);
  const key = Object.keys(OPENFOODTOX_TABLES).find((k) => name.startsWith(k));
  return key ? OPENFOODTOX_TABLES[key] : null;
}

export async function* readOpenFoodTox(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<SourceRecord> {
  const table = openFoodToxTable(file);
  if (!table) throw new IngestError(displayName, '1', `not an OpenFoodTox table: the file name must start with ${Object.keys(OPENFOODTOX_TABLES).join(', ')}`);
  for await (const { line, record: r } of readCsv(file, displayName, onBad, { columns: table.columns })) {
    if (r.Substance.trim() === '') {
      onBad(new IngestError(displayName, String(line), 'Substance is empty'));
      continue;
    }
    const digest = createHash('sha256').update(JSON.stringify(table.columns.map((c) => r[c]))).digest('hex').slice(0, 16);
    const output = r.OutputID ? `, EFSA output ${r.OutputID} (${r.Author} ${r.Year})` : '';
    yield {
      file: displayName,
      where: String(line),
      key: ['openfoodtox', table.id, digest],
      title: table.title(r),
      label: `EFSA OpenFoodTox ${table.name}, ${r.Substance}${output}`,
      fields: { ...r },
      text: describe(...table.columns.map((c) => r[c])),
      group: r.Substance,
    };
  }
}
