// A page's model context as the browser's own API behaves (an EventTarget
// with registerTool, getTools, executeTool and toolchange), for Node; the
// real ones (Chromium's and the polyfill) run in e2e/.
export class ModelContext extends EventTarget {
  tools = new Map();
  async registerTool(tool, { signal } = {}) {
    if (this.tools.has(tool.name)) throw new Error("Duplicate tool name");
    this.tools.set(tool.name, tool);
    signal?.addEventListener("abort", () => { this.tools.delete(tool.name); this.dispatchEvent(new Event("toolchange")); });
    this.dispatchEvent(new Event("toolchange"));
  }
  async getTools() {
    return [...this.tools.values()].map(({ name, description, inputSchema, annotations }) =>
      ({ name, description, inputSchema: JSON.stringify(inputSchema ?? { type: "object" }), annotations }));
  }
  async executeTool(reg, input) {
    return JSON.stringify(await this.tools.get(reg.name).execute(input));
  }
}
