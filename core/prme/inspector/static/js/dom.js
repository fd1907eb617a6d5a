// Building the page without HTML strings. Memory content, queries and every other value the
// API returns are untrusted text: they only ever become Text nodes or attribute values set
// through setAttribute, never markup. No module of the inspector may use innerHTML,
// outerHTML, insertAdjacentHTML or document.write (tests/unit/test_inspector_assets.py).

// Attributes a page may set. Event handlers (on*) and URL-bearing attributes other than href
// are not in the list; href must be a same-page route (see link()).
const ALLOWED_ATTRIBUTES = new Set([
  "id", "class", "for", "type", "name", "value", "placeholder", "role", "tabindex", "title",
  "hidden", "disabled", "required", "min", "max", "maxlength", "step", "autocomplete",
  "spellcheck", "rows", "cols", "scope", "colspan", "lang", "dir", "datetime", "checked",
  "selected", "multiple", "inputmode", "size", "href",
]);

function setAttribute(node, name, value) {
  if (value === undefined || value === null || value === false) return;
  const allowed = ALLOWED_ATTRIBUTES.has(name) || name.startsWith("aria-") || name.startsWith("data-");
  if (!allowed) throw new Error(`attribute not allowed: ${name}`);
  if (name === "href" && !String(value).startsWith("#/")) {
    throw new Error("links go to inspector routes only");
  }
  node.setAttribute(name, value === true ? "" : String(value));
}

// h("p", {class: "x"}, "text", child, [more, children]) -> <p class="x">text…</p>.
// Strings and numbers become Text nodes; null, undefined and false are skipped.
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (name === "onClick") node.addEventListener("click", value);
    else if (name === "onSubmit") {
      node.addEventListener("submit", (event) => { event.preventDefault(); value(event); });
    } else if (name === "onChange") node.addEventListener("change", value);
    else if (name === "onInput") node.addEventListener("input", value);
    else if (name === "onKeydown") node.addEventListener("keydown", value);
    else setAttribute(node, name, value);
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// A link to an inspector route: route("memory", id) -> "#/memory/<id>" with each part
// encoded, and optional query parameters.
export function route(name, ...parts) {
  let params = null;
  if (parts.length && typeof parts[parts.length - 1] === "object" && parts[parts.length - 1] !== null) {
    params = parts.pop();
  }
  const path = [name, ...parts].map((part) => encodeURIComponent(String(part))).join("/");
  const query = params ? new URLSearchParams(
    Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  ).toString() : "";
  return `#/${path}${query ? `?${query}` : ""}`;
}

export function link(text, href, attributes = {}) {
  return h("a", { ...attributes, href }, text);
}

// A labelled form control: the label's `for` names the control's id.
let fieldCounter = 0;
export function field(labelText, control, hint) {
  if (!control.id) control.id = `field-${++fieldCounter}`;
  const parts = [h("label", { for: control.id }, labelText), control];
  if (hint) {
    const hintNode = h("span", { class: "muted", id: `${control.id}-hint` }, hint);
    control.setAttribute("aria-describedby", hintNode.id);
    parts.push(hintNode);
  }
  return h("div", { class: "field" }, parts);
}

export function select(name, options, current) {
  const node = h("select", { name });
  for (const [value, text] of options) {
    node.append(h("option", { value, selected: value === (current ?? "") }, text));
  }
  return node;
}

// Definition list of [term, value] pairs; a value may be a string or a node.
export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== undefined).flatMap(
    ([term, value]) => [h("dt", {}, term), h("dd", {}, value ?? "—")],
  ));
}

// A table with a caption, column headers and rows of cells (strings or nodes).
export function table(caption, headers, rows, { numeric = [] } = {}) {
  const numericSet = new Set(numeric);
  return h("table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((text, i) =>
      h("th", { scope: "col", class: numericSet.has(i) ? "num" : null }, text)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell, i) =>
      h("td", { class: numericSet.has(i) ? "num" : null }, cell))))),
  );
}

export function formatTime(iso) {
  if (!iso) return "—";
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return String(iso);
  return when.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function formatScore(value, digits = 4) {
  if (value === null || value === undefined) return "—";
  return Number(value).toFixed(digits);
}

// The first `limit` characters of untrusted text, for list rows (still shown as text).
export function excerpt(text, limit = 160) {
  const value = String(text ?? "");
  return value.length > limit ? `${value.slice(0, limit - 1)}…` : value;
}
