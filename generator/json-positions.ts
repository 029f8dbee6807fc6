// Where each value of a JSON document sits in its text, by JSON pointer, so that a finding about
// `products/x.json#/sources/1/source` can name the line and column a publisher (or a GitHub
// annotation) should look at. JSON.parse keeps no positions and no package here does, hence this
// small scanner: it only records where values start and end; JSON.parse still builds the values.
import { pointer } from './errors.ts';

export interface Span {
  /** 1-based line and column (in UTF-16 code units, as editors and GitHub count them) of the value's first character. */
  line: number;
  col: number;
  /** Offsets of the value in the text: text.slice(start, end) is its JSON source. */
  start: number;
  end: number;
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Line and column (1-based) of an offset in `text`. */
export function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, col: offset - lineStart + 1 };
}

/**
 * Every value's span, by JSON pointer ('' is the whole document). Throws JsonSyntaxError with
 * the offset of the first character that is not JSON.
 */
export function jsonSpans(text: string): Map<string, Span> {
  const spans = new Map<string, Span>();
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(i >= text.length ? `unexpected end of the file, expected ${what}` : `unexpected ${JSON.stringify(text[i])}, expected ${what}`, i);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const string = (): string => {
    const start = i;
    i++; // the opening quote
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\\') i++;
      else if (text.charCodeAt(i) < 0x20) fail('a character escaped in a string');
      i++;
    }
    if (i >= text.length) fail('the end of a string (")');
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (at: string): void => {
    ws();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') i++;
      else
        for (;;) {
          ws();
          if (text[i] !== '"') fail('a property name in double quotes');
          const key = string();
          ws();
          if (text[i] !== ':') fail('":"');
          i++;
          value(at + pointer(key));
          ws();
          if (text[i] === ',') i++;
          else if (text[i] === '}') {
            i++;
            break;
          } else fail('"," or "}"');
        }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') i++;
      else
        for (let n = 0; ; n++) {
          value(at + pointer(n));
          ws();
          if (text[i] === ',') i++;
          else if (text[i] === ']') {
            i++;
            break;
          } else fail('"," or "]"');
        }
    } else if (c === '"') string();
    else {
      const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
      if (!m) fail('a value');
      i += m![0].length;
    }
    spans.set(at, { ...lineCol(text, start), start, end: i });
  };
  value('');
  ws();
  if (i < text.length) fail('the end of the file');
  return spans;
}

/** The span of the value at `ptr`, or of its nearest ancestor that exists (a missing property points at its object). */
export function spanAt(spans: Map<string, Span>, ptr: string): Span | undefined {
  for (let p = ptr; ; p = p.slice(0, p.lastIndexOf('/'))) {
    const s = spans.get(p);
    if (s || p === '') return s;
  }
}
