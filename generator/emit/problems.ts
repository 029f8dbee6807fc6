// One documentation page per problem type (RFC 9457 section 3.1.1: the `type` URI should resolve
// to documentation for people), at docs/problems/<slug> under docs_url: exactly the address the
// service answers as `type`. Each says the status, what it means and what to do; docs/problems/
// lists them all. The table is the shared contract's (contract/problems.ts).
import { PROBLEM_TYPES, problemBase, type ProblemType } from '../../contract/problems.ts';
import { type Emitter, type EmitContext, MARKDOWN_TYPE, distPath } from './types.ts';
import { mdTable } from './markdown.ts';

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

export const emitProblems: Emitter = (ctx) => {
  const dir = distPath(problemBase(ctx.addresses.docs_url)); // e.g. docs/problems/
  return [
    { path: `${dir}index.md`, contentType: MARKDOWN_TYPE, body: index(ctx), cache: 'static' },
    ...PROBLEM_TYPES.map((t) => ({ path: `${dir}${t.slug}`, contentType: MARKDOWN_TYPE, body: page(ctx, t), cache: 'static' as const })),
  ];
};
