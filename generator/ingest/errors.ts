// Malformed input is reported with where it is (file and line, or file and XML path) so a
// publisher can open the file at that spot. Adapters never decide whether a bad record aborts the
// build: they hand it to the caller's BadRecordHandler, which either throws (the default) or
// counts and skips (--skip-bad-records).

export class IngestError extends Error {
  constructor(
    readonly file: string,
    readonly where: string, // "12" (line), "12:7" (line:column) or an XML path
    readonly reason: string,
  ) {
    super(`${file}:${where}: ${reason}`);
    this.name = 'IngestError';
  }
}

export type BadRecordHandler = (err: IngestError) => void;

/** The default: the first bad record fails the build. */
export const failOnBadRecord: BadRecordHandler = (err) => {
  throw err;
};

/** Counts bad records (and keeps the first few for the report) instead of failing. */
export class BadRecordCounter {
  count = 0;
  readonly samples: string[] = [];
  readonly handler: BadRecordHandler = (err) => {
    this.count++;
    if (this.samples.length < 20) this.samples.push(err.message);
  };
}
