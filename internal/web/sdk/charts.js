// switchboard charts: the chart, metric and progress nodes of panels.js,
// drawn as SVG built through DOM APIs (createElementNS, setAttribute,
// textContent; nothing is parsed as markup). Imported by panels.js.
//
// Readable without colour: every series has its own fill pattern (bars,
// areas, slices) or marker shape and dash (lines), the legend pairs each
// swatch with its label in text, values can be written on the chart, and
// every chart carries its numbers as a table under "Data". A metric's
// direction is written out ("up 3"), not only coloured.
//
// Data from a source is whatever a tool returned: values that are not
// finite numbers (strings, NaN, objects) are left out and counted in a
// note, and at most MAX_POINTS points are drawn.

const SVG = "http://www.w3.org/2000/svg";
export const MAX_POINTS = 2000;
const W = 480, H = 240, M = { top: 16, right: 12, bottom: 40, left: 48 };

const SVG_ATTRS = new Set([
  "viewBox", "width", "height", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "d", "points",
  "fill", "stroke", "stroke-width", "stroke-dasharray", "fill-opacity", "text-anchor", "dominant-baseline",
  "role", "id", "class", "patternUnits", "preserveAspectRatio", "focusable", "font-size", "transform",
]);

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (!SVG_ATTRS.has(k) && !k.startsWith("data-sb-") && !k.startsWith("aria-")) throw new Error(`switchboard charts: attribute ${k} is not allowed`);
    node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) node.append(c);
  return node;
}

function svgText(value, attrs) {
  const t = svg("text", attrs);
  t.textContent = String(value ?? "");
  return t;
}

// Fixed tables: series i gets colour, pattern and marker i (mod length).
const COLOURS = ["#3559e0", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c", "#1098ad", "#5c940d", "#495057"];
const DASHES = [null, "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4", "3 1"];
const MARKERS = ["circle", "square", "triangle", "diamond", "cross", "circle", "square", "triangle"];

let uid = 0;

function patternDefs(prefix, n) {
  const defs = svg("defs");
  for (let i = 0; i < n; i++) {
    const c = COLOURS[i % COLOURS.length];
    const p = svg("pattern", { id: `${prefix}-${i}`, patternUnits: "userSpaceOnUse", width: 8, height: 8 });
    p.append(svg("rect", { width: 8, height: 8, fill: c, "fill-opacity": 0.35 }));
    switch (i % 4) {
      case 0: p.append(svg("rect", { width: 8, height: 8, fill: c })); break; // solid
      case 1: p.append(svg("path", { d: "M0 8L8 0M-2 2L2 -2M6 10L10 6", stroke: c, "stroke-width": 2 })); break; // hatch
      case 2: p.append(svg("circle", { cx: 4, cy: 4, r: 2, fill: c })); break; // dots
      case 3: p.append(svg("path", { d: "M0 4H8M4 0V8", stroke: c, "stroke-width": 2 })); break; // cross
    }
    defs.append(p);
  }
  return defs;
}

function marker(i, x, y) {
  const c = COLOURS[i % COLOURS.length];
  switch (MARKERS[i % MARKERS.length]) {
    case "square": return svg("rect", { x: x - 3, y: y - 3, width: 6, height: 6, fill: c });
    case "triangle": return svg("path", { d: `M${x} ${y - 4}L${x + 4} ${y + 3}L${x - 4} ${y + 3}Z`, fill: c });
    case "diamond": return svg("path", { d: `M${x} ${y - 4}L${x + 4} ${y}L${x} ${y + 4}L${x - 4} ${y}Z`, fill: c });
    case "cross": return svg("path", { d: `M${x - 3} ${y - 3}L${x + 3} ${y + 3}M${x + 3} ${y - 3}L${x - 3} ${y + 3}`, stroke: c, "stroke-width": 2 });
    default: return svg("circle", { cx: x, cy: y, r: 3, fill: c });
  }
}

function num(v) {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function fmt(v, unit) {
  const s = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 }).format(v);
  return unit ? `${s} ${unit}` : s;
}

// niceTicks returns about n round tick values covering [lo, hi].
function niceTicks(lo, hi, n = 5) {
  if (lo === hi) { hi = lo + 1; }
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let v = Math.floor(lo / step) * step; v <= hi + step / 2 && out.length < 20; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/**
 * readChart turns props and records into what is drawn: categories (x),
 * series with their values (null for a gap), and notes about what was
 * left out. Exported for tests.
 */
export function readChart(p, recs, own) {
  const series = (Array.isArray(p.series) ? p.series : []).filter((s) => s && typeof s.key === "string").slice(0, 8);
  const xKey = p.x && typeof p.x.key === "string" ? p.x.key : "";
  const maxRows = Math.floor(MAX_POINTS / Math.max(1, series.length));
  const notes = [];
  if (recs.length > maxRows) notes.push(`Showing the first ${maxRows} of ${recs.length} rows.`);
  const rows = recs.slice(0, maxRows);
  let dropped = 0;
  const values = series.map((s) => rows.map((r) => {
    const raw = own(r, s.key);
    const v = num(raw);
    if (v === null && raw !== null && raw !== undefined) dropped++;
    return v;
  }));
  if (dropped) notes.push(`${dropped} value${dropped === 1 ? " is" : "s are"} not a number and not shown.`);
  return { series, cats: rows.map((r) => String(own(r, xKey) ?? "")), values, notes };
}

/** renderChart draws a chart node into a <figure>. h = {el, text} from panels.js. */
export function renderChart(h, p, recs, own) {
  const { series, cats, values, notes } = readChart(p, recs, own);
  const kind = ["bar", "line", "area", "pie"].includes(p.kind) ? p.kind : "bar";
  const id = `sb-chart-${++uid}`;
  const unit = p.y && typeof p.y.unit === "string" ? p.y.unit : "";
  const fig = h.el("figure", { class: "sb-chart", "data-sb-chart": kind });
  if (p.title) fig.append(h.text("figcaption", p.title, { class: "sb-chart-title", id: `${id}-t` }));
  if (!cats.length || !series.length) {
    fig.append(h.text("p", p.emptyText ?? "Nothing to show.", { class: "sb-text sb-tone-muted" }));
    return fig;
  }
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "sb-chart-svg", focusable: "false",
    "aria-labelledby": p.title ? `${id}-t ${id}-d` : `${id}-d` });
  const desc = svg("desc", { id: `${id}-d` });
  desc.textContent = typeof p.description === "string" && p.description
    ? p.description
    : `${kind} chart of ${series.map((s) => s.label ?? s.key).join(", ")} over ${cats.length} ${p.x?.label ?? "points"}`;
  // A pie patterns its slices, every other kind its series.
  root.append(desc, patternDefs(id, kind === "pie" ? Math.min(cats.length, 24) : series.length));
  if (kind === "pie") drawPie(root, id, p, cats, values[0], unit);
  else drawXY(root, id, kind, p, series, cats, values, unit);
  fig.append(root, legend(h, id, kind, series, cats), dataTable(h, p, series, cats, values, unit));
  for (const n of notes) fig.append(h.text("p", n, { class: "sb-chart-note", "data-sb-note": "" }));
  return fig;
}

function drawXY(root, id, kind, p, series, cats, values, unit) {
  const all = values.flat().filter((v) => v !== null);
  let lo = Math.min(0, ...all), hi = Math.max(0, ...all);
  if (p.y && typeof p.y.min === "number") lo = p.y.min;
  if (p.y && typeof p.y.max === "number") hi = p.y.max;
  const ticks = niceTicks(lo, hi);
  lo = Math.min(lo, ticks[0]); hi = Math.max(hi, ticks[ticks.length - 1]);
  const pw = W - M.left - M.right, ph = H - M.top - M.bottom;
  const y = (v) => M.top + ph - ((Math.max(lo, Math.min(hi, v)) - lo) / (hi - lo || 1)) * ph;
  const band = pw / cats.length;
  const xc = (i) => M.left + band * i + band / 2;

  const axes = svg("g", { class: "sb-axes", "data-sb-axis": "y" });
  for (const t of ticks) {
    axes.append(svg("line", { x1: M.left, x2: W - M.right, y1: y(t), y2: y(t), stroke: "#e4e7ec" }),
      svgText(fmt(t), { x: M.left - 6, y: y(t), "text-anchor": "end", "dominant-baseline": "middle", "font-size": 10 }));
  }
  if (p.y && p.y.label) axes.append(svgText(unit ? `${p.y.label} (${unit})` : p.y.label, { x: 4, y: 10, "font-size": 10 }));
  const xaxis = svg("g", { class: "sb-axes", "data-sb-axis": "x" },
    svg("line", { x1: M.left, x2: W - M.right, y1: y(Math.max(lo, 0)), y2: y(Math.max(lo, 0)), stroke: "#667085" }));
  const every = Math.ceil(cats.length / 12); // at most 12 labels fit
  cats.forEach((c, i) => {
    if (i % every === 0) xaxis.append(svgText(c.length > 12 ? c.slice(0, 11) + "…" : c, { x: xc(i), y: H - M.bottom + 14, "text-anchor": "middle", "font-size": 10 }));
  });
  if (p.x && p.x.label) xaxis.append(svgText(p.x.label, { x: M.left + pw / 2, y: H - 6, "text-anchor": "middle", "font-size": 10 }));
  root.append(axes, xaxis);

  const base = y(Math.max(lo, 0));
  series.forEach((s, si) => {
    const g = svg("g", { "data-sb-series": s.key, class: "sb-series" });
    const vals = values[si];
    if (kind === "bar") {
      const bw = (band * 0.8) / series.length;
      vals.forEach((v, i) => {
        if (v === null) return;
        const x0 = M.left + band * i + band * 0.1 + bw * si;
        const top = Math.min(y(v), base), hgt = Math.abs(y(v) - base);
        g.append(svg("rect", { x: x0, y: top, width: Math.max(1, bw - 1), height: Math.max(hgt, 0.5), fill: `url(#${id}-${si})`,
          stroke: COLOURS[si % COLOURS.length], "data-sb-point": i, "aria-label": `${cats[i]}: ${fmt(v, unit)}` }));
        if (p.labels) g.append(svgText(fmt(v), { x: x0 + bw / 2, y: top - 3, "text-anchor": "middle", "font-size": 9, "data-sb-label": "" }));
      });
    } else {
      // Gaps split a line into runs; each run is one path.
      const runs = [];
      let run = [];
      vals.forEach((v, i) => {
        if (v === null) { if (run.length) runs.push(run); run = []; } else run.push([xc(i), y(v), i, v]);
      });
      if (run.length) runs.push(run);
      for (const r of runs) {
        const line = r.map(([x, yy], k) => `${k ? "L" : "M"}${x.toFixed(1)} ${yy.toFixed(1)}`).join("");
        if (kind === "area") {
          g.append(svg("path", { d: `${line}L${r[r.length - 1][0].toFixed(1)} ${base}L${r[0][0].toFixed(1)} ${base}Z`, fill: `url(#${id}-${si})`, "fill-opacity": 0.6, "data-sb-area": "" }));
        }
        g.append(svg("path", { d: line, fill: "none", stroke: COLOURS[si % COLOURS.length], "stroke-width": 2,
          "stroke-dasharray": DASHES[si % DASHES.length] ?? undefined, "data-sb-line": "" }));
      }
      for (const r of runs) for (const [x, yy, i, v] of r) {
        const m = marker(si, x, yy);
        m.setAttribute("data-sb-point", String(i));
        m.setAttribute("aria-label", `${cats[i]}: ${fmt(v, unit)}`);
        g.append(m);
        if (p.labels) g.append(svgText(fmt(v), { x, y: yy - 6, "text-anchor": "middle", "font-size": 9, "data-sb-label": "" }));
      }
    }
    root.append(g);
  });
}

function drawPie(root, id, p, cats, vals, unit) {
  const total = vals.reduce((a, v) => a + (v !== null && v > 0 ? v : 0), 0);
  const cx = W / 2, cy = H / 2, r = Math.min(W, H) / 2 - 20;
  let a0 = -Math.PI / 2;
  const g = svg("g", { "data-sb-series": "pie", class: "sb-series" });
  vals.forEach((v, i) => {
    if (v === null || v <= 0 || total <= 0) return;
    const frac = v / total, a1 = a0 + frac * 2 * Math.PI;
    const pt = (a, rr = r) => `${(cx + rr * Math.cos(a)).toFixed(2)} ${(cy + rr * Math.sin(a)).toFixed(2)}`;
    const d = frac >= 0.9999
      ? `M${cx - r} ${cy}A${r} ${r} 0 1 1 ${cx + r} ${cy}A${r} ${r} 0 1 1 ${cx - r} ${cy}Z`
      : `M${cx} ${cy}L${pt(a0)}A${r} ${r} 0 ${frac > 0.5 ? 1 : 0} 1 ${pt(a1)}Z`;
    const label = `${cats[i]}: ${fmt(v, unit)} (${Math.round(frac * 100)}%)`;
    g.append(svg("path", { d, fill: `url(#${id}-${i % 24})`, stroke: "#fff", "stroke-width": 1, "data-sb-point": i, "aria-label": label }));
    if (p.labels && frac >= 0.04) {
      const mid = (a0 + a1) / 2;
      const [lx, ly] = pt(mid, r * 0.65).split(" ");
      g.append(svgText(`${Math.round(frac * 100)}%`, { x: lx, y: ly, "text-anchor": "middle", "dominant-baseline": "middle", "font-size": 10, "data-sb-label": "" }));
    }
    a0 = a1;
  });
  root.append(g);
}

function legend(h, id, kind, series, cats) {
  const items = kind === "pie" ? cats.map((c, i) => [c, i]) : series.map((s, i) => [s.label ?? s.key, i]);
  const ul = h.el("ul", { class: "sb-legend", "data-sb-legend": "" });
  for (const [label, i] of items.slice(0, 24)) {
    const sw = svg("svg", { viewBox: "0 0 16 12", width: 16, height: 12, "aria-hidden": "true" });
    if (kind === "line") {
      sw.append(svg("path", { d: "M0 6H16", stroke: COLOURS[i % COLOURS.length], "stroke-width": 2, "stroke-dasharray": DASHES[i % DASHES.length] ?? undefined }), marker(i, 8, 6));
    } else {
      sw.append(svg("rect", { width: 16, height: 12, fill: COLOURS[i % COLOURS.length], "fill-opacity": 0.35 }));
      // The pattern ids live in the chart's own svg; a swatch repeats the
      // pattern's mark so it is readable on its own.
      const c = COLOURS[i % COLOURS.length];
      const marks = [svg("rect", { width: 16, height: 12, fill: c }), svg("path", { d: "M0 12L12 0M4 12L16 0", stroke: c, "stroke-width": 2 }),
        svg("circle", { cx: 8, cy: 6, r: 2.5, fill: c }), svg("path", { d: "M0 6H16M8 0V12", stroke: c, "stroke-width": 2 })];
      sw.append(marks[i % 4]);
    }
    ul.append(h.el("li", {}, sw, h.text("span", label)));
  }
  return ul;
}

function dataTable(h, p, series, cats, values, unit) {
  const rows = cats.slice(0, 200);
  return h.el("details", { class: "sb-chart-data" }, h.text("summary", "Data"),
    h.el("table", { class: "sb-table" },
      h.el("thead", {}, h.el("tr", {}, h.text("th", p.x?.label ?? p.x?.key ?? "", { scope: "col" }),
        series.map((s) => h.text("th", s.label ?? s.key, { scope: "col" })))),
      h.el("tbody", {}, rows.map((c, i) => h.el("tr", {}, h.text("th", c, { scope: "row" }),
        series.map((s, si) => h.text("td", values[si][i] === null ? "—" : fmt(values[si][i], unit), { class: "sb-num" })))))));
}

/** renderMetric draws a metric: label, value with unit, and a written delta. */
export function renderMetric(h, p, value) {
  const v = num(value);
  const digits = Number.isInteger(p.precision) ? p.precision : undefined;
  const nf = new Intl.NumberFormat(undefined, digits === undefined ? { maximumFractionDigits: 2 } : { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const box = h.el("div", { class: "sb-metric", role: "group", "aria-label": String(p.label ?? "") },
    h.text("span", p.label, { class: "sb-metric-label" }),
    h.el("span", { class: "sb-metric-value", "data-sb-value": "" }, v === null ? "—" : nf.format(v), p.unit ? h.text("span", ` ${p.unit}`, { class: "sb-metric-unit" }) : null));
  const d = num(p.delta);
  if (d !== null) {
    const dir = d > 0 ? "up" : d < 0 ? "down" : "unchanged";
    const good = d === 0 || !p.goodWhen ? "" : (dir === p.goodWhen ? "good" : "bad");
    const arrow = d > 0 ? "▲" : d < 0 ? "▼" : "■";
    const words = `${arrow} ${dir}${d !== 0 ? " " + nf.format(Math.abs(d)) : ""}${p.deltaLabel ? " " + p.deltaLabel : ""}`;
    box.append(h.text("span", words, { class: `sb-metric-delta${good ? " sb-delta-" + good : ""}`, "data-sb-delta": dir }));
  }
  return box;
}

/** renderProgress draws a native <progress> with its numbers in text. */
export function renderProgress(h, p) {
  const max = num(p.max) !== null && p.max > 0 ? p.max : 100;
  const v = Math.max(0, Math.min(max, num(p.value) ?? 0));
  const pct = Math.round((v / max) * 100);
  const words = `${fmt(v)} of ${fmt(max, p.unit)} (${pct}%)`;
  return h.el("div", { class: "sb-progress" },
    h.el("div", { class: "sb-progress-head" }, h.text("span", p.label), h.text("span", words, { class: "sb-progress-text", "data-sb-value": "" })),
    h.el("progress", { value: v, max, "aria-label": `${p.label ?? ""}: ${words}` }));
}
