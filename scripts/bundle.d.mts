// Types of scripts/bundle.mjs (plain JavaScript: it runs before anything is compiled) for the suites' runner.
export declare const EXTERNAL: string[];
export declare function bundle(opts: { entryPoints: Record<string, string>; outdir: string; mirrors: string; external?: string[] }): Promise<string | null>;
export declare function bundleCli(): Promise<string | null>;
