// The build's Markdown documents as HTML pages for people: the documentation at docs_url and the
// problem pages (RFC 9457 3.1.1: a problem `type` should resolve to documentation for people). Each
// Markdown document stays published beside its page, for agents and llms.txt. The page is the same
// text rendered by markdown-it (CommonMark with GitHub's tables) into the shell every page shares
// (page.ts): the document's `# ` title becomes the page's title and only h1; headings get GitHub's
// anchors (headingAnchor), so the Markdown's own table of contents works on the page. Raw HTML in
// the text is escaped, never passed through, and markdown-it keeps no javascript:, vbscript:, file:
// or data: link.
import MarkdownIt from 'markdown-it';
import { headingAnchor } from './markdown.ts';
import { page } from './page.ts';
import { HTML_TYPE, type EmitContext, type OutputFile } from './types.ts';

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });

// Heading ids as GitHub gives them: the heading's text, slugged, with -1, -2, … for repeats.
md.core.ruler.push('heading_anchors', (state) => {
  const seen = new Map<string, number>();
  state.tokens.forEach((token, i) => {
    if (token.type !== 'heading_open') return;
    const text = (state.tokens[i + 1]?.children ?? []).filter((t) => t.type === 'text' || t.type === 'code_inline').map((t) => t.content).join('');
    const base = headingAnchor(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    token.attrSet('id', n === 0 ? base : `${base}-${n}`);
  });
});
// Column headers say what they head (a Markdown table's header row is always its first).
md.renderer.rules.th_open = (tokens, i, options, _env, self) => {
  tokens[i]!.attrSet('scope', 'col');
  return self.renderToken(tokens, i, options);
};

/** Markdown to the HTML of a page's main part. A code block may scroll sideways: it takes the keyboard focus to be scrolled (WCAG 2.1.1). */
export function markdownHtml(markdown: string): string {
  return md.render(markdown).replace(/<pre><code/g, '<pre tabindex="0"><code');
}

export interface MarkdownPage {
  path: string; // dist/ path of the page
  markdown: string; // the document, starting with its `# ` title
  title?: string; // the page's title and h1, when it is not the document's
  description: string;
  crumbs?: string; // breadcrumb HTML, as page() takes it
  cache: OutputFile['cache'];
}

/** The HTML page of a Markdown document. */
export function markdownPage(ctx: EmitContext, o: MarkdownPage): OutputFile {
  const m = /^# (.+)\n+/.exec(o.markdown);
  if (!m) throw new Error(`${o.path}: the Markdown document has no "# " title on its first line`);
  const body = markdownHtml(o.markdown.slice(m[0].length));
  // The title as text: the Markdown of the heading line without its code marks.
  const title = o.title ?? m[1]!.replace(/`/g, '');
  return { path: o.path, contentType: HTML_TYPE, body: page(ctx, { title, description: o.description, crumbs: o.crumbs, body }), cache: o.cache };
}
