// Pieces the memory pages share: the API's value lists, links to memories and events, and a
// section that loads on its own so one failing read never takes the whole page down.

import { ApiError, describeError } from "../api.js";
import { excerpt, h, link, route } from "../dom.js";

export const NODE_TYPES = ["entity", "event", "fact", "decision", "preference", "task", "summary", "note", "instruction"];
export const LIFECYCLE_STATES = ["tentative", "stable", "contested", "superseded", "deprecated", "archived"];
export const SCOPES = ["personal", "project", "organisation", "agent", "system", "sandbox"];
export const ROLES = ["user", "participant", "assistant", "tool", "system"];
const INACTIVE_STATES = new Set(["superseded", "deprecated", "archived"]);

export function choices(values, anyText) {
  return [["", anyText], ...values.map((value) => [value, value])];
}

// A route the server does not have answers 404/405 without the API's `error` code; an
// unknown or foreign record answers 404 with `"error": "not_found"`.
export function isMissingRoute(error) {
  return error instanceof ApiError && (error.status === 404 || error.status === 405) && !error.code;
}

export function isNotFound(error) {
  return error instanceof ApiError && error.status === 404 && Boolean(error.code);
}

export function lifecycleBadge(state) {
  const tone = state === "stable" ? "good" : INACTIVE_STATES.has(state) || state === "contested" ? "bad" : null;
  return h("span", { class: tone ? `badge ${tone}` : "badge" }, state);
}

// Memory content is the link text (as text); the link's target is the memory's page.
export function memoryLink(node, limit = 120) {
  return link(excerpt(node.content, limit) || "(empty)", route("memory", node.id));
}

export function eventLink(event, limit = 120) {
  return link(excerpt(event.content, limit) || "(empty)", route("event", event.id));
}

// Metadata is caller JSON: shown as indented text, never as markup.
export function jsonText(value) {
  if (!value || (typeof value === "object" && Object.keys(value).length === 0)) return "none";
  return h("pre", { class: "memory-text metadata" }, JSON.stringify(value, null, 2));
}

// The filter form keeps dates (YYYY-MM-DD, a UTC day) in the hash; the API takes instants.
// `since` is the start of its day, `until` the start of the day after (the API's bound is
// exclusive, the form's "until" day is included).
const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function sinceInstant(day) {
  if (!day) return undefined;
  return DAY.test(day) ? `${day}T00:00:00Z` : day;
}

export function untilInstant(day) {
  if (!day) return undefined;
  if (!DAY.test(day)) return day;
  const [year, month, date] = day.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, date + 1)).toISOString().replace(".000Z", "Z");
}

// A page section (h2 and body) whose content comes from its own API read. A route this
// server lacks, or any other refusal, shows as a message in the section only.
let sectionCounter = 0;
export async function loadSection(title, what, load) {
  const heading = h("h2", { id: `memory-section-${++sectionCounter}` }, title);
  const section = h("section", { "aria-labelledby": heading.id, class: "memory-section" }, heading);
  try {
    section.append(...[await load()].flat().filter(Boolean));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) throw error; // the shell signs out
    section.append(sectionProblem(error, what));
  }
  return section;
}

export function sectionProblem(error, what) {
  if (isMissingRoute(error)) {
    return h("p", { class: "warn" }, `This server cannot show ${what} yet (its API has no route for it).`);
  }
  if (!(error instanceof ApiError)) {
    return h("p", { class: "error", role: "alert" }, `Could not show ${what}: ${error.message}`);
  }
  return h("p", { class: "error", role: "alert" }, `Could not show ${what}. ${describeError(error)}`);
}

// Why a retrieval left a candidate out, in words (the receipt's outcome codes).
const OUTCOME_TEXT = {
  returned: "returned",
  filtered: "left out: did not pass the request's filters",
  min_score: "left out: below min_score",
  source_limit: "left out: per-source cap (max_per_source)",
  evidence_limit: "left out: per-evidence cap",
  limit: "left out: past the result limit",
  token_budget: "left out: did not fit the token budget",
  response_size: "left out: past the response size limit",
};

export function outcomeText(outcome) {
  return OUTCOME_TEXT[outcome] || `left out: ${outcome}`;
}

export function effectiveTime(record) {
  return record.event_time || record.created_at || record.ingested_at || null;
}
