// EuroVoc routing: which products an act goes to. An act matches a product's rule when one of
// its descriptors is named by the rule, or sits in one of the rule's microthesauri or domains
// (looked up in the EuroVoc descriptor table). An act may match several products, or none.
import type { DescriptorPlacement } from '../ingest/eurovoc.ts';
import type { EuroVocRule } from '../model.ts';

export interface RoutingRule {
  productId: string;
  descriptors: Set<string>;
  microthesauri: Set<string>;
  domains: Set<string>;
}

export function compileRule(productId: string, r: EuroVocRule): RoutingRule {
  return { productId, descriptors: new Set(r.descriptors), microthesauri: new Set(r.microthesauri), domains: new Set(r.domains) };
}

export interface RouteResult {
  products: string[]; // sorted
  unresolved: string[]; // descriptor ids not in the EuroVoc table (matched only by id)
}

export function routeAct(descriptors: string[], rules: RoutingRule[], table: Map<string, DescriptorPlacement>): RouteResult {
  const products: string[] = [];
  const unresolved = descriptors.filter((d) => !table.has(d));
  for (const rule of rules) {
    const hit = descriptors.some((d) => {
      if (rule.descriptors.has(d)) return true;
      const place = table.get(d);
      return !!place && (place.microthesauri.some((m) => rule.microthesauri.has(m)) || place.domains.some((dm) => rule.domains.has(dm)));
    });
    if (hit) products.push(rule.productId);
  }
  return { products: products.sort(), unresolved };
}
