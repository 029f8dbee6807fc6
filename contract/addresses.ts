// Where a local build puts the service's own addresses: both halves need the layout. The generator
// writes it into every document of a `--local` build (generator/addresses.ts); the service reads
// it back to tell a buyer-facing origin it may serve from one it must refuse (a live switch to a
// build made for another origin, payments/release/own-addresses.ts), and to name the command that
// builds for its own.

/** The service's addresses on a local `origin` (publisher_url is not the service's: a build keeps its own). */
export function localServiceAddresses(origin: string): { base_url: string; mcp_url: string; docs_url: string } {
  const o = origin.replace(/\/$/, '');
  return { base_url: `${o}/v1`, mcp_url: `${o}/mcp`, docs_url: `${o}/docs/` };
}
