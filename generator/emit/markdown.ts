// Text helpers the docs emitters share (docs.ts and agent-docs.ts import each other's sections, so
// these live apart from both).

/** A shell single-quoted word. */
export function shq(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A fenced Markdown code block. */
export const fence = (lang: string, body: string) => `\`\`\`${lang}\n${body}\n\`\`\``;
