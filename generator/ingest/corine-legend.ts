// Adapter 'corine-legend': the CORINE Land Cover nomenclature as published with the CLC raster
// products (clc_legend.csv: GRID_CODE, CLC_CODE, LABEL1..3 for the three levels, RGB display
// colour). One record per land-cover class; the 3-digit CLC code identifies it.
import { readCsv } from './csv.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { describe, type SourceRecord } from './records.ts';

export const CLC_LEGEND_COLUMNS = ['GRID_CODE', 'CLC_CODE', 'LABEL1', 'LABEL2', 'LABEL3', 'RGB'] as const;

export async function* readCorineLegend(file: string, displayName: string, onBad: BadRecordHandler, delimiter?: string): AsyncGenerator<SourceRecord> {
  for await (const { line, record: r } of readCsv(file, displayName, onBad, { columns: CLC_LEGEND_COLUMNS, delimiter })) {
    const reason = !/^[1-5][0-9]{2}$/.test(r.CLC_CODE) ? `CLC_CODE must be a 3-digit CORINE code, got ${JSON.stringify(r.CLC_CODE)}`
      : !/^[0-9]+$/.test(r.GRID_CODE) ? `GRID_CODE must be a number, got ${JSON.stringify(r.GRID_CODE)}`
      : !/^[0-9]{3}-[0-9]{3}-[0-9]{3}$/.test(r.RGB) ? `RGB must be rrr-ggg-bbb, got ${JSON.stringify(r.RGB)}`
      : r.LABEL3.trim() === '' ? `class ${r.CLC_CODE} has no LABEL3`
      : '';
    if (reason) {
      onBad(new IngestError(displayName, String(line), reason));
      continue;
    }
    yield {
      file: displayName,
      where: String(line),
      key: ['clc', r.CLC_CODE],
      title: r.LABEL3,
      label: `CORINE Land Cover nomenclature, class ${r.CLC_CODE} (grid code ${r.GRID_CODE}; ${r.LABEL1} > ${r.LABEL2})`,
      fields: { ...r },
      text: describe(`CORINE land cover class ${r.CLC_CODE}`, r.LABEL1, r.LABEL2, r.LABEL3),
      group: r.LABEL1,
    };
  }
}
