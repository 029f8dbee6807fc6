// What one published build is to the service (releases.ts keeps the set; live-service.ts routes
// calls to the right one): its own module below both.
import type { CatalogueDoc } from '../../contract/catalogue.ts';
import type { UnitStoreReader } from '../../contract/store-format.ts';
import type { StoreDrawService } from '../draw/store-service.ts';
import type { RequestValidator } from '../http/openapi-validate.ts';
import type { StaticSite } from '../http/static.ts';

/** One published build as the service serves it. */
export interface Release {
  readonly catalogue: CatalogueDoc;
  readonly site: StaticSite;
  readonly validator: RequestValidator;
  readonly store: UnitStoreReader;
  readonly service: StoreDrawService;
  readonly storeVersion: string;
  /** What it was loaded from: CURRENT's version and dist/'s identity (a build swaps dist/ in by rename). */
  key: string;
  /** Calls into its service not yet answered: a retired release closes only when none is left. */
  inFlight: number;
}
