// A running service's own addresses, and a new build that names others. The catalogue a service
// serves fixes where its buyers are sent: base_url (the API, the top-up link of every 402, the
// agent card's A2A url) and mcp_url (where MCP is mounted). A build made for another origin -
// `npm run build` (for http://127.0.0.1:8080) while `npm start` serves on another port, or a
// production build with other addresses - would send this service's buyers there once switched
// to. So the release set refuses it (releases.ts), saying which addresses differ and the command
// that builds for this service; moving a service to new addresses is a restart.
//
// Why refuse rather than have a local build follow the running service's origin: a build is a
// function of its inputs (the same inputs give the same bytes, generator/build.ts), and only the
// service knows the address it serves; several services, or none, may read one dist/.
import { localServiceAddresses } from '../../contract/addresses.ts';
import type { CatalogueDoc } from '../../contract/catalogue.ts';
import { dataPaths } from '../config.ts';

type Addresses = Pick<CatalogueDoc, 'base_url' | 'mcp_url' | 'docs_url'>;

/** The folders a build writes into for this service: named in the command when they are not the build's defaults. */
export interface ServedFolders {
  distDir: string;
  storeRoot: string;
}

/**
 * Why a service serving `served` must not switch to `next`, in words with the command that builds
 * for this service; null when `next` names the same base_url and mcp_url.
 */
export function otherAddresses(served: Addresses, next: Addresses, folders: ServedFolders): string | null {
  const moved = (['base_url', 'mcp_url'] as const).filter((k) => served[k] !== next[k]);
  if (moved.length === 0) return null;
  const origin = new URL(served.base_url).origin;
  const nextOrigin = new URL(next.base_url).origin;
  const what =
    origin !== nextOrigin
      ? `it is addressed for ${nextOrigin} (base_url ${next.base_url}) but this service serves ${origin} (base_url ${served.base_url}): switching would send this service's buyers to ${nextOrigin}`
      : `its ${moved.map((k) => `${k} ${next[k]}`).join(' and ')} differ${moved.length === 1 ? 's' : ''} from this service's (${moved.map((k) => served[k]).join(', ')})`;
  return `${what}. Build for this service with: ${buildCommand(served, folders)}; or restart the service to serve the new addresses`;
}

/** `npx lds build` for the served addresses into the served folders (flags only where they are not the defaults). */
function buildCommand(served: Addresses, folders: ServedFolders): string {
  const origin = new URL(served.base_url).origin;
  const local = localServiceAddresses(origin);
  const isLocal = local.base_url === served.base_url && local.mcp_url === served.mcp_url && local.docs_url === served.docs_url;
  const flags = isLocal ? [`--local ${origin}`] : [`--base-url ${served.base_url}`, `--mcp-url ${served.mcp_url}`, `--docs-url ${served.docs_url}`];
  const defaults = dataPaths({});
  if (folders.distDir !== defaults.distDir) flags.push(`--out ${folders.distDir}`);
  if (folders.storeRoot !== defaults.storeRoot) flags.push(`--store-root ${folders.storeRoot}`);
  return `npx lds build ${flags.join(' ')}`;
}
