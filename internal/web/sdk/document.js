// switchboard documents: the document node of panels.js, the seed's block
// model (heading, paragraph of text runs, list, table, image by asset id,
// callout, pageBreak) drawn with DOM APIs only. Imported by panels.js.
//
// Runs are text: textContent, never markup; a run's href is checked again
// with the page's URL parser and dropped unless http(s) or mailto. An image
// names an asset id, resolved by the host's assetURL(id) option (none: the
// alt text is shown); a URL never reaches an <img> from here.

const MAX_BLOCKS = 500;
const MAX_LIST_DEPTH = 4;
const TONES = { info: "sb-tone-info", success: "sb-tone-success", warning: "sb-tone-warning", danger: "sb-tone-danger" };

function runs(h, list) {
  const out = [];
  for (const r of Array.isArray(list) ? list.slice(0, 200) : []) {
    if (!r || typeof r.text !== "string") continue;
    let node = h.text(r.code ? "code" : "span", r.text);
    if (r.bold) node = h.el("strong", {}, node);
    if (r.italic) node = h.el("em", {}, node);
    if (typeof r.href === "string") {
      const href = h.safeURL(r.href, "link");
      node = href ? h.el("a", { href, rel: "noopener noreferrer nofollow", class: "sb-link" }, node) : h.el("span", { "data-sb-unsafe": "href" }, node);
    }
    out.push(node);
  }
  return out;
}

function list(h, b, depth) {
  if (depth > MAX_LIST_DEPTH) return h.text("p", "…", { class: "sb-text sb-tone-muted" });
  return h.el(b.ordered ? "ol" : "ul", { class: "sb-list" },
    (Array.isArray(b.items) ? b.items.slice(0, 200) : []).map((it) => h.el("li", {}, ...runs(h, it && it.runs),
      it && Array.isArray(it.items) && it.items.length ? list(h, { ordered: b.ordered, items: it.items }, depth + 1) : null)));
}

function cellText(v) {
  return v === null || v === undefined ? "" : typeof v === "object" ? "" : String(v);
}

const BLOCKS = {
  heading: (h, b) => h.text(`h${b.level >= 1 && b.level <= 3 ? b.level + 1 : 2}`, b.text, { class: "sb-heading" }),
  paragraph: (h, b) => h.el("p", { class: "sb-text" }, ...runs(h, b.runs)),
  list: (h, b) => list(h, b, 1),
  table: (h, b) => h.el("table", { class: "sb-table" },
    b.caption ? h.text("caption", b.caption) : null,
    Array.isArray(b.header) ? h.el("thead", {}, h.el("tr", {}, b.header.slice(0, 20).map((c) => h.text("th", cellText(c), { scope: "col" })))) : null,
    h.el("tbody", {}, (Array.isArray(b.rows) ? b.rows.slice(0, 200) : []).map((row) =>
      h.el("tr", {}, (Array.isArray(row) ? row.slice(0, 20) : []).map((c) => h.text("td", cellText(c), { class: typeof c === "number" ? "sb-num" : undefined })))))),
  image: (h, b, opts) => {
    const url = typeof opts.assetURL === "function" && typeof b.asset === "string" ? h.safeURL(opts.assetURL(b.asset), "image") : null;
    const img = url ? h.el("img", { src: url, alt: String(b.alt ?? ""), class: "sb-image", loading: "lazy", referrerpolicy: "no-referrer" })
      : h.text("span", `[image: ${b.alt ?? b.asset ?? ""}]`, { class: "sb-image-unsafe", "data-sb-asset": String(b.asset ?? "") });
    return h.el("figure", { class: "sb-doc-figure" }, img, b.caption ? h.text("figcaption", b.caption) : null);
  },
  callout: (h, b) => h.el("div", { class: `sb-callout ${TONES[b.tone] ?? "sb-tone-info"}`, role: "note" },
    b.title ? h.text("strong", b.title) : null, h.el("p", {}, ...runs(h, b.runs))),
  pageBreak: (h) => h.el("hr", { class: "sb-page-break", "aria-label": "page break", "data-sb-page-break": "" }),
};

/** renderDocument draws a document node. h = {el, text, safeURL} from panels.js. */
export function renderDocument(h, p, opts = {}) {
  const doc = h.el("article", { class: "sb-document" });
  if (p.title) doc.append(h.text("h1", p.title, { class: "sb-doc-title" }));
  for (const b of Array.isArray(p.blocks) ? p.blocks.slice(0, MAX_BLOCKS) : []) {
    const draw = b && Object.prototype.hasOwnProperty.call(BLOCKS, b.type) ? BLOCKS[b.type] : null;
    const node = draw ? draw(h, b, opts) : h.text("div", `Unsupported block: ${String(b && b.type)}`, { class: "sb-placeholder" });
    node.setAttribute("data-sb-block", String(b && b.type));
    if (b && typeof b.id === "string") node.setAttribute("data-sb-block-id", b.id);
    doc.append(node);
  }
  return doc;
}
