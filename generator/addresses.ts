// The four public addresses. catalog-src/catalogue.json holds the production values; a build may
// override any of them (flags or env) so a local build points at http://127.0.0.1:8080.
import { localServiceAddresses } from '../contract/addresses.ts';
import type { Addresses } from './model.ts';

export const ADDRESS_ENV: Record<keyof Addresses, string> = {
  base_url: 'LDS_BASE_URL',
  mcp_url: 'LDS_MCP_URL',
  docs_url: 'LDS_DOCS_URL',
  publisher_url: 'LDS_PUBLISHER_URL',
};

export { localServiceAddresses };

/** A complete local address set (tests, benchmarks): the service on `origin`, the given publisher. */
export function localAddresses(origin: string, publisherUrl: string): Addresses {
  return { ...localServiceAddresses(origin), publisher_url: publisherUrl };
}

/** Precedence: explicit override > environment > catalog-src. Validates the result. */
export function resolveAddresses(fromSrc: Addresses, overrides: Partial<Addresses>, env: NodeJS.ProcessEnv = process.env): Addresses {
  const out = { ...fromSrc };
  for (const key of Object.keys(ADDRESS_ENV) as (keyof Addresses)[]) {
    const value = overrides[key] ?? env[ADDRESS_ENV[key]];
    if (value) out[key] = value;
  }
  for (const [key, value] of Object.entries(out)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error(`${key} is not an absolute URL: ${value}`);
    }
    if (!['http:', 'https:'].includes(url.protocol)) throw new Error(`${key} must be http(s): ${value}`);
  }
  if (!/\/v1$/.test(out.base_url)) throw new Error(`base_url must end in /v1: ${out.base_url}`);
  return out;
}

/** Where the A2A JSON-RPC endpoint lives (named by the agent card's `url`). */
export function a2aUrl(a: Addresses): string {
  return `${a.base_url}/a2a`;
}

export function origin(url: string): string {
  return new URL(url).origin;
}
