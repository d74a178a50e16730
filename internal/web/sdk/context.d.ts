// Type declarations for context.js: the tab reports what the user sees.

import type { Connection } from "./switchboard.js";
import type { PanelHost } from "./panels.js";

/** A panel mounted in a context, as the tab reports it. */
export interface ReportedPanel {
  id: string;
  type: string;
  title: string;
  dirty?: boolean;
  origin: "host" | "agent";
  minimized?: boolean;
}

/** One context of the tab: the page, or an element marked data-sb-context. */
export interface ReportedContext {
  id: string;
  kind: string;
  label: string;
  /** focused: holds the focus, the selection or the last edit; visible: in the viewport; background: the rest. */
  attention: "focused" | "visible" | "background";
  panels: ReportedPanel[];
  route?: string;
  selection?: { panelId?: string; nodeId?: string; text?: string };
}

export interface ReportOptions {
  /** The attachPanels host, for its panels' titles, types and dirty state. */
  panels?: PanelHost;
  /** Where marked contexts and panels are looked for (default document). */
  root?: Document | Element;
  /** The page context (default: id "route:<path>", kind "page", the document title). */
  page?: () => Partial<Pick<ReportedContext, "id" | "kind" | "label" | "route">>;
  debounceMs?: number;
}

export interface ContextReporter {
  /** Send the current contexts now (skipped when unchanged). */
  flush(): Promise<void>;
  /** The contexts as they would be reported now. */
  readonly contexts: ReportedContext[];
  destroy(): void;
}

/** Report this tab's contexts to the daemon whenever they change (debounced). */
export declare function reportContexts(conn: Connection, options?: ReportOptions): ContextReporter;
