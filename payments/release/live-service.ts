// The draw service the transports (HTTP, MCP, A2A) call while builds are published under a running
// service (payments/release/releases.ts): each call goes to the release serving at that moment and
// is counted on it, so a previous release is never closed under a call.
import type { CatalogueDoc } from '../../contract/catalogue.ts';
import type { DrawRequest, PaidDraw, Quote, StatementPage } from '../draw/service.ts';
import type { Release } from './release.ts';

/** What the live service needs of the release set. */
export interface ServingReleases {
  serving(): Release;
  within<T>(r: Release, f: () => Promise<T>): Promise<T>;
}

/**
 * The draw service the transports (HTTP, MCP, A2A) call: quotes and balances from the serving
 * release; a pay goes to the serving release, which hands a quote of a previous store version to
 * the release that made it (StoreDrawService.pay).
 */
export class LiveDrawService {
  constructor(private readonly set: ServingReleases) {}

  private get r(): Release {
    return this.set.serving();
  }

  get drawUrl(): string {
    return this.r.service.drawUrl;
  }

  get topupUrl(): string {
    return this.r.service.topupUrl;
  }

  catalogue(): CatalogueDoc {
    return this.r.service.catalogue();
  }

  quote(req: DrawRequest, balanceToken?: string): Promise<Quote> {
    const r = this.r;
    return this.set.within(r, () => r.service.quote(req, balanceToken));
  }

  pay(req: DrawRequest & { quote_id: string }, balanceToken: string): Promise<PaidDraw> {
    const r = this.r;
    return this.set.within(r, () => r.service.pay(req, balanceToken));
  }

  balance(balanceToken: string, page?: StatementPage) {
    return this.r.service.balance(balanceToken, page);
  }

  rotateToken(balanceToken: string) {
    return this.r.service.rotateToken(balanceToken);
  }

  balanceIdOf(balanceToken: string): Promise<string> {
    return this.r.service.balanceIdOf(balanceToken);
  }

  balanceCents(balanceToken: string | undefined): Promise<number | null> {
    return this.r.service.balanceCents(balanceToken);
  }
}
