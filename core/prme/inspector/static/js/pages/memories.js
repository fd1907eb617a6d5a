// The owner's memory nodes (GET /v1/nodes) and source events (GET /v1/events), a page at a
// time, with the filters in the address so Back, reload and shared links show the same list.

import { ApiError } from "../api.js";
import { excerpt, field, formatTime, h, link, route, select, table } from "../dom.js";
import {
  LIFECYCLE_STATES, NODE_TYPES, ROLES, SCOPES, choices, effectiveTime, eventLink, lifecycleBadge,
  memoryLink, sectionProblem, sinceInstant, untilInstant,
} from "./memory-parts.js";

const DEFAULT_LIMIT = "25";
const LIMITS = ["10", "25", "50", "100"];
const NODE_FILTERS = ["text", "node_type", "lifecycle_state", "scope", "session_id", "since", "until", "include_inactive", "limit"];
const EVENT_FILTERS = ["text", "role", "session_id", "since", "until", "limit"];

// The filters a view understands, as the hash holds them (empty ones dropped).
function filtersFrom(params, names) {
  const values = {};
  for (const name of names) {
    const value = params.get(name);
    if (value) values[name] = value;
  }
  return values;
}

function viewSwitch(view) {
  const entry = (name, text, params) => h("li", {},
    h("a", { href: route("memories", params), "aria-current": view === name ? "page" : null }, text));
  return h("nav", { "aria-label": "Memory views", class: "view-switch" },
    h("ul", {}, entry("nodes", "Memory nodes", {}), entry("events", "Source events", { view: "events" })));
}

function limitSelect(current) {
  const options = LIMITS.includes(current) ? LIMITS : [...LIMITS, current].sort((a, b) => a - b);
  return select("limit", options.map((value) => [value, value]), current);
}

function dateInput(name, value) {
  return h("input", { type: "date", name, value: value || "" });
}

function textInput(name, value, attributes = {}) {
  return h("input", { type: "text", name, value: value || "", autocomplete: "off", spellcheck: "false", ...attributes });
}

// The form navigates to the filtered list; the list itself is read from the new address.
function filterForm(ctx, view, filters, controls) {
  const form = h("form", { class: "filters", "aria-label": view === "events" ? "Filter source events" : "Filter memories", onSubmit: () => {
    const values = view === "events" ? { view: "events" } : {};
    for (const element of form.elements) {
      if (!element.name) continue;
      if (element.type === "checkbox") values[element.name] = element.checked ? "true" : "";
      else values[element.name] = element.value.trim();
    }
    if (values.limit === DEFAULT_LIMIT) delete values.limit;
    ctx.navigate(route("memories", values));
  } },
  controls,
  h("div", { class: "filter-actions" },
    h("button", { type: "submit" }, "Apply filters"),
    Object.keys(filters).length ? link("Clear filters", route("memories", view === "events" ? { view: "events" } : {})) : null),
  );
  return form;
}

function pager(view, filters, params, nextAfterId, what) {
  const pageNumber = Number(params.get("page") || "1");
  const base = view === "events" ? { view: "events", ...filters } : { ...filters };
  const links = [];
  if (params.get("after")) links.push(link("First page", route("memories", base)));
  if (nextAfterId) {
    links.push(link("Next page", route("memories", { ...base, after: nextAfterId, page: String(pageNumber + 1) })));
  }
  if (!links.length) return null;
  return h("nav", { class: "pager", "aria-label": `Pages of ${what}` }, links);
}

// A refused read shows below the form, which stays, so the filter can be corrected.
async function listOrProblem(read, what) {
  try {
    return { page: await read() };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) throw error;
    return { problem: sectionProblem(error, what) };
  }
}

async function renderNodes(ctx) {
  const { params } = ctx;
  const filters = filtersFrom(params, NODE_FILTERS);
  const limit = filters.limit || DEFAULT_LIMIT;
  const form = filterForm(ctx, "nodes", filters, [
    field("Search text", textInput("text", filters.text, { type: "search", size: 24 }), "Words the memory contains, any case"),
    field("Type", select("node_type", choices(NODE_TYPES, "Any type"), filters.node_type)),
    field("Lifecycle", select("lifecycle_state", choices(LIFECYCLE_STATES, "Any current state"), filters.lifecycle_state)),
    field("Scope", select("scope", choices(SCOPES, "Any scope"), filters.scope)),
    field("Session", textInput("session_id", filters.session_id, { size: 18 })),
    field("From date", dateInput("since", filters.since), "UTC; event time, else when stored"),
    field("Until date", dateInput("until", filters.until), "UTC, that day included"),
    field("Include inactive", h("input", { type: "checkbox", name: "include_inactive", value: "true", checked: filters.include_inactive === "true" }), "Superseded, deprecated, archived"),
    field("Per page", limitSelect(limit)),
  ]);
  const { page, problem } = await listOrProblem(() => ctx.api.get("/v1/nodes", {
    text: filters.text,
    node_type: filters.node_type,
    lifecycle_state: filters.lifecycle_state,
    scope: filters.scope,
    session_id: filters.session_id,
    since: sinceInstant(filters.since),
    until: untilInstant(filters.until),
    include_inactive: filters.include_inactive === "true" ? "true" : undefined,
    limit,
    after_id: params.get("after") || undefined,
  }), "the memories");
  const pageNumber = Number(params.get("page") || "1");
  let results = problem;
  if (page) {
    const rows = page.items.map((node) => [
      memoryLink(node),
      node.node_type,
      lifecycleBadge(node.lifecycle_state),
      node.scope,
      node.session_id || "—",
      h("time", { datetime: effectiveTime(node) }, formatTime(effectiveTime(node))),
    ]);
    results = [
      h("p", { class: "muted", id: "memories-count" }, page.items.length
        ? `Page ${pageNumber}: ${page.items.length} memories${page.next_after_id ? "; more follow" : ""}.`
        : page.next_after_id ? "No matching memories on this page; more may follow." : "No memories match these filters."),
      rows.length ? table(`Memory nodes, page ${pageNumber}`, ["Memory", "Type", "Lifecycle", "Scope", "Session", "Time"], rows) : null,
      pager("nodes", filters, params, page.next_after_id, "memories"),
    ];
  }
  return {
    title: "Memories",
    body: h("section", { "aria-labelledby": "memories-title" },
      h("h1", { id: "memories-title", tabindex: "-1" }, "Memories"),
      viewSwitch("nodes"),
      h("p", { class: "muted" }, "Memory nodes derived from what was stored, in id order. Superseded, deprecated and archived ones show only with \"Include inactive\" or when their state is chosen."),
      form,
      results),
  };
}

async function renderEvents(ctx) {
  const { params } = ctx;
  const filters = filtersFrom(params, EVENT_FILTERS);
  const limit = filters.limit || DEFAULT_LIMIT;
  const form = filterForm(ctx, "events", filters, [
    field("Search text", textInput("text", filters.text, { type: "search", size: 24 }), "Words the source contains, any case"),
    field("Role", select("role", choices(ROLES, "Any role"), filters.role)),
    field("Session", textInput("session_id", filters.session_id, { size: 18 })),
    field("From date", dateInput("since", filters.since), "UTC; event time, else when stored"),
    field("Until date", dateInput("until", filters.until), "UTC, that day included"),
    field("Per page", limitSelect(limit)),
  ]);
  const { page, problem } = await listOrProblem(() => ctx.api.get("/v1/events", {
    text: filters.text,
    role: filters.role,
    session_id: filters.session_id,
    since: sinceInstant(filters.since),
    until: untilInstant(filters.until),
    limit,
    after_id: params.get("after") || undefined,
  }), "the source events");
  const pageNumber = Number(params.get("page") || "1");
  let results = problem;
  if (page) {
    const rows = page.items.map((event) => [
      eventLink(event),
      event.role,
      event.speaker ? excerpt(event.speaker, 100) : "—",
      event.session_id || "—",
      h("time", { datetime: event.event_time || event.ingested_at }, formatTime(event.event_time || event.ingested_at)),
    ]);
    results = [
      h("p", { class: "muted", id: "events-count" }, page.items.length
        ? `Page ${pageNumber}: ${page.items.length} source events${page.next_after_id ? "; more follow" : ""}.`
        : page.next_after_id ? "No matching source events on this page; more may follow." : "No source events match these filters."),
      rows.length ? table(`Source events, page ${pageNumber}`, ["Source event", "Role", "Speaker", "Session", "Time"], rows) : null,
      pager("events", filters, params, page.next_after_id, "source events"),
    ];
  }
  return {
    title: "Source events",
    body: h("section", { "aria-labelledby": "memories-title" },
      h("h1", { id: "memories-title", tabindex: "-1" }, "Source events"),
      viewSwitch("events"),
      h("p", { class: "muted" }, "What was stored or ingested, verbatim, in id order. Each source event backs the memory nodes derived from it."),
      form,
      results),
  };
}

export async function render(ctx) {
  return ctx.params.get("view") === "events" ? renderEvents(ctx) : renderNodes(ctx);
}
