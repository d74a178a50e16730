// Type declarations for panels.js: the Panel Spec IR renderer of the
// switchboard browser SDK.

import type { Connection, Json } from "./switchboard.js";

/** A panel instance as the daemon sends it (panel.open, panel.update). */
export interface PanelSnapshot {
  instanceId: string;
  sessionId: string;
  /** The registered panel's id; absent for a composed panel. */
  panel?: string;
  title?: string;
  /** "agent" for a panel the assistant composed: it shows a provenance badge. */
  origin: "host" | "agent";
  /** Increases with every change; an older snapshot never replaces a newer one. */
  version: number;
  specVersion: number;
  /** The validated Panel Spec IR. */
  spec: PanelSpec;
  /** Loaded data per source id. */
  data?: { [source: string]: Json };
  /** Sources that failed to load. */
  errors?: { [source: string]: { code: string; message: string } };
  /** Form values: source id → field path → value. */
  values: { [source: string]: { [path: string]: Json } };
  /** Fields the user edited and has not saved, per source. */
  dirty?: { [source: string]: string[] };
  /** Fields the assistant filled and nobody has saved, per source. */
  filled?: { [source: string]: string[] };
  /** The last outcome of each action. */
  actions?: { [action: string]: { status: "running" | "ok" | "pending_approval" | "rejected_by_user" | "error"; invocationId?: string; tool?: string; error?: { code: string; message: string } } };
  /** An agent panel the user (or the canvas policy's autoPin) kept; without it, a draft. */
  pinned?: boolean;
  /** Preview node id → its URL on the sandboxed preview origin. */
  previews?: { [node: string]: string };
}

/** The canvas policy in force for the tab (GET /api/v1/sessions/{id}/canvas, event panel.canvas). */
export interface Canvas {
  preset: "guarded" | "open" | "custom";
  hitlOnCompose: boolean;
  autoPin: boolean;
  allowDelete: boolean;
  allowCodePreview: boolean;
  /** The assistant may change the surface without asking: a persistent indicator shows. */
  open: boolean;
}

/** The Panel Spec IR (see docs/panels.md). */
export interface PanelSpec {
  v: 1;
  origin?: "host" | "agent";
  root: string;
  nodes: { [id: string]: { type: string; props?: { [key: string]: Json }; children?: string[] } };
  sources?: { [id: string]: { [key: string]: Json } };
  state?: Json;
  actions?: { [id: string]: { kind: "mutate" | "tool" | "refresh"; [key: string]: Json } };
}

export interface RenderOptions {
  /** A field changed (the user's input). */
  onEdit?: (source: string, path: string, value: Json, formId: string) => void;
  /** A button or form submit ran (after its confirmation, if any). */
  onAction?: (actionId: string) => void;
  /** Values that win over the snapshot's: "source\u0000path" → value. */
  localValues?: Map<string, Json>;
}

/**
 * Render a snapshot (or a bare spec) into container, replacing its children.
 * Text goes through textContent only, attributes through an allow-list, and
 * every URL is checked again. Returns false when the spec cannot be shown.
 */
export declare function renderPanel(snapshot: PanelSnapshot | PanelSpec, container: Element, opts?: RenderOptions): boolean;

/** The URL to use for a link or an image, or null when it is not allowed. */
export declare function safeURL(raw: string, kind?: "link" | "image"): string | null;

export interface PanelHost {
  /** Resolves once the tab's open panels have rendered. */
  readonly ready: Promise<void>;
  /** Open a registered panel for the user. */
  open(panel: string, params?: { [key: string]: Json }): Promise<PanelSnapshot>;
  /** Close a panel (its unsaved values are dropped). */
  close(instanceId: string): Promise<void>;
  /** Pin an agent panel: the user keeps it, it is no longer a draft. */
  pin(instanceId: string): Promise<void>;
  /** Send edits still waiting for their debounce. */
  flush(): Promise<unknown>;
  /** The snapshots shown, by instance id. */
  readonly instances: Map<string, PanelSnapshot>;
  destroy(): void;
}

export interface AttachOptions {
  /** Where panels render. */
  container: Element;
  /** Render a panel somewhere else (a page slot); return null for the container. */
  place?: (snapshot: PanelSnapshot) => Element | null | undefined;
  onError?: (err: Error) => void;
}

/** Show this tab's panels and keep them in step with the daemon. */
export declare function attachPanels(conn: Connection, options: AttachOptions): PanelHost;
