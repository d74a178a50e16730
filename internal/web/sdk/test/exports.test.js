// The declarations are written by hand; this test holds them to the
// source: every value a module exports is declared in its .d.ts, and
// every value the .d.ts declares is exported (tsc then checks the
// declarations themselves and test/types.ts, a program that uses them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = fileURLToPath(new URL("..", import.meta.url));
const modules = ["switchboard", "webmcp", "modelcontext", "react", "context", "panels", "chat", "tasks"];

function declared(name) {
  const file = `${root}${name}.d.ts`;
  const program = ts.createProgram([file], { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ["lib.es2022.d.ts", "lib.dom.d.ts"], types: [] });
  const checker = program.getTypeChecker();
  const sym = checker.getSymbolAtLocation(program.getSourceFile(file));
  return checker.getExportsOfModule(sym).filter((s) => s.flags & ts.SymbolFlags.Value).map((s) => s.name).sort();
}

// Value exports: by importing the module, or, for the one that needs a
// DOM at import time (chat.js defines a custom element), from its source.
async function exported(name) {
  try {
    return Object.keys(await import(`../${name}.js`)).sort();
  } catch {
    const src = readFileSync(`${root}${name}.js`, "utf8");
    return [...src.matchAll(/^export\s+(?:async\s+)?(?:function\*?|class|const|let)\s+([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]).sort();
  }
}

for (const name of modules) {
  test(`${name}.d.ts declares exactly what ${name}.js exports`, async () => {
    assert.deepEqual(declared(name), await exported(name));
  });
}
