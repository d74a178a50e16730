// Type declarations for react.js: React bindings of the browser SDK.

import type { ReactNode } from "react";
import type { Connection, Json, Status, ToolDefinition } from "./switchboard.js";
import type { ReportedContext } from "./context.js";

/** Makes a connection available to the hooks below it. */
export declare function SwitchboardProvider(props: { connection: Connection; children?: ReactNode }): ReactNode;

/** The connection from the nearest SwitchboardProvider, or the one given. */
export declare function useConnection(connection?: Connection): Connection;

/** The connection's status; the component re-renders on every change. */
export declare function useConnectionStatus(connection?: Connection): Status;

/**
 * Mount a browser tool while the component is mounted. The latest handler
 * runs; a change of name, description, schemas or class re-advertises it.
 */
export declare function useTool<I = any, O extends Json | void = any>(def: ToolDefinition<I, O>, connection?: Connection): void;

/** A context a component reports: attention defaults to "visible", panels to []. */
export type AgentContext = Omit<ReportedContext, "attention" | "panels"> & Partial<Pick<ReportedContext, "attention" | "panels">>;

/** Report a context this component shows while it is mounted (agents read it as page data). */
export declare function useAgentContext(context: AgentContext, connection?: Connection): void;

/** Send the contexts the hooks hold now. */
export declare function flushAgentContext(connection: Connection): Promise<void>;
