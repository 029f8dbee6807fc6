// One documentation page per problem type (RFC 9457 section 3.1.1: the `type` URI should resolve
// to documentation for people), at docs/problems/<slug> under docs_url: exactly the address the
// service answers as `type`. Each says the status, what it means and what to do; docs/problems/
// lists them all. The table is the shared contract's (contract/problems.ts). Each is an HTML page
// for people, with its Markdown beside it (`<slug>.md`, `index.md`) for agents.
import { PROBLEM_TYPES, problemBase, type ProblemType } from '../../contract/problems.ts';
import { type Emitter, type EmitContext, MARKDOWN_TYPE, distPath } from './types.ts';
import { mdTable } from './markdown.ts';
import { markdownPage } from './markdown-page.ts';
import { docsCrumbs } from './docs.ts';

function page(ctx: EmitContext, t: ProblemType): string {
  const base = problemBase(ctx.addresses.docs_url);
  return [
    `# Problem: ${t.slug}`,
    '',
    `\`type\`: \`${base}${t.slug}\`  `,
    `HTTP status: **${t.status}**  `,
    'Content-Type: `application/problem+json` (RFC 9457); MCP tool results and A2A errors carry the same problem object.',
    '',
    '## What it means',
    '',
    `${t.meaning[0]!.toUpperCase()}${t.meaning.slice(1)}.`,
    '',
    '## What to do',
    '',
    t.todo,
    '',
    `Every problem carries \`type\`, \`title\`, \`status\` and usually \`detail\` (in words, for people); branch on \`type\`. All problem types: [${base}](${base}). How to browse, quote, top up and draw: [${ctx.addresses.docs_url}](${ctx.addresses.docs_url}).`,
  ].join('\n') + '\n';
}

function index(ctx: EmitContext): string {
  const base = problemBase(ctx.addresses.docs_url);
  return [
    '# Problem types',
    '',
    `Every refusal of the service is an RFC 9457 problem (\`application/problem+json\`) whose \`type\` is one of these addresses; each page says what it means and what to do. Documentation: [${ctx.addresses.docs_url}](${ctx.addresses.docs_url}).`,
    '',
    mdTable(['type', 'Status', 'Meaning'], PROBLEM_TYPES.map((t) => [`[${t.slug}](${base}${t.slug})`, t.status, t.meaning])),
  ].join('\n') + '\n';
}

/**
 * Each problem type's page at its `type` address (HTML, for people), with its Markdown at the same
 * address plus `.md`; the list of them all at the folder's address (index.html, and index.md).
 */
export const emitProblems: Emitter = (ctx) => {
  const dir = distPath(problemBase(ctx.addresses.docs_url)); // e.g. docs/problems/
  const all = { label: 'Problem types', url: problemBase(ctx.addresses.docs_url) };
  const docs = { label: 'Documentation', url: ctx.addresses.docs_url };
  const listed = index(ctx);
  return [
    { path: `${dir}index.md`, contentType: MARKDOWN_TYPE, body: listed, cache: 'static' },
    markdownPage(ctx, { path: `${dir}index.html`, markdown: listed, description: 'Every refusal of the service, what it means and what to do.', crumbs: docsCrumbs(ctx, docs, { label: all.label }), cache: 'static' }),
    ...PROBLEM_TYPES.flatMap((t) => {
      const markdown = page(ctx, t);
      return [
        { path: `${dir}${t.slug}.md`, contentType: MARKDOWN_TYPE, body: markdown, cache: 'static' as const },
        markdownPage(ctx, { path: `${dir}${t.slug}`, markdown, description: `HTTP ${t.status}: an RFC 9457 problem of the service.`, crumbs: docsCrumbs(ctx, docs, all, { label: t.slug }), cache: 'static' }),
      ];
    }),
  ];
};
