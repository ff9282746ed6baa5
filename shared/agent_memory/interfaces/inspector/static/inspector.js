// The memory inspector: one module, no build, no dependencies. It only calls the public API
// with the key typed into the page (held in this module's memory, never stored), so it shows
// exactly what that key may read.

const $ = (sel) => document.querySelector(sel);
const conn = { base: "", key: "", context: "", partition: "" };

// --- small DOM helpers ------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  return node;
}

function status(text, isError = false) {
  const node = $("#status");
  node.textContent = text;
  node.classList.toggle("error", isError);
}

const fmtTime = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "—");
const entityPath = (id) => id.replace(/^entity:/, "");

// A DNF scope for people: "unscoped", "org/acme/user/alice", "a + b | c" (clauses OR-ed, the
// paths of one clause AND-ed), as `agent-memory state` prints it.
const scopeText = (scopes) => (scopes || []).map((clause) => clause.join(" + ")).join(" | ") || "unscoped";

// The slots ([slot, scopes] pairs) holding values of more than one scope: a value supersedes
// only one of its own scope, so there values are current side by side and each shows its scope.
function sideBySide(pairs) {
  const seen = new Map();
  for (const [slot, scopes] of pairs) {
    if (!seen.has(slot)) seen.set(slot, new Set());
    seen.get(slot).add(scopeText(scopes));
  }
  return new Set([...seen].filter(([, found]) => found.size > 1).map(([slot]) => slot));
}

const scopeTag = (scoped, slot, scopes) => (scoped.has(slot)
  ? el("span", { class: "scope", title: "Written under this scope; values of other scopes do not supersede it",
    text: `scope: ${scopeText(scopes)}` }) : null);

// --- the API ----------------------------------------------------------------------------

class ApiError extends Error {
  constructor(problem, status) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.problem = problem;
    this.status = status;
  }
}

function url(path, params = {}) {
  const u = new URL(conn.base.replace(/\/$/, "") + path, location.href);
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") u.searchParams.set(k, v);
  return u.toString();
}

function headers(extra = {}) {
  const h = { Accept: "application/json", ...extra };
  if (conn.key) h.Authorization = `Bearer ${conn.key}`;
  if (conn.partition && conn.partition !== "default") h["X-Memory-Partition"] = conn.partition;
  return h;
}

async function api(method, path, { body, params } = {}) {
  const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}) };
  if (body) init.body = JSON.stringify(body);
  const res = await fetch(url(path, params), init);
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new ApiError(data || {}, res.status);
  return data;
}

const ctxPath = (rest = "") => `/api/v1/${encodeURIComponent(conn.context)}${rest}`;

function showError(where, err) {
  where.replaceChildren(el("p", { class: "error", role: "alert", text: `${err.status ? err.status + ": " : ""}${err.message}` }));
}

// A "More" button that follows a cursor-paged list.
function pager(path, { list, more, render, params = {}, key = "items", reset = true }) {
  let cursor = null;
  async function next() {
    more.hidden = true;
    const page = await api("GET", path, { params: { ...params, cursor, limit: 20 } });
    for (const item of page[key]) list.append(render(item));
    // /documents and chunks are paged by number too: their cursor sits beside the page number
    const info = typeof page.page === "object" && page.page !== null ? page.page : page;
    cursor = info.hasMore ? info.nextCursor : null;
    more.hidden = !cursor;
    if (!list.children.length) list.append(el("li", { class: "hint", text: "Nothing here (or nothing this key may read)." }));
  }
  if (reset) list.replaceChildren();
  more.onclick = () => next().catch((e) => status(e.message, true));
  return next();
}

// --- tabs -------------------------------------------------------------------------------

const tabs = [...document.querySelectorAll('[role="tab"]')];
function selectTab(tab, focus = true) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
  }
  if (focus) tab.focus();
  const loader = loaders[tab.id];
  if (loader && conn.context) loader().catch((e) => status(e.message, true));
}
for (const tab of tabs) {
  tab.addEventListener("click", () => selectTab(tab));
  tab.addEventListener("keydown", (ev) => {
    const i = tabs.indexOf(tab);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    selectTab(tabs[(to + tabs.length) % tabs.length]);
  });
}
const show = (name) => selectTab($(`#tab-${name}`), false);

// --- connection -------------------------------------------------------------------------

async function loadContexts() {
  try {
    const page = await api("GET", "/api/v1/contexts", { params: { limit: 100 } });
    const options = $("#context-options");
    options.replaceChildren(...page.items.map((c) => el("option", { value: c.contextId })));
    const known = Object.fromEntries(page.items.map((c) => [c.contextId, c.partitions]));
    const fill = () => $("#partition-options").replaceChildren(
      ...(known[$("#context").value] || []).map((p) => el("option", { value: p })));
    $("#context").addEventListener("change", fill);
    // Never under the user's cursor: set while they type, the value would take their keys after it.
    const typing = document.activeElement === $("#context");
    if (!$("#context").value && !typing && page.items.length === 1) $("#context").value = page.items[0].contextId;
    fill();
    // The only context this key may use opens by itself, unless one is already open.
    if (page.items.length === 1 && !conn.context && $("#context").value === page.items[0].contextId) openContext();
  } catch (err) {
    if (err.status !== 401) status(err.message, true);
  }
}

function openContext() {
  conn.base = $("#base-url").value.trim();
  conn.key = $("#api-key").value.trim();
  conn.context = $("#context").value.trim();
  conn.partition = $("#partition").value.trim() || "default";
  if (!conn.context) return;
  status(`Context ${conn.context}, partition ${conn.partition}.`);
  const selected = tabs.find((t) => t.getAttribute("aria-selected") === "true");
  selectTab(selected, false);
}

$("#api-key").addEventListener("change", () => { conn.key = $("#api-key").value.trim(); loadContexts(); });
$("#base-url").addEventListener("change", () => { conn.base = $("#base-url").value.trim(); loadContexts(); });

$("#connection").addEventListener("submit", (ev) => {
  ev.preventDefault();
  openContext();
});

// The context's export (GET /export, docs/export.md) saved as a file: fetched with the key
// (a plain link could not send it), then handed to the browser as a download.
$("#export-context").addEventListener("click", async () => {
  const context = $("#context").value.trim();
  if (!context) { status("Enter a context to export.", true); return; }
  conn.base = $("#base-url").value.trim();
  conn.key = $("#api-key").value.trim();
  conn.context = context;
  status(`Exporting ${context}…`);
  // A deployed stack answers at most 6 MB: there the export runs as a job and the browser
  // downloads the stream from its presigned URL (docs/export.md "The job form").
  if (new URL(url("/"), location.href).origin !== location.origin) { exportJob(context); return; }
  try {
    const res = await fetch(url(ctxPath("/export")), { headers: headers({ Accept: "application/x-ndjson" }) });
    if (!res.ok) {
      const text = await res.text();
      throw new ApiError(text ? JSON.parse(text) : {}, res.status);
    }
    const blob = await res.blob();
    const link = el("a", { href: URL.createObjectURL(blob) });
    link.download = `${context}.ndjson`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
    status(`Exported ${context} (${blob.size} bytes).`);
  } catch (err) {
    status(`Export failed: ${err.status ? err.status + ": " : ""}${err.message}`, true);
  }
});

async function exportJob(context) {
  try {
    let job = await api("POST", ctxPath("/export/jobs"), { body: {} });
    while (job.state !== "succeeded" && job.state !== "failed") {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      job = await api("GET", ctxPath(`/export/jobs/${encodeURIComponent(job.id)}`));
      status(`Exporting ${context}… ${job.recordsDone} records`);
    }
    if (job.state === "failed") throw new ApiError(job.error || {}, (job.error || {}).status || 500);
    // The presigned URL answers as an attachment: a navigation downloads it (no CORS, no key).
    const link = el("a", { href: job.downloadUrl });
    link.download = `${context}.ndjson`;
    document.body.append(link);
    link.click();
    link.remove();
    status(`Exported ${context} (${job.bytes} bytes).`);
  } catch (err) {
    status(`Export failed: ${err.status ? err.status + ": " : ""}${err.message}`, true);
  }
}

// --- state ------------------------------------------------------------------------------

async function loadState() {
  const body = $("#state-body");
  let state;
  try {
    state = await api("GET", ctxPath("/state"), { params: { limit: 500 } });
  } catch (err) { showError(body, err); return; }
  const pending = await api("GET", ctxPath("/uncertainty"), { params: { resolved: "false", limit: 50 } })
    .catch(() => ({ items: [] }));
  const cats = ["identity", "knowledge", "context"];
  const count = (what) => cats.reduce((n, c) => n + state[c][what].length, 0);
  $("#state-counts").textContent = `${count("entities")} entities · ${count("attributes")} attributes · ` +
    `${count("relations")} relations · ${count("actions")} actions · ${state.instructions.length} instructions · ` +
    `${pending.items.length} open uncertainties`;
  // Every fact sits in the category /state gives it, which may differ from its entity's
  // (a context-category mood of an identity entity): it is shown there, on a card for its
  // entity, so the panel holds exactly what /state returned.
  const known = Object.fromEntries(cats.flatMap((c) => state[c].entities.map((e) => [e.id, { ...e, cat: c }])));
  const all = (what) => cats.flatMap((c) => state[c][what]);
  const scoped = sideBySide([...all("attributes").map((a) => [`${a.entity}\u0000${a.key}`, a.scopes]),
    ...all("relations").map((r) => [`${r.subject}\u0000rel\u0000${r.label}`, r.scopes])]);
  const parts = [];
  for (const cat of cats) {
    const c = state[cat];
    const ids = [...c.entities.map((e) => e.id), ...c.attributes.map((a) => a.entity),
      ...c.relations.map((r) => r.subject), ...c.actions.map((a) => a.actor)];
    const total = c.entities.length + c.attributes.length + c.relations.length + c.actions.length;
    const summary = [[c.entities.length, "entity", "entities"], [c.attributes.length, "attribute", "attributes"],
      [c.relations.length, "relation", "relations"], [c.actions.length, "action", "actions"]]
      .filter(([n]) => n).map(([n, one, many]) => `${n} ${n === 1 ? one : many}`).join(" · ");
    const section = el("section", { class: "category", id: `state-${cat}`, "aria-labelledby": `cat-${cat}` },
      el("h3", { id: `cat-${cat}` }, `${cat[0].toUpperCase()}${cat.slice(1)} `,
        el("span", { class: "badge", "data-count": String(total), title: summary || "nothing",
          text: summary || "0" })));
    if (!total) section.append(el("p", { class: "hint", text: "Nothing here." }));
    for (const id of [...new Set(ids)]) {
      const entity = known[id] || { id, name: entityPath(id), entityType: "", cat };
      const attrs = c.attributes.filter((a) => a.entity === id);
      const rels = c.relations.filter((r) => r.subject === id);
      const acts = c.actions.filter((a) => a.actor === id);
      section.append(el("article", { class: "entity-card", "data-entity-card": id },
        el("h4", {}, el("a", { href: `#entity=${entityPath(id)}`, class: "entity-link",
          // its own category's card is the entity's link; a card elsewhere holds facts of other categories
          [entity.cat === cat ? "data-entity" : "data-entity-elsewhere"]: id,
          onclick: (e) => { e.preventDefault(); openEntity(id); } }, entity.name),
          entity.entityType ? el("span", { class: "type", text: entity.entityType }) : null,
          entity.cat !== cat ? el("span", { class: "elsewhere", text: `entity in ${entity.cat}` }) : null),
        attrs.length ? el("dl", {}, attrs.flatMap((a) => [el("dt", { text: a.key }),
          el("dd", { "data-kind": "attribute", "data-id": a.id }, a.value, scopeTag(scoped, `${a.entity}\u0000${a.key}`, a.scopes))])) : null,
        rels.length ? el("ul", { class: "relations" }, rels.map((r) => el("li", { "data-kind": "relation", "data-id": r.id }, `${r.label} → `,
          el("a", { href: "#", onclick: (e) => { e.preventDefault(); openEntity(r.object); } }, entityPath(r.object)),
          scopeTag(scoped, `${r.subject}\u0000rel\u0000${r.label}`, r.scopes)))) : null,
        acts.length ? el("ul", { class: "actions", "aria-label": "Actions" }, acts.map((a) => el("li", { "data-kind": "action", "data-id": a.id },
          el("span", { class: "when", text: `${fmtTime(a.occurredAt || a.createdAt)} ` }), a.summary))) : null));
    }
    parts.push(section);
  }
  parts.push(el("section", { "aria-labelledby": "state-instructions" }, el("h3", { id: "state-instructions", text: "Instructions" }),
    state.instructions.length ? el("ul", {}, state.instructions.map((i) => el("li", {}, el("strong", { text: i.label }), ` ${i.description}`)))
      : el("p", { class: "hint", text: "None." })));
  parts.push(el("section", { "aria-labelledby": "state-uncertain" }, el("h3", { id: "state-uncertain", text: "Open uncertainties" }),
    pending.items.length ? el("ul", {}, pending.items.map((u) => el("li", {}, el("strong", { text: u.about }), ` ${u.reason}`)))
      : el("p", { class: "hint", text: "None." })));
  body.replaceChildren(...parts);
}

// --- entity page: timeline, as-of slider, relations, actions -----------------------------

let entityCurrent = null;

async function openEntity(id) {
  const path = entityPath(id);
  $("#entity-id").value = path;
  show("entity");
  await loadEntity(path);
}

$("#entity-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  loadEntity($("#entity-id").value.trim()).catch((e) => status(e.message, true));
});

async function history(path) {
  const rows = [];
  let cursor = null;
  for (let i = 0; i < 10; i += 1) {
    const page = await api("GET", ctxPath(`/entities/${path}/history`), { params: { limit: 200, cursor } });
    rows.push(...page.history);
    if (!page.page.hasMore) break;
    cursor = page.page.nextCursor;
  }
  return rows;
}

async function loadEntity(path) {
  const body = $("#entity-body");
  if (!path.includes("/")) { showError(body, new Error("Name an entity as type/name, e.g. person/alice.")); return; }
  const [type, ...rest] = path.split("/");
  const encoded = `${encodeURIComponent(type)}/${encodeURIComponent(rest.join("/"))}`;
  let detail, rows;
  try {
    [detail, rows] = await Promise.all([api("GET", ctxPath(`/entities/${encoded}`)), history(encoded)]);
  } catch (err) { showError(body, err); return; }
  const actions = await api("GET", ctxPath("/actions"), { params: { actor: detail.entity.id, limit: 100 } })
    .catch(() => ({ items: [] }));
  entityCurrent = { encoded, detail, rows, actions: actions.items };
  $("#entity-title").textContent = `Entity: ${detail.entity.name}`;
  const times = [...rows, ...detail.relations].flatMap((r) => [r.validFrom || r.createdAt, r.validUntil])
    .concat(actions.items.map((a) => a.occurredAt || a.createdAt)).filter(Boolean).map(Date.parse);
  const now = Date.now();
  const lo = times.length ? Math.min(...times) : now - 86400000;
  const hi = lo + Math.ceil((Math.max(now, ...times) - lo) / 1000) * 1000; // whole seconds, as the slider reads
  // The slider runs along the timeline's own (log) scale, so recent times are as easy to reach
  // as they are to see: its value is a position 0-1000, timeAt/positionOf convert (whole seconds).
  const scale = logTimeScale(lo, hi, 0, 1000);
  const slider = el("input", { id: "asof-slider", type: "range", min: "0", max: "1000", step: "any",
    value: "1000", "aria-describedby": "asof-value", "aria-valuetext": "now" });
  slider.timeAt = (pos) => Math.min(hi, Math.max(lo, Math.round(scale.invert(Number(pos)) / 1000) * 1000));
  slider.positionOf = (t) => scale(Math.min(hi, Math.max(lo, t)));
  const asofText = el("output", { id: "asof-value", for: "asof-slider", text: "now" });
  const asofTable = el("div", { id: "asof-attributes" });
  let timer = null;
  slider.addEventListener("input", () => {
    const t = Number(slider.value) >= 1000 ? hi : slider.timeAt(slider.value);
    asofText.textContent = t >= hi ? "now" : fmtTime(new Date(t).toISOString());
    slider.setAttribute("aria-valuetext", asofText.textContent);
    moveCursor(t);
    clearTimeout(timer);
    timer = setTimeout(() => readAsOf(t >= hi ? null : new Date(t).toISOString()), 120);
  });
  const relList = el("div", { id: "entity-relations" });
  const actList = el("div", { id: "entity-actions" });
  body.replaceChildren(
    el("p", { class: "meta" }, `${detail.entity.entityType} · ${detail.entity.memoryCategory} · importance ${detail.entity.importance}`),
    el("section", { "aria-labelledby": "timeline-h" }, el("h3", { id: "timeline-h", text: "Attribute history" }),
      timeline(rows, lo, hi),
      el("div", { class: "slider" }, el("label", { for: "asof-slider", text: "As of" }), slider, asofText)),
    el("section", { "aria-labelledby": "asof-h" }, el("h3", { id: "asof-h", text: "Attributes at that time" }), asofTable),
    el("section", { "aria-labelledby": "rel-h" }, el("h3", { id: "rel-h", text: "Relations at that time" }), relList),
    el("section", { "aria-labelledby": "act-h" }, el("h3", { id: "act-h", text: "Actions until then" }), actList));
  showAsOf(detail, null);
}

// The attributes, relations and actions of the entity as of ``iso`` (null: now): the entity
// read with asOf gives the facts valid then; actions are those that had happened by then.
function showAsOf(detail, iso) {
  const when = iso ? Date.parse(iso) : Infinity;
  const acts = entityCurrent.actions.filter((a) => Date.parse(a.occurredAt || a.createdAt) <= when);
  const scoped = sideBySide(detail.relations.map((r) => [r.label, r.scopes]));
  const relList = $("#entity-relations"), actList = $("#entity-actions"), table = $("#asof-attributes");
  renderAttrs(detail.attributes, table, { editable: !iso });  // only what is true now is corrected
  relList.replaceChildren(detail.relations.length ? el("ul", {}, detail.relations.map((r) => el("li", { "data-kind": "relation", "data-id": r.id, tabindex: "-1" },
    `${r.label} → `, el("a", { href: "#", onclick: (e) => { e.preventDefault(); openEntity(r.object); } }, entityPath(r.object)),
    scopeTag(scoped, r.label, r.scopes),
    el("span", { class: "when", text: ` since ${fmtTime(r.validFrom)}${r.validUntil ? ` until ${fmtTime(r.validUntil)}` : ""}` }))))
    : el("p", { class: "hint", text: iso ? "None then." : "None." }));
  actList.replaceChildren(acts.length ? el("ul", {}, acts.map((a) => el("li", { "data-kind": "action", "data-id": a.id, tabindex: "-1" },
    el("span", { class: "when", text: `${fmtTime(a.occurredAt || a.createdAt)} ` }), a.summary)))
    : el("p", { class: "hint", text: iso ? "None by then." : "None." }));
  for (const node of [table, relList, actList]) node.dataset.asof = iso || "now";
}

function renderAttrs(attrs, where, { editable = true } = {}) {
  const scoped = sideBySide(attrs.map((a) => [a.key, a.scopes]));
  where.replaceChildren(attrs.length
    ? el("table", {}, el("thead", {}, el("tr", {}, el("th", { text: "Key" }), el("th", { text: "Value" }), el("th", { text: "Valid from" }),
      editable ? el("th", { text: "" }) : null)),
      el("tbody", {}, attrs.map((a) => el("tr", { "data-attr": a.id }, el("td", { text: a.key }),
        el("td", {}, a.value, scopeTag(scoped, a.key, a.scopes)),
        el("td", { text: fmtTime(a.validFrom) }),
        editable ? el("td", {}, el("button", { type: "button", class: "wrong", "aria-label": `This is wrong: ${a.key} ${a.value}`,
          onclick: (e) => correctForm(a, e.target.closest("tr")) }, "This is wrong")) : null))))
    : el("p", { class: "hint", text: "Nothing was true then." }));
}

// "This is wrong": correct the value (a superseding fact, history kept: PATCH) or forget the
// fact (DELETE), then reload the entity so the timeline shows the change.
function correctForm(a, row) {
  document.querySelector("tr.correcting")?.remove();
  const input = el("input", { type: "text", name: "value", value: a.value, "aria-label": `Correct value of ${a.key}` });
  const note = el("input", { type: "text", name: "note", placeholder: "why (optional)", "aria-label": "Why it is wrong" });
  const out = el("span", { class: "hint", role: "status" });
  const reload = () => (entityCurrent ? loadEntity(entityPath(entityCurrent.detail.entity.id)) : loadState());
  const save = async (ev) => {
    ev.preventDefault();
    try {
      const res = await api("PATCH", ctxPath(`/attributes/${encodeURIComponent(a.id)}`),
        { body: { value: input.value, ...(note.value ? { note: note.value } : {}) } });
      const c = res.corrections[0];
      status(c ? `Corrected ${a.key}: ${c.oldValue} → ${c.newValue}` : `Corrected ${a.key}`);
      await reload();
    } catch (err) { out.textContent = err.message; out.classList.add("error"); }
  };
  const forget = async () => {
    try {
      await api("DELETE", ctxPath(`/attributes/${encodeURIComponent(a.id)}`));
      status(`Forgot ${a.key}: ${a.value}`);
      await reload();
    } catch (err) { out.textContent = err.message; out.classList.add("error"); }
  };
  const form = el("form", { class: "correct-form", "aria-label": `Correct ${a.key}` }, input, note,
    el("button", { type: "submit", text: "Save correction" }),
    el("button", { type: "button", text: "Forget it", onclick: forget }),
    el("button", { type: "button", text: "Cancel", onclick: () => form.closest("tr").remove() }), out);
  form.addEventListener("submit", save);
  row.after(el("tr", { class: "correcting" }, el("td", { colspan: "4" }, form)));
  input.focus();
}

async function readAsOf(iso) {
  if (!entityCurrent) return;
  try {
    const detail = await api("GET", ctxPath(`/entities/${entityCurrent.encoded}`), { params: { asOf: iso } });
    showAsOf(detail, iso);
  } catch (err) { showError($("#asof-attributes"), err); }
}

// The timeline's time scale: logarithmic in the time before ``hi`` (now), so the last hour,
// day and week get room of their own however long the history is (on a linear scale a change
// of yesterday in two years' history is a sliver). ``unit`` sets where it bends: up to about
// an hour back it is nearly linear. Returns x(t) for the plot [x0, x1] and its inverse.
function logTimeScale(lo, hi, x0, x1) {
  const span = Math.max(1, hi - lo);
  const unit = Math.min(3_600_000, Math.max(1000, span / 100));
  const whole = Math.log1p(span / unit);
  const x = (t) => x1 - (Math.log1p(Math.max(0, hi - t) / unit) / whole) * (x1 - x0);
  x.invert = (px) => hi - unit * Math.expm1(((x1 - px) / (x1 - x0)) * whole);
  return x;
}

// Ticks a reader can read on that scale: now, then round ages back to the start.
const AGES = [["1 h", 3_600_000], ["1 d", 86_400_000], ["1 w", 604_800_000], ["30 d", 2_592_000_000],
  ["1 y", 31_536_000_000], ["2 y", 63_072_000_000], ["5 y", 157_680_000_000]];

// One row per key; each value a bar over [validFrom, validUntil); an arrow from a value to
// the one that superseded it.
function timeline(rows, lo, hi) {
  // A key whose values were written under more than one scope gets a row per scope: each
  // scope's values supersede only each other, so there two bars can be current at once.
  const scoped = sideBySide(rows.map((r) => [r.key, r.scopes]));
  const lane = (r) => (scoped.has(r.key) ? `${r.key} · ${scopeText(r.scopes)}` : r.key);
  const keys = [...new Set(rows.map(lane))];
  const W = 760, right = 16, rowH = 40, top = 30;
  const left = Math.min(320, Math.max(120, 12 + 7.3 * Math.max(0, ...keys.map((k) => k.length))));  // 12 px monospace
  const H = top + Math.max(1, keys.length) * rowH + 24;
  const x = logTimeScale(lo, hi, left, W - right);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "list", id: "timeline", class: "timeline", "data-scale": "log",
    "aria-label": `Timeline of ${rows.length} attribute values over ${keys.length} keys (log time scale: recent changes get more room)` });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: "7", refY: "4", markerWidth: "7", markerHeight: "7", orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrowhead" }));
  defs.append(marker);
  root.append(defs);
  const ticks = [[fmtTime(new Date(lo).toISOString()).slice(0, 10), lo, "start"], ["now", hi, "end"]];
  for (const [label, age] of AGES) {
    // a tick where it neither crowds the start label nor its neighbour
    if (hi - age > lo && x(hi - age) - x(lo) > 90 && ticks.every(([, t]) => Math.abs(x(t) - x(hi - age)) > 44)) {
      ticks.push([`${label} ago`, hi - age, "middle"]);
    }
  }
  for (const [label, t, anchor] of ticks) {
    const tick = svg("text", { x: String(x(t)), y: "14", class: "axis", "text-anchor": anchor, "data-t": String(t) });
    tick.textContent = label;
    root.append(tick);
    if (anchor === "middle") root.append(svg("line", { class: "gridline", x1: String(x(t)), x2: String(x(t)), y1: "18", y2: String(H - 20) }));
  }
  const pos = {};
  keys.forEach((name_, i) => {
    const y = top + i * rowH;
    const name = svg("text", { x: "4", y: String(y + rowH / 2 + 6), class: "key" });
    name.textContent = name_;
    root.append(name);
    for (const r of rows.filter((row) => lane(row) === name_)) {
      const key = r.key;
      const from = Date.parse(r.validFrom || r.createdAt);
      const until = r.validUntil ? Date.parse(r.validUntil) : hi;
      const x0 = x(from), x1 = Math.max(x(until), x0 + 4);
      const current = !r.validUntil && !r.supersededBy;
      // retracted: a later statement backdated past its whole window, so it never held
      const g = svg("g", { class: `bar${current ? " current" : ""}${r.retracted ? " retracted" : ""}`, "data-attr": r.id,
        "data-key": key, "data-value": r.value, "data-scope": scopeText(r.scopes), tabindex: "0",
        role: "listitem", "aria-label": r.retracted ? `${name_} = ${r.value}, retracted by a later statement`
          : `${name_} = ${r.value}, from ${fmtTime(r.validFrom)} ${r.validUntil ? `until ${fmtTime(r.validUntil)}` : "(current)"}` });
      const title = svg("title");
      title.textContent = r.retracted ? `${r.value}\nretracted: a later statement covered its whole window`
        : `${r.value}\n${fmtTime(r.validFrom)} → ${r.validUntil ? fmtTime(r.validUntil) : "now"}`;
      g.append(title, svg("rect", { x: String(x0), y: String(y + 10), width: String(x1 - x0), height: String(rowH - 16), rx: "3" }));
      const text = svg("text", { x: String(x0 + 5), y: String(y + rowH / 2 + 6), class: "value" });
      text.textContent = r.value;
      g.append(text);
      root.append(g);
      pos[r.id] = { x0, x1, y: y + rowH / 2 + 2 };
    }
  });
  for (const r of rows) {
    const a = pos[r.id], b = r.supersededBy && pos[r.supersededBy];
    if (!a || !b) continue;
    const sx = a.x1 - Math.min(30, (a.x1 - a.x0) / 2), ex = b.x0 + Math.min(30, (b.x1 - b.x0) / 2);
    root.append(svg("path", { class: "supersession", "data-from": r.id, "data-to": r.supersededBy,
      d: `M${sx},${a.y - 12} C${sx},${a.y - 30} ${ex},${b.y - 30} ${ex},${b.y - 12}`,
      "marker-end": "url(#arrow)" }));
  }
  const cursor = svg("line", { id: "asof-line", x1: String(x(hi)), x2: String(x(hi)), y1: String(top - 4), y2: String(H - 20) });
  root.append(cursor);
  root.dataset.lo = lo;
  root.dataset.hi = hi;
  moveCursor.scale = x;
  return root;
}

function moveCursor(t) {
  const line = $("#asof-line");
  if (line && moveCursor.scale) {
    line.setAttribute("x1", String(moveCursor.scale(t)));
    line.setAttribute("x2", String(moveCursor.scale(t)));
  }
}

// --- search -----------------------------------------------------------------------------

$("#search-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = $("#search-body");
  try {
    const result = await api("POST", ctxPath("/query"), { body: {
      query: $("#search-query").value, mode: $("#search-mode").value, k: Number($("#search-k").value) || 10 } });
    body.replaceChildren(
      el("p", { class: "meta", text: `Tier ${result.tier} · ${result.hits.length} hits · ${result.queryMs.toFixed(1)} ms` }),
      el("table", { id: "search-hits" },
        el("thead", {}, el("tr", {}, ["#", "Score", "Kind", "Text", "When"].map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, result.hits.map((h, i) => el("tr", { "data-kind": h.source },
          el("td", { text: String(i + 1) }), el("td", { class: "num", text: h.score.toFixed(4) }),
          el("td", {}, el("span", { class: `kind kind-${h.source}`, text: h.source }), h.role ? ` ${h.role}` : ""),
          el("td", {}, h.text, h.documentTitle ? el("span", { class: "when", text: ` — ${h.documentTitle} (${h.positionPercent}%)` }) : null),
          el("td", { class: "when", text: fmtTime(h.occurredAt) }))))),
      el("details", { id: "search-trace" }, el("summary", { text: "Ranking trace" }),
        el("pre", { text: JSON.stringify(result.trace, null, 2) })));
  } catch (err) { showError(body, err); }
});

// --- chat: SSE over fetch + a stream reader (EventSource cannot POST) ---------------------

let chatSession = null;

function* sseFrames(buffer) {
  let at;
  while ((at = buffer.text.indexOf("\n\n")) >= 0) {
    const raw = buffer.text.slice(0, at);
    buffer.text = buffer.text.slice(at + 2);
    let event = "message";
    const data = [];
    for (const line of raw.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    yield { event, data: data.join("\n") };
  }
}

const bare = (marker) => marker.replace(/^\[|\]$/g, "");

// A reply's text with each known [S1] marker a link to its source: clicking opens what it
// cites (the chunk in its document, the fact on its entity page), as the citation's own link
// does, and marks its entry in the citation list; the href names that entry for other uses.
function withMarkers(text, turnNo, citations = []) {
  const known = new Map(citations.map((c) => [bare(c.marker), c]));
  const out = [];
  let last = 0;
  for (const m of text.matchAll(/\[(S\d+)\]/g)) {
    out.push(text.slice(last, m.index));
    const c = known.get(m[1]);
    out.push(c
      ? el("a", { href: `#cite-${turnNo}-${m[1]}`, class: "marker", "data-id": c.id,
        "aria-label": `open source ${m[1]}: ${c.documentTitle || c.kind}`,
        onclick: (e) => {
          e.preventDefault();
          for (const li of document.querySelectorAll(".citations li.current")) li.classList.remove("current");
          document.getElementById(`cite-${turnNo}-${m[1]}`)?.classList.add("current");
          openCitation(c).catch((err) => status(err.message, true));
        } }, m[0])
      : m[0]);
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}

let chatTurns = 0;
$("#chat-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("#chat-message");
  const message = input.value.trim();
  if (!message) return;
  input.value = "";
  const turnNo = (chatTurns += 1);
  const log = $("#chat-log");
  const reply = el("p", { class: "reply streaming", "aria-busy": "true" });
  const turn = el("article", { class: "chat-turn", "data-turn": String(turnNo) },
    el("p", { class: "user" }, el("strong", { text: "You: " }), message), reply);
  log.append(turn);
  $("#chat-send").disabled = true;
  let text = "";
  try {
    const res = await fetch(url(ctxPath("/chat")), { method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify({ message, stream: true, sessionId: chatSession }) });
    if (!res.ok) throw new ApiError(await res.json().catch(() => ({})), res.status);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const buffer = { text: "" };
    let done = null;
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (value) buffer.text += value;
      for (const frame of sseFrames(buffer)) {
        if (frame.data === "[DONE]") continue;
        const payload = JSON.parse(frame.data);
        if (frame.event === "delta") {
          text += payload.delta;
          reply.textContent = text;
          reply.dataset.deltas = String(Number(reply.dataset.deltas || 0) + 1);
        }
        else if (frame.event === "done") done = payload;
        else if (frame.event === "error") throw new ApiError(payload, payload.status);
      }
      if (ended) break;
    }
    reply.classList.remove("streaming");
    reply.removeAttribute("aria-busy");
    if (done) {
      chatSession = done.sessionId;
      reply.replaceChildren(...withMarkers(done.reply, turnNo, done.citations));
      // append() writes a null argument as the text "null": a reply that learned nothing has no list
      turn.append(...[citationList(done.citations, turnNo), updatesList(done.memoryUpdates)].filter(Boolean));
    }
  } catch (err) {
    reply.classList.remove("streaming");
    reply.replaceChildren(el("span", { class: "error", role: "alert", text: `${err.status || ""} ${err.message}` }));
  } finally {
    $("#chat-send").disabled = false;
  }
});

function citationList(citations, turnNo) {
  if (!citations.length) return el("p", { class: "hint", text: "No sources cited." });
  return el("ol", { class: "citations", "aria-label": "Sources" }, citations.map((c) => el("li", {
    id: `cite-${turnNo}-${bare(c.marker)}`, tabindex: "-1", "data-kind": c.kind, "data-id": c.id },
    el("strong", { text: `[${bare(c.marker)}] ` }), el("span", { class: `kind kind-${c.kind}`, text: c.kind }), " ",
    citedLink(c), el("span", { class: "num", text: ` score ${c.score.toFixed(3)}` }),
    el("blockquote", { text: c.snippet }))));
}

// Where a citation leads, found by its id (never by title or position): the entity page for
// a fact (an attribute's bar, a relation's or action's row focused, superseded ones too), the
// session's turn list for a turn, the document's chunks for a chunk; else a search for it.
const FACT_PATHS = { attribute: "attributes", relation: "relations", action: "actions" };

async function factEntity(c) {
  const path = FACT_PATHS[c.kind];
  if (!path) return null;
  try {
    const fact = await api("GET", ctxPath(`/${path}/${encodeURIComponent(c.id)}`));
    return fact.entity || fact.subject || fact.actor || null;
  } catch (err) {
    if (err.status === 404) return null;  // forgotten since the reply: searched for instead
    throw err;
  }
}

async function openCitation(c) {
  const entity = await factEntity(c);
  if (entity) {
    await openEntity(entity);
    const target = document.querySelector(`#timeline [data-attr="${CSS.escape(c.id)}"]`)
      || document.querySelector(`#entity-body [data-id="${CSS.escape(c.id)}"]`);
    if (target) {
      target.classList.add("cited-target");
      target.focus();
      target.scrollIntoView({ block: "nearest" });
    }
    return;
  }
  const session = c.kind === "turn" ? c.sessionId || chatSession : null;
  if (session) { show("sessions"); await openTurns("session", session, c.id); return; }
  if (c.kind === "chunk" && await openChunksFor(c)) return;
  show("search");
  $("#search-query").value = c.snippet;
  $("#search-form").requestSubmit();
}

function citedLink(c) {
  const label = c.documentTitle ? `${c.documentTitle} (${c.positionPercent}%)` : c.id;
  return el("a", { href: "#", class: "cited", onclick: (e) => { e.preventDefault(); openCitation(c).catch((err) => status(err.message, true)); } }, label);
}

function updatesList(u) {
  if (!u) return null;
  const items = [
    ...(u.corrections || []).map((c) => el("li", { class: "correction" }, `Corrected ${entityPath(c.entityId)} ${c.key}: `,
      el("del", { text: c.oldValue }), " → ", el("ins", { text: c.newValue }))),
    ...(u.attributes || []).map((a) => el("li", {}, "Learned ", el("a", { href: "#", onclick: (e) => { e.preventDefault(); openEntity(a.entityId); } },
      entityPath(a.entityId)), ` ${a.key} = ${a.value}`)),
    ...(u.relations || []).map((r) => el("li", { text: `Learned ${entityPath(r.subject)} ${r.label} ${entityPath(r.object)}` })),
    ...(u.instructions || []).map((i) => el("li", { text: `Instruction: ${i.label || i.description || ""}` })),
  ];
  return items.length ? el("ul", { class: "updates", "aria-label": "Memory updates" }, items) : null;
}

// --- sessions and threads ---------------------------------------------------------------

async function loadSessions() {
  await pager(ctxPath("/sessions"), { list: $("#session-list"), more: $("#sessions-more"),
    render: (s) => el("li", {}, el("button", { type: "button", class: "link", onclick: () => openTurns("session", s.id) }, s.id),
      el("span", { class: "when", text: ` ${fmtTime(s.createdAt)}${s.closedAt ? " · closed" : ""}` })) });
  await pager(ctxPath("/threads"), { list: $("#thread-list"), more: $("#threads-more"),
    render: (t) => el("li", {}, el("button", { type: "button", class: "link", onclick: () => openTurns("thread", t.threadId) }, t.threadId),
      el("span", { class: "when", text: ` ${t.turnCount} turns · partition ${t.partition}` }),
      t.aclReaders ? el("span", { class: "readers", text: ` · readers: ${t.aclReaders.length ? t.aclReaders.join(", ") : "none (quarantined)"}` }) : null) });
}

async function openTurns(kind, id, highlight = null) {
  $("#turns-title").textContent = `Turns of ${kind} ${id}`;
  const path = kind === "session" ? ctxPath(`/sessions/${encodeURIComponent(id)}/turns`)
    : ctxPath(`/threads/${encodeURIComponent(id)}/turns`);
  const render = kind === "session"
    ? (t) => el("li", { id: `turn-${t.id}`, "data-id": t.id, tabindex: "-1", class: t.id === highlight ? "highlight" : null },
      el("span", { class: `role role-${t.role}`, text: t.role }), " ", t.content, el("span", { class: "when", text: ` ${fmtTime(t.observedAt || t.createdAt)}` }))
    : (t) => el("li", { "data-id": t.turnId }, el("span", { class: "role", text: `#${t.turnIndex}` }), " ",
      t.text ?? el("em", { text: "(text not inline)" }), t.aclReaders ? el("span", { class: "readers", text: ` readers: ${t.aclReaders.join(", ") || "none"}` }) : null);
  const list = $("#turn-list"), more = $("#turns-more");
  list.dataset.session = id;
  await pager(path, { list, more, render, key: kind === "session" ? "turns" : "items" });
  if (highlight) {
    // the cited turn may be pages into a long session: page on until it is listed
    for (let i = 0; i < 1000 && !document.getElementById(`turn-${highlight}`) && !more.hidden; i += 1) await more.onclick();
    const li = document.getElementById(`turn-${highlight}`);
    if (li) { li.focus(); li.scrollIntoView({ block: "nearest" }); } else status(`Turn ${highlight} is not in ${kind} ${id} (any more).`, true);
  }
}

// --- documents --------------------------------------------------------------------------

async function loadDocuments() {
  await pager(ctxPath("/documents"), { list: $("#document-list"), more: $("#documents-more"), key: "documents",
    render: (d) => el("li", { "data-id": d.id }, el("button", { type: "button", class: "link", onclick: () => openChunks(d.id, d.title) }, d.title),
      el("span", { class: `doc-status status-${d.status}`, text: ` ${d.status} ${chunkProgress(d)}` })) });
}

// "3/12 chunks", from whichever counts the document carries (never "undefined/12").
function chunkProgress(d) {
  const total = d.chunksTotal ?? d.chunkCount;
  const done = d.chunksDone ?? (d.status === "ready" ? total : null);
  if (total === null || total === undefined) return done === null || done === undefined ? "" : `${done} chunks`;
  return `${done ?? 0}/${total} chunks`;
}

// A document's chunks; with ``highlightId``, pages on until that chunk is listed, then marks
// and focuses it (a cited chunk may sit pages into a long document).
async function openChunks(id, title, highlightId = null) {
  $("#chunks-title").textContent = `Chunks of ${title}`;
  const list = $("#chunk-list"), more = $("#chunks-more");
  list.dataset.document = id;
  await pager(ctxPath(`/documents/${encodeURIComponent(id)}/chunks`), { list, more, key: "chunks",
    render: (c) => el("li", { "data-id": c.id, tabindex: "-1", class: c.id === highlightId ? "highlight" : null,
      "aria-current": c.id === highlightId ? "true" : null },
      c.headingPath.length ? el("span", { class: "when", text: `${c.headingPath.join(" › ")} · ` }) : null,
      el("span", { class: "when", text: `${c.positionPercent}% ` }), c.text) });
  if (!highlightId) return;
  const find = () => list.querySelector(`[data-id="${CSS.escape(highlightId)}"]`);
  for (let i = 0; i < 1000 && !find() && !more.hidden; i += 1) await more.onclick();
  const li = find();
  if (li) { li.focus(); li.scrollIntoView({ block: "center" }); } else status(`Chunk ${highlightId} is not in ${title} (any more).`, true);
}

// A cited chunk opens its own document (by id: titles repeat) at that chunk. A citation
// without a documentId (a reply cached before citations carried it) is searched for instead.
async function openChunksFor(citation) {
  if (!citation.documentId) return false;
  const doc = await api("GET", ctxPath(`/documents/${encodeURIComponent(citation.documentId)}`));
  show("documents");
  await openChunks(doc.id, doc.title || doc.id, citation.id);
  return true;
}

// XMLHttpRequest: the one browser API that reports upload progress. Resolves with the status
// and the parsed JSON body (empty when there is none); rejects on a network error.
function sendWithProgress(method, target, body, hdrs, bar) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, target);
    for (const [k, v] of Object.entries(hdrs)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = Math.round((100 * e.loaded) / e.total); };
    xhr.onerror = () => reject(new Error("network error"));
    xhr.onload = () => {
      let data = {};
      try { data = JSON.parse(xhr.responseText || "{}"); } catch { /* not JSON */ }
      resolve({ status: xhr.status, data });
    };
    xhr.send(body);
  });
}

// A file over the synchronous body cap (413 naming POST /documents/uploads): a presigned upload.
// The ticket's URL is S3 when deployed, the local server's own signed URL locally; the API key
// never goes there (the URL is the permission). Then POST /documents/{id}/complete.
async function presignedUpload(file, title, bar, say) {
  const req = { size: file.size, filename: file.name };
  if (title) req.title = title;
  const ticket = await api("POST", ctxPath("/documents/uploads"), { body: req });
  say(`Uploading ${file.name} (${Math.round(file.size / 1024)} KiB) through a presigned URL…`);
  // The browser sets Content-Length itself (a page may not); the URL is signed for file.size.
  const put = Object.fromEntries(Object.entries(ticket.headers || {}).filter(([k]) => k.toLowerCase() !== "content-length"));
  bar.value = 0;
  const sent = await sendWithProgress(ticket.method || "PUT", ticket.uploadUrl, file, put, bar);
  if (sent.status >= 300) throw new ApiError(sent.data || {}, sent.status);
  return api("POST", ctxPath(`/documents/${encodeURIComponent(ticket.id)}/complete`));
}

$("#upload-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const file = $("#upload-file").files[0];
  if (!file) return;
  const title = $("#upload-title").value.trim();
  const form = new FormData();
  form.append("file", file, file.name);
  if (title) form.append("title", title);
  const bar = $("#upload-progress");
  const status = $("#upload-status");
  const say = (t) => { status.textContent = t; };
  bar.value = 0;
  say(`Uploading ${file.name}…`);
  let doc;
  try {
    const first = await sendWithProgress("POST", url(ctxPath("/documents")), form, headers(), bar);
    if (first.status === 413 && (first.data.code === "use_presigned_upload" || first.data.uploadRoute)) {
      doc = await presignedUpload(file, title, bar, say);
    } else if (first.status >= 400) {
      throw new ApiError(first.data || {}, first.status);
    } else {
      doc = first.data;
    }
  } catch (err) {
    status.dataset.state = "failed";
    say(`Upload failed: ${err.status ? err.status + " " : ""}${err.message || ""}`);
    return;
  }
  bar.value = 100;
  const deduplicated = Boolean(doc.deduplicated);
  say(`${deduplicated ? "Already stored" : "Uploaded"}: ${doc.title || file.name} (${doc.status})`);
  const id = doc.id;
  // The upload's answer has no chunksDone (a re-upload answers "ready" at once): read the document.
  doc = await api("GET", ctxPath(`/documents/${encodeURIComponent(id)}`));
  for (let i = 0; i < 1200 && (doc.status === "ingesting" || doc.status === "uploading"); i += 1) {
    say(`Ingesting ${doc.title || file.name}: ${chunkProgress(doc)}`);
    await new Promise((r) => setTimeout(r, 250));
    doc = await api("GET", ctxPath(`/documents/${encodeURIComponent(id)}`));
  }
  status.dataset.state = doc.status;
  say(`${doc.title}: ${doc.status}, ${chunkProgress(doc)}${deduplicated ? " (already stored)" : ""}`);
  await loadDocuments();
  await openChunks(doc.id, doc.title);
});

// --- memory care: fsck, consolidate and expire (dry runs by default), reflect -------------

// A care verb's trace (GET /traces/{id}), read when the reader opens it.
function traceDetails(traceId) {
  if (!traceId) return null;
  const pre = el("pre", { text: "…" });
  const details = el("details", { class: "care-trace", "data-trace": traceId },
    el("summary", {}, "Trace ", el("code", { text: traceId })), pre);
  details.addEventListener("toggle", async () => {
    if (!details.open || details.dataset.loaded) return;
    try {
      const trace = await api("GET", ctxPath(`/traces/${encodeURIComponent(traceId)}`));
      pre.textContent = JSON.stringify(trace, null, 2);
      details.dataset.loaded = "true";
    } catch (err) { pre.textContent = `${err.status || ""} ${err.message}`; }
  });
  return details;
}

const idList = (ids) => el("span", { class: "ids", text: ids.join(", ") });

function findingItem(kind, f) {
  const what = kind === "contradictions" ? `${entityPath(f.entity || "")} ${f.key}: ${(f.values || []).join(" ≠ ")}`
    : kind === "duplicates" ? `similarity ${Number(f.score || 0).toFixed(2)}` : "";
  return el("li", { "data-kind": kind, "data-ids": f.ids.join(" ") },
    what ? el("strong", { text: `${what} ` }) : null, f.reason, " ", idList(f.ids));
}

$("#fsck-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = $("#fsck-body");
  const req = {};
  if ($("#fsck-check").value) req.check = $("#fsck-check").value;
  if ($("#fsck-threshold").value) req.duplicateThreshold = Number($("#fsck-threshold").value);
  try {
    const report = await api("POST", ctxPath("/fsck"), { body: req });
    const kinds = ["contradictions", "duplicates", "injection"];
    body.replaceChildren(
      el("p", { id: "fsck-total", class: "meta", "data-total": String(report.total),
        text: `${report.total} finding${report.total === 1 ? "" : "s"} · ` +
          kinds.map((k) => `${report[k].length} ${k}`).join(" · ") }),
      ...kinds.map((k) => el("section", { class: "fsck-kind", "data-check": k, "aria-label": k },
        el("h4", { text: `${k[0].toUpperCase()}${k.slice(1)}` }),
        report[k].length ? el("ul", { class: "findings" }, report[k].map((f) => findingItem(k, f)))
          : el("p", { class: "hint", text: "None found." }))));
  } catch (err) { showError(body, err); }
});

$("#consolidate-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = $("#consolidate-body");
  const dryRun = $("#consolidate-dry").checked;
  try {
    const r = await api("POST", ctxPath("/consolidate"), { body: { dryRun } });
    body.replaceChildren(
      el("p", { id: "consolidate-summary", class: "meta", "data-dry-run": String(r.dryRun),
        text: `${r.dryRun ? "Dry run: would create" : "Created"} ${r.created} · update ${r.updated} · supersede ${r.superseded}` }),
      r.outcomes.length ? el("table", { id: "consolidate-outcomes" },
        el("thead", {}, el("tr", {}, ["Outcome", "Entity", "Key", "Value", "Proofs", "Why"].map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, r.outcomes.map((o) => el("tr", { "data-kind": o.kind, "data-key": o.key },
          el("td", {}, el("span", { class: `kind kind-${o.kind}`, text: o.kind })), el("td", { text: o.entityName }),
          el("td", { text: o.key }), el("td", { text: o.value }), el("td", { class: "num", text: String(o.proofCount) }),
          el("td", {}, o.rationale, " ", idList(o.sourceIds || [])))))) : el("p", { class: "hint", text: "Nothing to consolidate." }),
      traceDetails(r.traceId));
  } catch (err) { showError(body, err); }
});

$("#expire-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = $("#expire-body");
  const dryRun = $("#expire-dry").checked;
  try {
    const r = await api("POST", ctxPath("/lifecycle/expire"), { body: { dryRun } });
    body.replaceChildren(
      el("p", { id: "expire-summary", class: "meta", "data-affected": String(r.affected), "data-dry-run": String(!!r.dryRun),
        text: `${r.dryRun ? "Dry run: would remove" : "Removed"} ${r.affected} row${r.affected === 1 ? "" : "s"} past their end or the retention` }),
      (r.ids || []).length ? el("ul", { id: "expire-ids", class: "findings" }, r.ids.map((id) => el("li", { "data-id": id }, el("code", { text: id }))))
        : el("p", { class: "hint", text: "Nothing has expired." }));
  } catch (err) { showError(body, err); }
});

$("#reflect-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = $("#reflect-body");
  try {
    const r = await api("POST", ctxPath("/reflect"), { body: { query: $("#reflect-query").value } });
    body.replaceChildren(
      el("p", { id: "reflection", class: "reflection", text: r.reflection }),
      el("h4", { text: `Evidence (${r.evidence.length})` }),
      r.evidence.length ? el("ul", { id: "reflect-evidence", class: "findings" }, r.evidence.map((id) => el("li", { "data-id": id }, el("code", { text: id }))))
        : el("p", { class: "hint", text: "No evidence: nothing in memory matches." }),
      traceDetails(r.traceId));
  } catch (err) { showError(body, err); }
});

// --- access: who am I, keys, principals ----------------------------------------------------

const grantText = (g) => Object.entries(g || {}).map(([verb, paths]) => `${verb} ${paths.join(", ")}`).join(" · ") || "none";

async function loadAccess() {
  const who = $("#whoami-body");
  let me;
  try {
    me = await api("GET", ctxPath("/me"));
    who.replaceChildren(el("dl", { id: "whoami" },
      el("dt", { text: "Principal" }), el("dd", { id: "whoami-principal", text: me.principalId }),
      el("dt", { text: "Kind" }), el("dd", { text: me.kind }),
      el("dt", { text: "Keys required" }), el("dd", { text: me.enforce ? "yes" : "no (single-user mode)" }),
      me.delegatedPrincipalId ? [el("dt", { text: "On behalf of" }), el("dd", { text: me.delegatedPrincipalId })] : null,
      el("dt", { text: "May do here" }), el("dd", { id: "whoami-effective", text: grantText(me.effectiveGrants) })));
  } catch (err) { showError(who, err); return; }
  // Keys required is decided when the service starts: an open one does not mint keys over HTTP.
  $("#key-secret").textContent = me.enforce ? "" : "This service started without keys required: make a key with "
    + "`agent-memory keys create --principal <name> --admin --data-dir <dir>` and restart it, or start it with "
    + "AGENT_MEMORY_REQUIRE_KEYS=1.";
  await loadKeys();
  await loadPrincipals();
}

const notManaged = (err) => (err.status === 403 ? "This key may not manage keys or grants (grant:manage)." : err.message);

async function loadKeys() {
  const list = $("#key-list");
  try {
    const keys = await api("GET", ctxPath("/keys"));
    list.replaceChildren(...keys.map((k) => el("li", { "data-key": k.name },
      el("strong", { text: k.name }),
      el("span", { class: "when", text: ` ${k.principal} · ${grantText(k.grants)} · created ${fmtTime(k.createdAt)}${k.validUntil ? ` · until ${fmtTime(k.validUntil)}` : ""} ` }),
      el("button", { type: "button", text: "Rotate", onclick: () => keyAction("POST", `/keys/${encodeURIComponent(k.name)}/rotate`) }), " ",
      el("button", { type: "button", text: "Delete", onclick: () => keyAction("DELETE", `/keys/${encodeURIComponent(k.name)}`) }))));
    if (!keys.length) list.append(el("li", { class: "hint", text: "No stored keys here." }));
  } catch (err) { list.replaceChildren(el("li", { class: "hint", text: notManaged(err) })); }
}

function showSecret(minted) {
  $("#key-secret").replaceChildren(`Key ${minted.name} (shown once, copy it now): `, el("code", { id: "minted-key", text: minted.key }));
}

async function keyAction(method, path) {
  try {
    const r = await api(method, ctxPath(path));
    if (r && r.key) showSecret(r);
    else $("#key-secret").textContent = "Deleted.";
    await loadKeys();
  } catch (err) { status(err.message, true); }
}

$("#key-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const name = $("#key-name").value.trim();
  const ttl = $("#key-ttl").value.trim();
  try {
    const minted = await api("POST", ctxPath("/keys"), { body: name ? { name } : {}, params: { ttlSeconds: ttl } });
    showSecret(minted);
    await loadKeys();
  } catch (err) { $("#key-secret").textContent = notManaged(err); }
});

async function loadPrincipals() {
  const list = $("#principal-list");
  try {
    const principals = await api("GET", ctxPath("/principals"));
    list.replaceChildren(...principals.map((p) => el("li", { "data-principal": p.id },
      el("strong", { text: p.displayName || p.id }), el("span", { class: "when", text: ` ${grantText(p.grants)}` }))));
    if (!principals.length) list.append(el("li", { class: "hint", text: "No principals." }));
  } catch (err) { list.replaceChildren(el("li", { class: "hint", text: notManaged(err) })); }
}

// --- start ------------------------------------------------------------------------------

const loaders = { "tab-state": loadState, "tab-sessions": loadSessions, "tab-documents": loadDocuments,
  "tab-access": loadAccess };

if (location.protocol.startsWith("http")) $("#base-url").value = location.origin;
conn.base = $("#base-url").value;
// #context=acme (and &partition=) opens that context; a later change of the hash opens the new one.
function openFromHash() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (!hash.get("context")) return false;
  $("#context").value = hash.get("context");
  if (hash.get("partition")) $("#partition").value = hash.get("partition");
  openContext();
  return true;
}
window.addEventListener("hashchange", openFromHash);
openFromHash();
loadContexts();
