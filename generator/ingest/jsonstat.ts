// Adapter 'jsonstat': one record per non-null cell of a JSON-stat dataset (versions 1.x with a
// dataset wrapper, and 2.0 with class "dataset"). A JSON-stat document is one JSON value whose
// dimension metadata may follow the values, so it is read whole; Eurostat serves one dataset per
// request, which keeps files of this format small. Cells are walked in row-major order over the
// dimensions as listed in `id`, the order JSON-stat defines.
import { readFile } from 'node:fs/promises';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject } from './lines.ts';

export interface JsonStatRecord {
  file: string;
  where: string; // <dataset>/value[<index>]
  dataset: string;
  key: string[]; // category codes, one per dimension, in dimension order
  record: Record<string, string>;
}

interface Dim {
  id: string;
  codes: string[]; // by position
  labels: Record<string, string>;
}

function dimension(id: string, d: unknown, size: number): Dim | string {
  if (!isObject(d) || !isObject(d.category)) return `dimension ${id} has no category`;
  const { index, label } = d.category as { index?: unknown; label?: unknown };
  const codes: string[] = new Array(size);
  if (Array.isArray(index)) index.forEach((c, i) => (codes[i] = String(c)));
  else if (isObject(index)) for (const [c, i] of Object.entries(index)) codes[Number(i)] = c;
  else if (isObject(label) && size === 1) codes[0] = Object.keys(label)[0];
  else return `dimension ${id} has no category index`;
  if (codes.length !== size || Array.from(codes).some((c) => c === undefined)) return `dimension ${id}: category index does not cover size ${size}`;
  return { id, codes, labels: isObject(label) ? (label as Record<string, string>) : {} };
}

function cell(store: unknown, i: number): unknown {
  if (Array.isArray(store)) return store[i];
  if (isObject(store)) return store[String(i)];
  return store; // a single status string applies to every cell
}

export async function* readJsonStat(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<JsonStatRecord> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    onBad(new IngestError(displayName, '/', `invalid JSON-stat: ${(err as Error).message}`));
    return;
  }
  const datasets: [string, unknown][] = isObject(doc) && doc.class === 'dataset'
    ? [[String(doc.label ?? 'dataset'), doc]]
    : isObject(doc) ? Object.entries(doc).filter(([k]) => k !== 'version' && k !== 'class') : [];
  if (datasets.length === 0) onBad(new IngestError(displayName, '/', 'no JSON-stat dataset found'));
  for (const [name, ds] of datasets) {
    if (!isObject(ds)) { onBad(new IngestError(displayName, `/${name}`, 'dataset is not an object')); continue; }
    // v2 keeps id/size at the top level, v1 inside "dimension"
    const dimObj = isObject(ds.dimension) ? ds.dimension : {};
    const ids = (ds.id ?? dimObj.id) as unknown;
    const sizes = (ds.size ?? dimObj.size) as unknown;
    if (!Array.isArray(ids) || !Array.isArray(sizes) || ids.length !== sizes.length) {
      onBad(new IngestError(displayName, `/${name}/dimension`, 'id and size must be arrays of the same length'));
      continue;
    }
    const dims: Dim[] = [];
    let bad = '';
    ids.forEach((id, k) => {
      const d = dimension(String(id), dimObj[String(id)], Number(sizes[k]));
      if (typeof d === 'string') bad ||= d;
      else dims.push(d);
    });
    if (bad) { onBad(new IngestError(displayName, `/${name}/dimension`, bad)); continue; }
    const total = dims.reduce((n, d) => n * d.codes.length, 1);
    const pos = new Array<number>(dims.length).fill(0);
    for (let i = 0; i < total; i++) {
      const v = cell(ds.value, i);
      if (v !== null && v !== undefined) {
        if (typeof v !== 'number' && typeof v !== 'string') {
          onBad(new IngestError(displayName, `/${name}/value[${i}]`, `cell value must be a number or string, got ${JSON.stringify(v)}`));
        } else {
          const record: Record<string, string> = {};
          const key: string[] = [];
          dims.forEach((d, k) => {
            const code = d.codes[pos[k]];
            key.push(code);
            record[d.id] = code;
            record[`${d.id}_label`] = d.labels[code] ?? code;
          });
          record.value = String(v);
          const status = cell(isObject(ds.status) && !Array.isArray(ds.status) && 'value' in ds.status ? ds.status.value : ds.status, i);
          record.flag = typeof status === 'string' ? status : '';
          yield { file: displayName, where: `/${name}/value[${i}]`, dataset: name, key, record };
        }
      }
      for (let k = dims.length - 1; k >= 0; k--) {
        if (++pos[k] < dims[k].codes.length) break;
        pos[k] = 0;
      }
    }
  }
}
