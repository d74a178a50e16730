// Type declarations for chat.js: the <switchboard-chat> element of the
// switchboard browser SDK. Importing the module defines the element.

import type { Connection } from "./switchboard.js";

/**
 * <switchboard-chat thread="optional chat id" heading="Assistant">: one
 * assistant on every page. Set `connection` to start it.
 */
export declare class SwitchboardChat extends HTMLElement {
  /** The Connection from connect(); setting it starts the element. */
  connection: Connection | null;
  /** The chat (thread) id shown. */
  readonly thread: string;
  /** Whether a run is busy. */
  readonly busy: boolean;
}

/** Parse a text/event-stream body, calling onFrame for each frame. */
export declare function readSSE(body: ReadableStream<Uint8Array>, onFrame: (frame: { id: string; event: string; data: string }) => void): Promise<void>;

declare global {
  interface HTMLElementTagNameMap {
    "switchboard-chat": SwitchboardChat;
  }
}
