// The page every HTML document of the build is drawn in (the catalogue's pages, html.ts; the
// documentation and the problem pages, markdown-page.ts): one shell, so every page has the
// language, a title, one h1, a skip link, landmarks and the same footer. Self-contained: inline
// CSS, no scripts, no external assets.
import { createHash } from 'node:crypto';
import type { EmitContext } from './types.ts';
import { siteUrls } from './site.ts';

/** Escapes text for HTML element content and double- or single-quoted attribute values. */
export function esc(value: string | number | null | undefined): string {
  return String(value ?? '').replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

/** Only http(s) and relative links become href values; anything else is shown as text. */
export function link(href: string | null, text: string): string {
  if (!href) return esc(text);
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) && !/^https?:/i.test(href)) return esc(text);
  return `<a href="${esc(href)}">${esc(text)}</a>`;
}

const CSS = `
:root{color-scheme:light;--fg:#1b1f24;--muted:#545d68;--line:#d0d7de;--bg:#fff;--accent:#0b57d0;--ok:#0f6b2f;--warn:#8a4b00;--bad:#a4161a}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:72rem;margin:0 auto;padding:0 1rem}
header{padding-top:1.5rem}
h1{font-size:1.8rem;margin:.25rem 0 .5rem}
h2{font-size:1.3rem;margin:2rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}
a{color:var(--accent)}
a:focus-visible,summary:focus-visible,pre:focus-visible,.scroll:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-999px}
.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem}
.muted,caption{color:var(--muted)}
caption{text-align:left;padding:.25rem 0;caption-side:top}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}
thead th{background:#f3f5f7}
th[scope=row] code{white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f3f5f7;padding:.75rem;overflow-x:auto;white-space:pre}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dl.facts dt{font-weight:600}
dl.facts dd{margin:0}
.health{font-weight:700}
.health-healthy{color:var(--ok)}
.health-degraded{color:var(--warn)}
.health-unavailable{color:var(--bad)}
footer{margin-top:3rem;padding-bottom:2rem;border-top:1px solid var(--line);color:var(--muted);font-size:.9rem}
`.trim();

/**
 * The Content-Security-Policy of every page (hosted-paths.ts sends it with each HTML document, from
 * the service and from every generated server rule): nothing may load or run but the page's own
 * inline stylesheet, named by its hash. No scripts, frames, images, fonts or fetches (the pages have
 * none); no page may frame one (frame-ancestors), re-base its links (base-uri) or submit a form.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(CSS).digest('base64')}'`,
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Links from the pages lead to the sources' and licences' own sites: they learn nothing of the page. */
export const PAGE_REFERRER_POLICY = 'no-referrer';

export function page(ctx: EmitContext, o: { title: string; description: string; crumbs?: string; body: string }): string {
  const c = ctx.catalogue;
  const u = siteUrls(ctx);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(o.title)}</title>
<meta name="description" content="${esc(o.description)}">
<meta name="generator" content="lds catalogue build ${esc(ctx.version)}">
<link rel="alternate" type="application/json" href="${esc(u.catalogue)}" title="Catalogue (JSON)">
<link rel="alternate" type="text/markdown" href="${esc(u.docsMarkdown)}" title="Documentation (Markdown)">
${u.dcatCatalogueFiles.map((f) => `<link rel="alternate" type="${esc(f.type)}" href="${esc(f.url)}" title="DCAT-AP catalogue">`).join('\n')}
<style>${CSS}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
${o.crumbs ? `<nav aria-label="Breadcrumb"><p>${o.crumbs}</p></nav>\n` : ''}<h1>${esc(o.title)}</h1>
<p>${esc(o.description)}</p>
</header>
<main id="main">
${o.body}
</main>
<footer>
<p>Catalogue content: ${link(c.licence.url, c.licence.title)}, published by ${link(c.publisher_url, c['dct:publisher'])}. Drawn data is licensed per source, as listed.</p>
<p>Catalogue version <code>${esc(c.version)}</code>, generated ${esc(c.generated_at)}${c.store_version ? `, unit store <code>${esc(c.store_version)}</code>` : ', no unit store built (every count is zero)'}. Counts and prices are live in the ${link(u.catalogue, 'catalogue JSON')}.</p>
</footer>
</body>
</html>
`;
}

