// Whatever a service answers may echo what the client sent it: a problem `detail` or a proxy's error
// page that quotes the request's Authorization header, a longer hash of the token than the documented
// hint (`bal#` + 8 hex of its SHA-256). Every string that comes from the service passes through
// `redactToken` before it reaches a result, an error message, a progress line or the journal, so
// the balance token never leaves the client in any form it was echoed in.
//
// What is removed, for each token the client has held (a rotated one included):
//   - any run of 8 or more characters of the token's secret part (the token itself, `Bearer <token>`,
//     a token cut short or split by a proxy): the documented hint holds none of it;
//   - any run of 9 or more hex digits of the token's SHA-256 (in either case): longer than the hint.
// Pure and linear in the text: a set of the secret's 8-character windows, one pass.
import { createHash } from 'node:crypto';

export const REDACTED = '[redacted]';
const WINDOW = 8;

/** A base64url character's 6-bit value, -1 for any other character. */
const B64 = new Int8Array(128).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('').forEach((c, i) => (B64[c.charCodeAt(0)] = i));
const sixBits = (code: number) => (code < 128 ? B64[code]! : -1);

interface Secret {
  /** every WINDOW-long piece of the secret, for the first hit */
  windows: Set<string>;
  /** the 24-bit codes of the secret's 4-character pieces: a cheap first filter, no string made per position */
  quads: Set<number>;
  text: string;
  /** the token's SHA-256 in hex (lower case) */
  hex: string;
}

/** The pieces of `token` to look for. */
function secretOf(token: string): Secret {
  const text = token.replace(/^lds_bal_/, '');
  const windows = new Set<string>();
  for (let i = 0; i + WINDOW <= text.length; i++) windows.add(text.slice(i, i + WINDOW));
  const quads = new Set<number>();
  for (let i = 0; i + 4 <= text.length; i++) quads.add(quad(text, i));
  return { windows, quads, text, hex: createHash('sha256').update(token, 'utf8').digest('hex') };
}

/** The 24-bit code of the 4 base64url characters of `s` at `i` (-1 when one is not base64url). */
function quad(s: string, i: number): number {
  let code = 0;
  for (let k = 0; k < 4; k++) {
    const v = sixBits(s.charCodeAt(i + k));
    if (v < 0) return -1;
    code = (code << 6) | v;
  }
  return code;
}

/** Removes the runs of `text` that are pieces of the secret (at least WINDOW long, each extended as far as it goes). */
function cutSecret(s: string, secret: Secret): string {
  if (s.length < WINDOW) return s;
  let out = '';
  let from = 0;
  // A rolling code of the last 4 base64url characters: only where it is a piece of the secret is a
  // string made and looked up (one pass, no allocation per character).
  let code = 0;
  let run = 0;
  for (let j = 0; j < s.length; j++) {
    const v = sixBits(s.charCodeAt(j));
    if (v < 0) {
      run = 0;
      continue;
    }
    code = ((code << 6) | v) & 0xffffff;
    if (++run < 4 || !secret.quads.has(code)) continue;
    const i = j - 3;
    if (i + WINDOW > s.length) break;
    const piece = s.slice(i, i + WINDOW);
    if (!secret.windows.has(piece)) continue;
    // The longest run from i that is a piece of the secret.
    let end = i + WINDOW;
    for (let at = secret.text.indexOf(piece); at !== -1; at = secret.text.indexOf(piece, at + 1)) {
      let k = WINDOW;
      while (i + k < s.length && at + k < secret.text.length && s[i + k] === secret.text[at + k]) k++;
      end = Math.max(end, i + k);
    }
    let start = i;
    if (s.slice(Math.max(0, i - 8), i) === 'lds_bal_') start = i - 8;
    out += s.slice(Math.max(from, 0), Math.max(start, from)) + REDACTED;
    from = end;
    j = end - 1;
    run = 0;
  }
  return out + s.slice(from);
}

/** Removes hex runs of 9 or more digits that occur in the token's SHA-256. */
function cutHash(s: string, secret: Secret): string {
  return s.replace(/[0-9a-fA-F]{9,}/g, (run) => {
    const lower = run.toLowerCase();
    // a run that holds 9 or more consecutive digits of the hash
    for (let i = 0; i + 9 <= lower.length; i++) if (secret.hex.includes(lower.slice(i, i + 9))) return REDACTED;
    return run;
  });
}

/** A function that takes every form of the given tokens out of a string. */
export function tokenRedactor(tokens: readonly string[]): (s: string) => string {
  const secrets = tokens.map(secretOf);
  return (s) => {
    let out = s;
    for (const secret of secrets) out = cutHash(cutSecret(out, secret), secret);
    return out;
  };
}

/** A JSON value with every string (keys included) passed through `redact`; the same value when nothing changed. */
export function redactDeep<T>(value: T, redact: (s: string) => string): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v) => {
      const r = redactDeep(v, redact);
      if (r !== v) changed = true;
      return r;
    });
    return (changed ? out : value) as T;
  }
  if (value && typeof value === 'object') {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const rk = redact(k);
      const rv = redactDeep(v, redact);
      if (rk !== k || rv !== v) changed = true;
      out[rk] = rv;
    }
    return (changed ? out : value) as T;
  }
  return value;
}
