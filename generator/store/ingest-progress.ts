// What a long ingest says on the terminal (issue 49: a first `npm start` builds 1.37 M paragraphs):
// the phase (source and file), units stored, the rate, and the time left, estimated from the bytes
// of the data files read so far against all the data files the build will read. At most one line
// every `everyMs`, so a short build prints nothing extra.

export interface IngestProgress {
  /** A data file starts: its name and size in bytes. */
  file(phase: string, bytes: number): void;
  /** Bytes of the current file read so far (adapters that stream one big file report it). */
  readAt(bytes: number): void;
  /** A unit was stored. */
  unit(): void;
}

export function ingestProgress(totalBytes: number, say: (line: string) => void, everyMs = 2000, now = () => performance.now()): IngestProgress {
  const started = now();
  let last = started;
  let done = 0; // bytes of the files finished
  let current = 0; // size of the current file
  let at = 0; // bytes of the current file read
  let units = 0;
  let phase = '';
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  return {
    file(p, bytes) {
      done += current;
      current = bytes;
      at = 0;
      phase = p;
    },
    readAt(bytes) {
      at = Math.min(bytes, current);
    },
    unit() {
      units++;
      if ((units & 1023) !== 0) return;
      const t = now();
      if (t - last < everyMs) return;
      last = t;
      const s = (t - started) / 1000;
      const f = totalBytes > 0 ? Math.min(1, (done + at) / totalBytes) : 0;
      const left = f > 0.01 ? `, about ${fmt((s * (1 - f)) / f)} s of ingest left` : '';
      say(`ingest: ${phase}: ${fmt(units)} units, ${fmt(units / s)} units/s, ${Math.round(f * 100)} % of the data read${left}`);
    },
  };
}
