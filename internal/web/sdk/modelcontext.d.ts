// Type declarations for modelcontext.js: importing it installs document.modelContext where missing.

/** Which document.modelContext this page has. */
export declare const modelContext: "native" | "polyfill" | "none";
