// Type declarations for chat.js: the <switchboard-chat> element of the
// switchboard browser SDK. Importing the module defines the element.

import type { Connection } from "./switchboard.js";

/** A tool call as a host renderer sees it. */
export interface ToolPart {
  /** The run's id for the call. */
  toolCallId: string;
  /** The tool's real name (e.g. "tasks.list"). */
  name: string;
  /** The arguments (parsed JSON; the raw text while it still streams). */
  args: unknown;
  status: "running" | "waiting" | "succeeded" | "failed" | "denied";
  /** The tool's result (parsed JSON) once succeeded. */
  result?: unknown;
  /** "CODE: message" once failed. */
  error: string;
  /** The tool's UI hints, when it declares them. */
  ui: { rendererId?: string; displayGroup?: string; icon?: string } | null;
}

/** Renders a tool call's body; called again on every change of the call. */
export type ToolRenderer = (part: ToolPart) => Node;

/**
 * <switchboard-chat thread="optional chat id" heading="Assistant">: one
 * assistant on every page. Set `connection` to start it.
 */
export declare class SwitchboardChat extends HTMLElement {
  /** The Connection from connect(); setting it starts the element. */
  connection: Connection | null;
  /**
   * Per-tool renderers, keyed by tool name: functions the host imports
   * itself (the element never loads code from the server).
   */
  toolRenderers: Record<string, ToolRenderer>;
  /**
   * Renderers keyed by the `ui.rendererId` a tool declares: one renderer
   * for every tool that names it. A tool's entry in toolRenderers wins; a
   * rendererId with no renderer here gets the default card body.
   */
  renderers: Record<string, ToolRenderer>;
  /** Suggested first prompts for the empty chat; null derives them from the catalog. */
  suggestions: string[] | null;
  /** The chat (thread) id shown. */
  readonly thread: string;
  /** Whether a run is busy. */
  readonly busy: boolean;
}

/**
 * Render Markdown (a strict subset: headings, paragraphs, emphasis, code,
 * lists, quotes, rules, http(s) links) with DOM APIs only; model text only
 * ever becomes text nodes.
 */
export declare function renderMarkdown(src: string): DocumentFragment;

/** The URL when it is an absolute http(s) URL, else "". */
export declare function safeHref(url: string): string;

/** Parse a text/event-stream body, calling onFrame for each frame. */
export declare function readSSE(body: ReadableStream<Uint8Array>, onFrame: (frame: { id: string; event: string; data: string }) => void): Promise<void>;

declare global {
  interface HTMLElementTagNameMap {
    "switchboard-chat": SwitchboardChat;
  }
}
