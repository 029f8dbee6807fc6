// The catalogue version: `catalogue-` + the first 12 hex digits of SHA-256 over the RFC 8785
// canonical JSON of the catalogue content. Any content change changes it; it is the strong ETag
// of every published document.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

export function canonicalJson(value: unknown): string {
  const text = (canonicalize as unknown as (v: unknown) => string | undefined)(value);
  if (text === undefined) throw new TypeError('value cannot be canonicalised');
  return text;
}

export function sha256Hex(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

export function contentVersion(prefix: string, content: unknown): string {
  return `${prefix}-${sha256Hex(canonicalJson(content)).slice(0, 12)}`;
}
