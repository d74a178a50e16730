// Type declarations for switchboard.js, the switchboard browser SDK.

/** The wire protocol version this SDK speaks. */
export declare const PROTOCOL_VERSION: string;

/** A JSON value as it crosses the wire. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON Schema document (kept as plain JSON). */
export type JsonSchema = { [key: string]: Json } | boolean;

/** An error with a frozen switchboard code; throw one from a handler to choose the code. */
export declare class SwitchboardError extends Error {
  constructor(code: string, message: string, details?: Json);
  readonly code: string;
  readonly details?: Json;
}

export interface ConnectOptions {
  /** The daemon's base URL, e.g. "http://127.0.0.1:7766". Default: this page's origin. */
  url?: string;
  /** From your backend, which opened the session with POST /api/v1/sessions. */
  sessionId: string;
  /** From your backend. Sent only as `Authorization: Bearer`, never in a URL. */
  sessionToken: string;
  /** A handler's time limit when neither the tool nor the request sets one. Default 30000. */
  handlerTimeoutMs?: number;
  /** Reconnect backoff bounds (exponential with jitter). Defaults 250 and 5000. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Batch window for advertising tool changes. Default 10. */
  advertiseDebounceMs?: number;
  /** End the session when the page goes away for good (pagehide, not persisted). Default true. */
  endOnPageHide?: boolean;
  /** Reconnect when the stream has been silent this many heartbeats. Default 2.5. */
  watchdogFactor?: number;
  /** Retries of a result POST after network failures. Default 4. */
  resultRetries?: number;
  /** A fetch implementation (tests, or a wrapper). Default: globalThis.fetch. */
  fetch?: typeof fetch;
  /**
   * WebMCP: the tools the page registers with document.modelContext (and
   * declarative form tools) become this tab's browser tools. false turns
   * the bridge off. Default: on, with the polyfill where the browser has no
   * document.modelContext.
   */
  webmcp?: false | WebMCPOptions;
  /** At most this many tools are advertised; the rest are refused (INVALID_INPUT). Default 256, the daemon's limit. */
  maxTools?: number;
  /** A tool whose schema is larger is refused (PAYLOAD_TOO_LARGE). Default 262144, the daemon's limit. */
  maxSchemaBytes?: number;
  /** The byte budget of one advertisement; tools past it are refused (PAYLOAD_TOO_LARGE). Default just under 1 MiB. */
  maxAdvertiseBytes?: number;
}

export interface WebMCPOptions {
  /**
   * WebMCP tools that are not read-only (annotations.readOnlyHint) but only
   * move the view (navigate, scroll, open a dialog, fill a form without
   * sending it): their WebMCP names, or a predicate. They get class "ui";
   * any other tool that is not read-only is refused with EXEMPTION_VIOLATION.
   */
  viewStateOnly?: string[] | ((webmcpName: string, tool: unknown) => boolean);
  /** Install the vendored polyfill when the browser has no document.modelContext. Default true. */
  polyfill?: boolean;
}

/** What a handler gets besides its input. */
export interface HandlerContext {
  /** Aborted when the daemon cancels the call, it times out, or the tab closes. */
  signal: AbortSignal;
  invocationId: string;
  runId: string;
  tool: string;
}

export interface ToolDefinition<I = any, O extends Json | void = any> {
  /** Two or more dot-separated lowercase segments, e.g. "nav.goto". */
  name: string;
  /** What the tool does and when to use it; the assistant reads this. */
  description: string;
  /** JSON Schema of the input object. Default {"type": "object"}. */
  inputSchema?: JsonSchema;
  /** JSON Schema the result must match; the daemon enforces it. */
  outputSchema?: JsonSchema;
  /** One-line summary for compact listings. */
  summary?: string;
  /** "ui" (moves the view; default) or "read" (only reads the view). Browser tools never mutate. */
  class?: "ui" | "read";
  /** Browser tools are view-state only by definition; false is refused. */
  viewStateOnly?: true;
  /** The daemon waits this long for the result; the handler is aborted then. */
  timeoutMs?: number;
  /** A shorter limit for the handler alone (not advertised): it ends with TIMEOUT, reported by the tab. */
  handlerTimeoutMs?: number;
  maxConcurrency?: number;
  ui?: { rendererId?: string; displayGroup?: string; icon?: string };
  /** Runs the action. Its return value is the result (undefined → null); a throw is ok:false with err.code (default "INTERNAL"). */
  handler: (input: I, ctx: HandlerContext) => O | Promise<O>;
}

export type Status = "connecting" | "open" | "reconnecting" | "closed";

export interface BrowserActionRequest {
  protocolVersion: string;
  invocationId: string;
  runId: string;
  tool: string;
  input: Json;
  timeoutMs?: number;
}

export type BrowserActionResult =
  | { protocolVersion: string; invocationId: string; ok: true; result: Json }
  | { protocolVersion: string; invocationId: string; ok: false; error: { code: string; message: string } };

export interface ActionEvent {
  phase: "start" | "end";
  request: BrowserActionRequest;
  result?: BrowserActionResult;
}

/** An application event from the tab's stream. */
export interface AppEvent {
  kind: string;
  data: any;
  /** The SSE id (resumable events only). */
  id: string;
}

/** Options of Connection.request. */
export interface RequestInit_ {
  method?: "GET" | "POST" | "PUT" | "DELETE";
  /** Sent as JSON. */
  body?: Json | object;
  signal?: AbortSignal;
  keepalive?: boolean;
  headers?: Record<string, string>;
}

export declare class Connection {
  readonly sessionId: string;
  readonly status: Status;
  /** Names of the tools currently mounted (registerTool and WebMCP). */
  readonly tools: string[];
  /** Which document.modelContext is bridged: "native", "polyfill"; "pending" while loading; "none" or "off". */
  readonly webmcp: "native" | "polyfill" | "pending" | "none" | "off";
  /** Mount a tool: advertised at once; call the returned function to unmount it. */
  registerTool<I = any, O extends Json | void = any>(def: ToolDefinition<I, O>): () => void;
  on(event: "status", fn: (status: Status) => void): () => void;
  on(event: "error", fn: (err: Error) => void): () => void;
  on(event: "action", fn: (e: ActionEvent) => void): () => void;
  /** Every other event on the tab's stream: panel.open/update/close, approval.request/resolved, ... */
  on(event: "event", fn: (e: AppEvent) => void): () => void;
  /**
   * Call a daemon route as this tab (its session token never leaves the SDK).
   * Resolves to the JSON answer (null when empty, the text when not JSON);
   * rejects with a SwitchboardError carrying the daemon's code.
   */
  request<T = any>(path: `/api/${string}`, init?: RequestInit_): Promise<T>;
  /** Open a streaming GET (an SSE route) as this tab; the caller reads the body. */
  stream(path: `/api/${string}`, init?: { signal?: AbortSignal; headers?: Record<string, string> }): Promise<Response>;
  /** End the session for good (calls waiting on it fail with SESSION_GONE). */
  close(): Promise<void>;
  /** Stop the stream but keep the session open. */
  disconnect(): void;
}

/** Attach this tab to the daemon; connects in the background and keeps reconnecting. */
export declare function connect(options: ConnectOptions): Connection;
