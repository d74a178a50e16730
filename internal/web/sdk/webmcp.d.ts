// Type declarations for webmcp.js: WebMCP tools become the tab's browser tools.

import type { JsonSchema } from "./switchboard.js";

/** The daemon's tool name grammar: two or more dot-separated lowercase segments. */
export declare const NAME_RE: RegExp;
export declare const MAX_NAME: number;

/** A tool as document.modelContext.getTools() lists it. */
export interface RegisteredTool {
  name: string;
  title?: string;
  description: string;
  /** JSON text (Chromium) or an object (the polyfill). */
  inputSchema?: string | JsonSchema;
  annotations?: { readOnlyHint?: boolean; untrustedContentHint?: boolean; [k: string]: unknown };
  origin?: string;
  window?: unknown;
}

/** The part of document.modelContext the bridge uses. */
export interface ModelContextLike extends EventTarget {
  registerTool(tool: WebMCPTool, options?: { signal?: AbortSignal }): Promise<void> | void;
  getTools(): Promise<RegisteredTool[]>;
  executeTool(tool: RegisteredTool, input: unknown, options?: { signal?: AbortSignal }): Promise<string | null>;
}

/** A tool as a page registers it with document.modelContext.registerTool. */
export interface WebMCPTool {
  name: string;
  title?: string;
  description: string;
  inputSchema?: JsonSchema;
  annotations?: { readOnlyHint?: boolean; untrustedContentHint?: boolean };
  execute(input: any, client?: unknown): unknown;
}

/** The switchboard name of a WebMCP tool name ("" when none fits): kept when it fits the grammar. */
export declare function toolName(name: string): string;

/** Make document.modelContext available (the browser's own, else the vendored polyfill) and guard its results. */
export declare function ensureModelContext(doc?: Document): Promise<"native" | "polyfill" | "none">;

/** Wrap mc.registerTool so results JSON cannot carry fail the call. */
export declare function guardResults(mc: ModelContextLike | undefined | null): "native" | "polyfill" | "none";

/** One WebMCP tool as a switchboard tool definition, or the refusal. */
export declare function mapTool(
  reg: RegisteredTool,
  viewStateOnly: (webmcpName: string, tool: RegisteredTool) => boolean,
  run: (reg: RegisteredTool, input: any, ctx: { signal: AbortSignal }) => Promise<unknown>,
): { name?: string; def?: object; error?: Error & { code: string } };

/** What executeTool resolved to, as the call's result (JSON text parsed). */
export declare function resultOf(v: unknown): unknown;

/** Keep mc's tools mounted through onTools until the returned function is called. */
export declare function bridge(mc: ModelContextLike, options: {
  onTools: (defs: object[] | null, refused: Error[]) => void;
  viewStateOnly?: (webmcpName: string, tool: RegisteredTool) => boolean;
  self?: unknown;
}): () => void;
