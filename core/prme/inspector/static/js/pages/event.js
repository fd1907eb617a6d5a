// One source event verbatim (GET /v1/events/{id}), the memory nodes derived from it, and how
// far its indexing and extraction got.

import { ApiError } from "../api.js";
import { facts, formatTime, h, link, route, table } from "../dom.js";
import { effectiveTime, jsonText, lifecycleBadge, loadSection, memoryLink } from "./memory-parts.js";

function notFoundPage(error) {
  return {
    title: "Source event not found",
    body: h("section", { "aria-labelledby": "event-title" },
      h("h1", { id: "event-title", tabindex: "-1" }, "Source event not found"),
      h("p", { class: "error", role: "alert" }, error.status === 422
        ? "That address does not name a source event (an event id is a UUID)."
        : "Not found: no source event of this owner has that id. It may have been deleted, or belong to another owner."),
      h("p", {}, link("Back to the source events", route("memories", { view: "events" })))),
  };
}

function statusBadge(status) {
  const tone = status === "completed" ? "good" : status === "failed" ? "bad" : null;
  return h("span", { class: tone ? `badge ${tone}` : "badge" }, status);
}

function derivedSection(ctx, event) {
  return loadSection("Memories derived from it", "the memories derived from this event", async () => {
    const nodes = await ctx.api.get(`/v1/events/${encodeURIComponent(event.id)}/nodes`);
    if (!nodes.length) return h("p", { class: "muted" }, "No memory node names this event as its source (yet: extraction may still be pending).");
    return table("Memory nodes derived from or reinforced by this event", ["Memory", "Type", "Lifecycle", "Time"],
      nodes.map((node) => [memoryLink(node), node.node_type, lifecycleBadge(node.lifecycle_state),
        h("time", { datetime: effectiveTime(node) }, formatTime(effectiveTime(node)))]));
  });
}

function workTable(caption, work) {
  if (!work.length) return null;
  return table(caption, ["Work", "Status", "Attempts", "Last error", "Updated"], work.map((item) => [
    item.kind.replaceAll("_", " "), statusBadge(item.status), String(item.attempts), item.last_error || "—", formatTime(item.updated_at),
  ]), { numeric: [2] });
}

// Indexing (GET …/processing-status), extraction (GET …/extraction-status) and the saved
// extraction's summary (GET …/extraction; none is a 404).
function processingSection(ctx, event) {
  return loadSection("Processing", "this event's processing status", async () => {
    const base = `/v1/events/${encodeURIComponent(event.id)}`;
    const [processing, extraction, saved] = await Promise.all([
      ctx.api.get(`${base}/processing-status`),
      ctx.api.get(`${base}/extraction-status`),
      ctx.api.get(`${base}/extraction`).catch((error) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }),
    ]);
    const extracted = saved && saved.extraction ? saved.extraction : saved;
    const count = (items, one, many) => `${(items || []).length} ${(items || []).length === 1 ? one : many}`;
    const summary = extracted && extracted.extractor
      ? `by ${extracted.extractor}: ${count(extracted.entities, "entity", "entities")}, ${count(extracted.claims, "claim", "claims")}, ${count(extracted.quantities, "quantity", "quantities")}, ${count(extracted.relationships, "relationship", "relationships")}`
      : "none saved";
    return [
      facts([
        ["Indexing", statusBadge(processing.processing_status)],
        ["Extraction", statusBadge(extraction.extraction_status)],
        ["Saved extraction", summary],
      ]),
      workTable("Indexing work", processing.work),
      workTable("Extraction work", extraction.work),
    ];
  });
}

export async function render(ctx) {
  const eventId = ctx.parts[0] || "";
  if (!eventId) return notFoundPage({ status: 422 });
  let event;
  try {
    event = await ctx.api.get(`/v1/events/${encodeURIComponent(eventId)}`);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) return notFoundPage(error);
    throw error;
  }
  const sections = await Promise.all([derivedSection(ctx, event), processingSection(ctx, event)]);
  return {
    title: "Source event",
    body: h("article", { "aria-labelledby": "event-title", class: "event-page" },
      h("h1", { id: "event-title", tabindex: "-1" }, "Source event"),
      h("p", { class: "muted" }, "What was stored, exactly as it was sent:"),
      h("div", { class: "memory-text", id: "event-content" }, event.content),
      h("section", { "aria-labelledby": "event-facts-title" },
        h("h2", { id: "event-facts-title" }, "Facts"),
        facts([
          ["Id", h("code", {}, event.id)],
          ["Role", event.role],
          ["Speaker", event.speaker || "—"],
          ["Session", event.session_id ? link(event.session_id, route("memories", { view: "events", session_id: event.session_id })) : "—"],
          ["Scope", event.scope],
          ["Event time", formatTime(event.event_time)],
          ["Stored at", formatTime(event.ingested_at)],
          ["Content SHA-256", h("code", {}, event.content_sha256)],
          ["Metadata", jsonText(event.metadata)],
        ])),
      sections),
  };
}
