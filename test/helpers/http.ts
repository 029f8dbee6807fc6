// Small HTTP helpers every server test uses.
// The port helpers are the ones the web servers of `lds preview` start with.
export { canConnect, freePort } from '../../generator/ports.ts';

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
