// Issue 2: the catalogue snapshot matches spec 2.7 exactly and carries every field of spec 2.2-2.5.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { catalogSrcBuild } from './helpers/publish.ts';
import { SPEC_2_7 } from './helpers/spec-table.ts';

let catalogue: any;

test.before(async () => {
  // `lds build --local --no-store` of catalog-src at a fixed clock, made once per machine (helpers/publish.ts).
  const { out } = await catalogSrcBuild({ noStore: true });
  catalogue = JSON.parse(await readFile(join(out, 'v1/lds/_catalog'), 'utf8'));
});

test('catalogue header: spec 2.1', () => {
  for (const k of ['@context', '@type', 'dct:license', 'dct:publisher', 'dct:title']) assert.type(catalogue[k], 'string', k);
  assert.is(catalogue['dct:license'], 'http://publications.europa.eu/resource/authority/licence/CC_BY_4_0');
  assert.is(catalogue.total, 14);
  assert.is(catalogue.products.length, 14);
  assert.match(catalogue.version, /^catalogue-[0-9a-f]{12}$/);
});

test('the 14 products match spec 2.7 exactly: ids, titles, tags, sources with unit kind and CC/held', () => {
  const byId = new Map(catalogue.products.map((p: any) => [p.product_id, p]));
  assert.equal([...byId.keys()].sort(), SPEC_2_7.map((s) => s.id).sort());
  for (const spec of SPEC_2_7) {
    const p: any = byId.get(spec.id);
    assert.is(p.title, spec.title, spec.id);
    assert.is(p.tag, spec.tag, spec.id);
    assert.equal(p.licence_basis.map((l: any) => l.source), spec.sources.map((s) => s[0]), `${spec.id} sources`);
    for (const [source, unit, status] of spec.sources) {
      const def = p.unit_definition.find((u: any) => u.source === source);
      assert.is(def?.unit ?? null, unit, `${spec.id} ${source} unit kind`);
      const basis = p.licence_basis.find((l: any) => l.source === source);
      if (status === 'held') {
        assert.is(basis.verdict, 'held', `${spec.id} ${source} held`);
      } else {
        assert.is(basis.verdict, 'cc-by-4.0', `${spec.id} ${source} CC`);
        const summary = p.licence_summary.find((l: any) => l.source === source);
        assert.equal(summary.licences, ['CC-BY-4.0']);
      }
    }
  }
});

const STRING_FIELDS = ['product_id', 'slug', 'title', 'description', 'sectoral_ds', 'marker', 'asset_uri', 'dcat_url', 'mcp_endpoint', 'launch_state', 'envelope_state', 'licence_state', 'rulebook_ref', 'terminal_condition', 'row_count_basis', 'row_count_computed_at', 'unit_count_basis', 'subscribe_status'];
const INT_FIELDS = ['live_row_count', 'live_unit_count', 'row_count_at_launch'];
const isStrOrNull = (v: unknown) => v === null || typeof v === 'string';

test('every product carries every field of spec 2.2 with its type (and 2.3-2.5 inside)', () => {
  for (const p of catalogue.products) {
    for (const k of STRING_FIELDS) assert.type(p[k], 'string', `${p.product_id}.${k}`);
    for (const k of INT_FIELDS) assert.ok(Number.isInteger(p[k]) && p[k] >= 0, `${p.product_id}.${k}`);
    assert.ok(p.live_row_count >= p.live_unit_count, 'rows >= units');
    assert.is(p.subscribe_url, null);
    assert.match(p.subscribe_status, /^pending/);
    assert.ok(Array.isArray(p.unit_definition));
    for (const u of p.unit_definition) { assert.type(u.source, 'string'); assert.type(u.unit, 'string'); }
    for (const l of p.licence_basis) {
      assert.type(l.source, 'string'); assert.type(l.verdict, 'string');
      for (const k of ['basis', 'attribution', 'conditions', 'quote_sha256', 'ruled_at', 'terms_url']) assert.ok(k in l && isStrOrNull(l[k]), `${p.product_id} licence_basis ${l.source}.${k}`);
    }
    for (const l of p.licence_summary) {
      assert.type(l.source, 'string'); assert.type(l.from, 'string'); assert.ok(Array.isArray(l.licences)); assert.ok(isStrOrNull(l.display));
    }
    const h = p._health;
    for (const k of ['cache_ttl_seconds', 'row_count', 'row_count_at_launch', 'sources_required_count', 'sources_optional_count']) assert.ok(Number.isInteger(h[k]), `_health.${k}`);
    for (const k of ['checked_at', 'rollup', 'rollup_reason']) assert.type(h[k], 'string', `_health.${k}`);
    assert.ok(!Number.isNaN(Date.parse(h.checked_at)));
    assert.ok(['healthy', 'degraded', 'unavailable'].includes(h.rollup));
    assert.is(h.sources_required_count + h.sources_optional_count, p.licence_basis.length);
    assert.ok(['draft', 'preview', 'launched', 'retired'].includes(p.launch_state));
    assert.ok(['open', 'sealed'].includes(p.envelope_state));
    assert.ok(['cleared', 'partial', 'pending'].includes(p.licence_state));
    assert.is(p.dcat_url, `${catalogue.base_url}/dcat/catalog/${p.product_id}`);
    assert.is(p.mcp_endpoint, catalogue.mcp_url);
  }
});

test('prices are integer-derived decimal strings in EUR', () => {
  for (const p of catalogue.products) {
    const pr = p.pricing;
    assert.is(pr.currency, 'EUR');
    assert.ok(Number.isInteger(pr.bulk_annual_price_cents));
    assert.is(pr.unit_count, p.live_unit_count);
    assert.match(pr.bulk_annual_price, /^\d+\.\d{2}$/);
    assert.match(pr.draw_unit_price, /^\d+\.\d{6}$/);
    // bulk annual = units x rate, rounded half up to the cent (rates in micro-euros)
    assert.is(pr.bulk_annual_price_cents, Math.floor((p.live_unit_count * pr.bulk_unit_rate_micro_eur + 5000) / 10000));
  }
});

test('without a store, counts are honestly zero and _health says why', () => {
  for (const p of catalogue.products) {
    assert.is(p.live_row_count, 0);
    assert.ok(p._health.rollup !== 'healthy');
    assert.match(p._health.rollup_reason, /unit store has not been built/);
  }
});

test.run();
