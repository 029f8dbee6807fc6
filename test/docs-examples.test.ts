// Issue 14 item 10: every draw example the build publishes returns what it says. The docs' curl
// examples and the product pages' examples are run with sh as printed; the llms.txt example body,
// the agent card's skill examples and the docs' table of example queries are sent as they are; the
// published count of each is compared with the real service's quote. The free previews are served.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { postJson } from './helpers/http.ts';
import { startAgentService, type AgentService } from './helpers/agents.ts';

let svc: AgentService;
let docs: string;

test.before(async () => {
  svc = await startAgentService(); // built for its own port: the published examples name this server
  docs = await readFile(join(svc.dist, 'docs/index.md'), 'utf8');
});
test.after(async () => {
  await svc?.close();
});

function sh(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`sh exited ${code}: ${err}`))));
  });
}

/** The JSON body of `curl -i` output (headers, blank line, body). */
const bodyOf = (out: string) => JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4));

/** What the documents claim: `"<query>" matches N units of `<product>`; with `"limit": L` the quote is for Q units.` */
function claims(text: string): Map<string, { matches: number; limit: number; quoted: number }> {
  const out = new Map<string, { matches: number; limit: number; quoted: number }>();
  for (const m of text.matchAll(/"([^"]+)" matches ([\d,]+) units? of `?(svc-[a-z-]+)`?; with `?"limit": (\d+)`? the quote is for (\d+) units?/g))
    out.set(`${m[3]} ${m[1]}`, { matches: Number(m[2].replace(/,/g, '')), limit: Number(m[4]), quoted: Number(m[5]) });
  return out;
}

/** Runs a printed quote example and checks it against the claim made for its product and query. */
async function check(where: string, script: string, claimed: Map<string, { quoted: number }>) {
  const sent = JSON.parse(/-d '(\{[^']+\})'/.exec(script)![1]);
  const claim = claimed.get(`${sent.product_id} ${sent.query}`);
  assert.ok(claim, `${where}: the example ${JSON.stringify(sent)} says what it returns`);
  const quote = bodyOf(await sh(script));
  assert.is(quote.unit_count, claim!.quoted, `${where}: ${JSON.stringify(sent)}`);
  assert.is(quote.resolved_units.length, claim!.quoted);
  assert.ok(quote.unit_count >= 1);
}

test('the docs: each quote example, run as printed, returns the number of units the docs state', async () => {
  const claimed = claims(docs);
  assert.ok(claimed.size >= 1, 'the docs state what their examples return');
  const scripts = [...docs.matchAll(/```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]).filter((s) => s.includes('/lds/draw') && s.includes('"query"') && !s.includes('<'));
  assert.ok(scripts.length >= 2, `quote examples found: ${scripts.length}`);
  for (const s of scripts) await check('docs', s, claimed);
  // the main example fills its limit: a buyer copying it gets a full quote
  const main = [...claimed.values()][0];
  assert.is(main.quoted, main.limit);
});

test('the docs: every example query of the table quotes what the table says', async () => {
  const rows = [...docs.matchAll(/^\| `(svc-[a-z-]+)` \| (\S+) \| `([^`]+)` \| ([\d,]+) \| (\d+ units|no quote) \|$/gm)];
  assert.is(rows.length, svc.catalogue.products.length);
  for (const [, product_id, preview, query, matches, quote] of rows) {
    const res = await postJson(`${svc.base}/lds/draw`, { product_id, query, limit: 5 });
    const body = (await res.json()) as any;
    if (quote === 'no quote') assert.is(res.status, 404, `${product_id} "${query}"`);
    else assert.is(body.unit_count, Number(quote.split(' ')[0]), `${product_id} "${query}"`);
    const p = (await (await fetch(preview)).json()) as any;
    assert.is(p.example_query.matches, Number(matches.replace(/,/g, '')), `${product_id}: preview and docs agree`);
    assert.is(p.product_id, product_id);
  }
});

test('the product pages: each example, run as printed, returns what the page says', async () => {
  const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  let ran = 0;
  for (const p of svc.catalogue.products) {
    const page = await readFile(join(svc.dist, `products/${p.product_id}.html`), 'utf8');
    const script = unescape(/<section aria-labelledby="h-buy">[\s\S]*?<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(page)![1]);
    const claim = unescape(/<p id="example-claim">([\s\S]*?)<\/p>/.exec(page)![1]);
    if (p.example_query.matches === 0) {
      assert.match(claim, /matches no unit/);
      const out = await sh(script);
      assert.match(out, /^HTTP\/1\.1 404/, `${p.product_id}: no quote, as the page says`);
      continue;
    }
    await check(`products/${p.product_id}.html`, script, claims(claim));
    ran++;
  }
  // every product sells (issue 49), so every page's example draws real units
  assert.is(ran, svc.catalogue.products.length, 'every product page ran its example against units');
});

test('llms.txt and the agent card: their example requests quote what they say', async () => {
  const llms = await readFile(join(svc.dist, 'llms.txt'), 'utf8');
  const body = JSON.parse(/Example body: (\{[^}]+\})/.exec(llms)![1]);
  const llmsClaim = claims(llms).get(`${body.product_id} ${body.query}`)!;
  assert.ok(llmsClaim, 'llms.txt says what its example returns');
  assert.is(((await (await postJson(`${svc.base}/lds/draw`, body)).json()) as any).unit_count, llmsClaim.quoted);
  for (const skill of svc.card.skills) {
    const example = JSON.parse(skill.examples[0]);
    const claim = claims(skill.description).get(`${example.product_id} ${example.query}`);
    const res = await postJson(`${svc.base}/lds/draw`, example);
    if (!claim) {
      assert.match(skill.description, /matches no unit/, skill.id);
      assert.is(res.status, 404);
      await res.arrayBuffer();
      continue;
    }
    assert.is(((await res.json()) as any).unit_count, claim.quoted, skill.id);
  }
});

test('the free previews are served as published; an unknown product has none', async () => {
  for (const p of svc.catalogue.products) {
    const res = await fetch(p.preview_url);
    assert.is(res.status, 200, p.preview_url);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.is(await res.text(), await readFile(join(svc.dist, `v1/lds/preview/${p.product_id}`), 'utf8'));
  }
  const none = await fetch(`${svc.base}/lds/preview/svc-nope-eu`);
  assert.is(none.status, 404);
  assert.match(((await none.json()) as any).type, /not-found$/);
});

test.run();
