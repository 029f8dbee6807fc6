// Types of scripts/build-state.mjs (plain JavaScript: it runs before anything is compiled) for the suites.
export declare const STAMP: string;
export declare function buildStaleness(root: string): 'never built' | 'sources changed' | 'client package not built' | null;
