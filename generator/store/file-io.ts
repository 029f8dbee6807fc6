// Buffered sequential files for the store build: what it writes front to back (postings.dat,
// refs.dat, the scratch runs) and the scratch runs it reads back, through one fixed buffer each,
// with plain read(2) and write(2). No fsync here: the build syncs the finished store as a whole
// (durable.ts fsyncTree), and scratch files are removed.
import { open, type FileHandle } from 'node:fs/promises';

const BUFFER = 1 << 20;

/**
 * Writes bytes[from, to) at `position` (null: the file's current position), however many calls
 * write(2) takes: a short write (a full disk, a signal) must never leave a file shorter than its
 * directory says.
 */
export async function writeFully(fh: FileHandle, bytes: Uint8Array, from = 0, to = bytes.byteLength, position: number | null = null): Promise<void> {
  for (let done = from; done < to; ) {
    const { bytesWritten } = await fh.write(bytes, done, to - done, position === null ? null : position + done - from);
    if (bytesWritten <= 0) throw new Error(`write stopped after ${done - from} of ${to - from} bytes`);
    done += bytesWritten;
  }
}

/** Reads exactly `length` bytes at `position` into `out`; fails when the file ends first. */
export async function readFully(fh: FileHandle, out: Buffer, length: number, position: number): Promise<void> {
  for (let done = 0; done < length; ) {
    const { bytesRead } = await fh.read(out, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`file ends ${length - done} bytes before the record at ${position} does`);
    done += bytesRead;
  }
}

export class FileWriter {
  readonly buf: Buffer;
  /** Bytes in `buf` not yet written. */
  used = 0;
  private written = 0;

  private constructor(private readonly fh: FileHandle, size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** A new file (it must not exist). */
  static async create(path: string, size = BUFFER): Promise<FileWriter> {
    return new FileWriter(await open(path, 'wx'), size);
  }

  /** Where the next byte goes in the file. */
  get position(): number {
    return this.written + this.used;
  }

  /** Room for n more bytes in `buf` (false when n is more than the buffer holds: write() them). */
  async reserve(n: number): Promise<boolean> {
    if (this.used + n > this.buf.length) await this.flush();
    return n <= this.buf.length;
  }

  /** Appends bytes, through the buffer when they fit in it. */
  async write(bytes: Uint8Array): Promise<void> {
    if (await this.reserve(bytes.byteLength)) {
      this.buf.set(bytes, this.used);
      this.used += bytes.byteLength;
    } else {
      await writeFully(this.fh, bytes);
      this.written += bytes.byteLength;
    }
  }

  private async flush(): Promise<void> {
    if (this.used) await writeFully(this.fh, this.buf, 0, this.used);
    this.written += this.used;
    this.used = 0;
  }

  /** Writes what is buffered and closes the file. */
  async close(): Promise<void> {
    await this.flush();
    await this.fh.close();
  }
}

export class FileReader {
  readonly buf = Buffer.allocUnsafe(BUFFER);
  /** The unread bytes are buf[pos .. len). */
  pos = 0;
  len = 0;
  private eof = false;

  constructor(private readonly fh: FileHandle) {}

  static async open(path: string): Promise<FileReader> {
    return new FileReader(await open(path, 'r'));
  }

  /** Makes at least `want` bytes (at most the buffer's size) readable from `pos`, unless the file ends first; returns how many are. */
  async fill(want: number): Promise<number> {
    if (this.len - this.pos >= want || this.eof) return this.len - this.pos;
    this.buf.copy(this.buf, 0, this.pos, this.len);
    this.len -= this.pos;
    this.pos = 0;
    while (this.len < want && !this.eof) {
      const { bytesRead } = await this.fh.read(this.buf, this.len, this.buf.length - this.len, null);
      if (bytesRead === 0) this.eof = true;
      this.len += bytesRead;
    }
    return this.len;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}
