// One memory node: its content verbatim, its facts, the source events it came from (and what
// else came from them), its journal history, its links to other memories, and the saved
// retrievals that ranked it. Each part reads its own route and fails on its own.

import { ApiError } from "../api.js";
import { excerpt, facts, formatScore, formatTime, h, link, route, table } from "../dom.js";
import {
  effectiveTime, isNotFound, jsonText, lifecycleBadge, loadSection, memoryLink, outcomeText,
  sectionProblem,
} from "./memory-parts.js";
import { whyNotForm } from "./receipt_focus.js";

function notFoundPage(id, error) {
  return {
    title: "Memory not found",
    body: h("section", { "aria-labelledby": "memory-title" },
      h("h1", { id: "memory-title", tabindex: "-1" }, "Memory not found"),
      h("p", { class: "error", role: "alert" }, error.status === 422
        ? "That address does not name a memory (a memory id is a UUID)."
        : "Not found: no memory of this owner has that id. It may have been deleted, or belong to another owner."),
      h("p", {}, link("Back to the memories", route("memories")))),
  };
}

function sessionLink(sessionId) {
  return sessionId ? link(sessionId, route("memories", { session_id: sessionId, include_inactive: "true" })) : "—";
}

function nodeFacts(node) {
  return facts([
    ["Id", h("code", {}, node.id)],
    ["Type", node.node_type],
    ["Lifecycle", lifecycleBadge(node.lifecycle_state)],
    ["Scope", node.scope],
    ["Source type", node.source_type],
    ["Epistemic type", node.epistemic_type],
    ["Confidence", formatScore(node.confidence, 2)],
    ["Salience", formatScore(node.salience, 2)],
    ["Session", sessionLink(node.session_id)],
    ["Speaker", node.speaker || "—"],
    ["Event time", formatTime(node.event_time)],
    ["Valid from", formatTime(node.valid_from)],
    ["Valid to", node.valid_to ? formatTime(node.valid_to) : "still valid"],
    ["Created", formatTime(node.created_at)],
    ["Last changed", formatTime(node.updated_at)],
    ["Time to live", node.ttl_days === null || node.ttl_days === undefined ? "never expires" : `${node.ttl_days} days`],
    ["Expires", node.expires_at ? formatTime(node.expires_at) : "never"],
    ["Content SHA-256", h("code", {}, node.content_sha256)],
    ["Metadata", jsonText(node.metadata)],
  ]);
}

// Each source event verbatim, then the other memories derived from it.
async function sourcesSection(ctx, node) {
  return loadSection("Source", "the source events", async () => {
    if (!node.evidence_refs.length) return h("p", { class: "muted" }, "No source event is recorded for this memory.");
    const parts = await Promise.all(node.evidence_refs.map(async (eventId, index) => {
      const label = node.evidence_refs.length > 1 ? `Source event ${index + 1}` : "Source event";
      let event;
      try {
        event = await ctx.api.get(`/v1/events/${encodeURIComponent(eventId)}`);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) throw error;
        if (isNotFound(error)) {
          return h("div", { class: "source-event" }, h("h3", {}, label),
            h("p", { class: "warn" }, "This source event was deleted; only its id remains: ", h("code", {}, eventId)));
        }
        return h("div", { class: "source-event" }, h("h3", {}, label), sectionProblem(error, "this source event"));
      }
      const derived = await ctx.api.get(`/v1/events/${encodeURIComponent(eventId)}/nodes`).catch((error) => {
        if (error instanceof ApiError && error.status === 401) throw error;
        return error;
      });
      let others;
      if (derived instanceof Error) others = sectionProblem(derived, "the memories derived from this source");
      else {
        const rest = derived.filter((other) => other.id !== node.id);
        others = rest.length
          ? table(`Other memories derived from ${label.toLowerCase()}`, ["Memory", "Type", "Lifecycle"],
            rest.map((other) => [memoryLink(other), other.node_type, lifecycleBadge(other.lifecycle_state)]))
          : h("p", { class: "muted" }, "No other memory was derived from this source.");
      }
      return h("div", { class: "source-event" },
        h("h3", {}, label),
        h("div", { class: "memory-text source-text" }, event.content),
        facts([
          ["Role", event.role],
          ["Speaker", event.speaker || "—"],
          ["Session", event.session_id || "—"],
          ["Time", formatTime(event.event_time || event.ingested_at)],
        ]),
        h("p", {}, link(`Open ${label.toLowerCase()}`, route("event", event.id))),
        others);
    }));
    return parts;
  });
}

// What one journal record did to this memory, in words; other memories are links.
function describeOperation(operation, nodeId) {
  const p = operation.payload || {};
  const memory = (id, text) => link(text, route("memory", id));
  const source = (id) => link("its source event", route("event", id));
  switch (operation.operation) {
    case "direct_store":
    case "store":
      return ["Stored from ", p.event_id ? source(p.event_id) : "a source event",
        p.node && p.node.lifecycle_state ? `, as ${p.node.lifecycle_state}` : ""];
    case "ingest":
    case "ingest_fast":
    case "extraction":
      return [`Derived (${operation.operation.replace("_", " ")}) from `, p.event_id ? source(p.event_id) : "a source event"];
    case "supersede":
      if (p.old_node_id === nodeId) return ["Superseded by ", memory(p.new_node_id, "the memory that replaced it"), ": it became superseded"];
      return ["Replaced ", memory(p.old_node_id, "an older memory"), " (supersedes it)"];
    case "mark_contradiction": {
      const other = p.node_a_id === nodeId ? p.node_b_id : p.node_a_id;
      return ["Marked as contradicting ", memory(other, "another memory"), ": both became contested"];
    }
    case "resolve_contradiction":
      if (p.winner_id === nodeId) return ["Contradiction resolved in its favour against ", memory(p.loser_id, "the other memory"), ": it became stable"];
      return ["Contradiction resolved against it in favour of ", memory(p.winner_id, "the other memory"), ": it became deprecated"];
    case "evaluate_condition":
      return [`Condition evaluated: ${p.from_state || "not yet evaluated"} → ${p.to_state}`, p.evaluation_method ? ` (${p.evaluation_method})` : ""];
    case "ttl_expiry_archive":
      return ["Archived when its time to live ran out"];
    case "alias_review": {
      const other = (p.node_ids || []).find((id) => id !== nodeId);
      return [`Alias proposal ${p.decision || "reviewed"}`, p.reviewer_id ? ` by ${p.reviewer_id}` : "",
        other ? [" (with ", memory(other, "the other name"), ")"] : "", p.reason ? `: ${p.reason}` : ""];
    }
    case "node_reinforce": {
      const evidence = p.request && p.request.evidence_id;
      return ["Reinforced", evidence ? [" by ", link("a later source event", route("event", evidence))] : "",
        p.from_state && p.to_state && p.from_state !== p.to_state ? `: ${p.from_state} → ${p.to_state}` : ""];
    }
    default:
      if (operation.operation.startsWith("node_") && p.to_state) {
        return [`Lifecycle ${p.from_state} → ${p.to_state} (${operation.operation.slice(5)})`];
      }
      return [operation.operation.replaceAll("_", " ")];
  }
}

function historyRows(operations, nodeId) {
  return operations.map((operation) => [
    h("time", { datetime: operation.created_at }, formatTime(operation.created_at)),
    h("span", {}, describeOperation(operation, nodeId)),
    operation.verified ? h("span", { class: "badge good" }, "checksum ok")
      : h("span", { class: "badge bad" }, "checksum FAILED: damaged or altered"),
  ]);
}

// The journal records that operated on this memory (GET /v1/nodes/{id}/provenance), oldest
// first; "Show more history" reads the next page into the same table.
function historySection(ctx, node) {
  return loadSection("History", "the journal history", async () => {
    const path = `/v1/nodes/${encodeURIComponent(node.id)}/provenance`;
    const first = await ctx.api.get(path);
    const history = table("Journal records about this memory, oldest first", ["When", "What happened", "Record"], historyRows(first.operations, node.id));
    const body = history.querySelector("tbody");
    const problem = h("p", { class: "error", role: "alert", hidden: true });
    let cursor = first.next_operation_cursor;
    const more = h("button", { type: "button", class: "secondary", hidden: !cursor, onClick: async () => {
      problem.hidden = true;
      more.disabled = true;
      try {
        const next = await ctx.api.get(path, { operation_cursor: cursor });
        historyRows(next.operations, node.id).forEach((cells) => body.append(h("tr", {}, cells.map((cell) => h("td", {}, cell)))));
        cursor = next.next_operation_cursor;
        more.hidden = !cursor;
        ctx.announce(`${next.operations.length} more history records shown.`);
      } catch (error) {
        problem.textContent = ctx.describeError(error);
        problem.hidden = false;
      } finally {
        more.disabled = false;
      }
    } }, "Show more history");
    const missing = first.missing_evidence.length
      ? h("p", { class: "warn" }, `${first.missing_evidence.length} of its source events were deleted.`) : null;
    return [first.operations.length ? history : h("p", { class: "muted" }, "No journal record names this memory."), more, problem, missing];
  });
}

// How an edge reads from this memory's side.
function relation(edge, nodeId) {
  const outgoing = edge.source_node_id === nodeId;
  switch (edge.edge_type) {
    case "supersedes": return outgoing ? "Supersedes" : "Superseded by";
    case "contradicts": return "Contradicts";
    case "alias_of": return outgoing ? "Alias of" : "Has alias";
    default: return outgoing ? `${edge.edge_type} →` : `← ${edge.edge_type}`;
  }
}

// Links to other memories: the edges (GET /v1/nodes/{id}/edges), with the other memory's text
// from the neighbourhood read (GET /v1/nodes/{id}/neighborhood, one hop).
function edgesSection(ctx, node) {
  return loadSection("Links to other memories", "the links to other memories", async () => {
    const id = encodeURIComponent(node.id);
    const [edges, around] = await Promise.all([
      ctx.api.get(`/v1/nodes/${id}/edges`),
      ctx.api.get(`/v1/nodes/${id}/neighborhood`, { max_hops: 1 }).catch((error) => {
        if (error instanceof ApiError && error.status === 401) throw error;
        return { neighbors: [] }; // the links still show, with ids for text
      }),
    ]);
    if (!edges.length) return h("p", { class: "muted" }, "This memory has no links: nothing supersedes or contradicts it, and it has no verified alias.");
    const nearby = new Map(around.neighbors.map((neighbor) => [neighbor.node.id, neighbor.node]));
    const rows = edges.map((edge) => {
      const otherId = edge.source_node_id === node.id ? edge.target_node_id : edge.source_node_id;
      const other = nearby.get(otherId);
      return [
        relation(edge, node.id),
        other ? memoryLink(other) : link(`Memory ${otherId}`, route("memory", otherId)),
        other ? lifecycleBadge(other.lifecycle_state) : "—",
        edge.verified ? h("span", { class: "badge good" }, "verified") : "—",
        h("time", { datetime: edge.created_at }, formatTime(edge.created_at)),
      ];
    });
    return table("Edges between this memory and others", ["Relation", "Other memory", "Its lifecycle", "Verified", "Since"], rows);
  });
}

// Each query links to its receipt focused on this memory (its row highlighted, why at the top).
function retrievalRows(retrievals, nodeId) {
  return retrievals.map((item) => [
    h("time", { datetime: item.created_at }, formatTime(item.created_at)),
    link(excerpt(item.query_truncated ? `${item.query}…` : item.query, 100) || "(empty query)", route("retrieval", item.request_id, { focus: nodeId })),
    item.outcome === "returned" ? h("span", { class: "badge good" }, outcomeText(item.outcome))
      : h("span", { class: "badge bad" }, outcomeText(item.outcome)),
    item.rank === null || item.rank === undefined ? "—" : String(item.rank),
    item.context_of ? ["session context of ", link("a result", route("memory", item.context_of))] : item.context_ref || "—",
  ]);
}

// The saved retrievals that ranked this memory (GET /v1/nodes/{id}/retrievals): one bounded
// scan of receipts, newest first; "Look further back" scans the next, older stretch.
function retrievalsSection(ctx, node) {
  return loadSection("Retrievals that returned it", "the retrievals of this memory", async () => {
    const path = `/v1/nodes/${encodeURIComponent(node.id)}/retrievals`;
    const first = await ctx.api.get(path);
    let scanned = first.scanned;
    let found = first.retrievals.length;
    let cursor = first.next_cursor;
    const summary = h("p", { class: "muted", id: "retrievals-scanned" });
    const describe = () => {
      const more = cursor ? " Older ones were not read yet." : "";
      if (!scanned) summary.textContent = "This owner has no saved retrieval yet.";
      else if (found) {
        summary.textContent = `${found} of the ${scanned} most recent saved retrievals ranked this memory: each returned it, or left it out for the reason shown.${more}`;
      } else summary.textContent = `None of the ${scanned} most recent saved retrievals ranked this memory.${more}`;
    };
    describe();
    const results = table("Saved retrievals that ranked this memory, newest first", ["When", "Query", "Outcome for this memory", "Rank", "Context reference"], retrievalRows(first.retrievals, node.id), { numeric: [3] });
    results.hidden = !found;
    const body = results.querySelector("tbody");
    const problem = h("p", { class: "error", role: "alert", hidden: true });
    const further = h("button", { type: "button", class: "secondary", hidden: !cursor, onClick: async () => {
      problem.hidden = true;
      further.disabled = true;
      try {
        const next = await ctx.api.get(path, { cursor });
        retrievalRows(next.retrievals, node.id).forEach((cells) => body.append(h("tr", {}, cells.map((cell, column) =>
          h("td", { class: column === 3 ? "num" : null }, cell)))));
        scanned += next.scanned;
        found += next.retrievals.length;
        cursor = next.next_cursor;
        results.hidden = !found;
        further.hidden = !cursor;
        describe();
        ctx.announce(`${next.retrievals.length} more retrievals found among ${next.scanned} older receipts.`);
      } catch (error) {
        problem.textContent = ctx.describeError(error);
        problem.hidden = false;
      } finally {
        further.disabled = false;
      }
    } }, "Look further back");
    return [summary, results, further, problem];
  });
}

export async function render(ctx) {
  const nodeId = ctx.parts[0] || "";
  if (!nodeId) return notFoundPage(nodeId, { status: 422 });
  let node;
  try {
    node = await ctx.api.get(`/v1/nodes/${encodeURIComponent(nodeId)}`);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) return notFoundPage(nodeId, error);
    throw error;
  }
  const sections = await Promise.all([
    sourcesSection(ctx, node),
    historySection(ctx, node),
    edgesSection(ctx, node),
    retrievalsSection(ctx, node),
  ]);
  const typeName = node.node_type.charAt(0).toUpperCase() + node.node_type.slice(1);
  return {
    title: `${typeName} memory`,
    body: h("article", { "aria-labelledby": "memory-title", class: "memory-page" },
      h("h1", { id: "memory-title", tabindex: "-1" }, `${typeName} memory`, " ", lifecycleBadge(node.lifecycle_state)),
      h("p", { class: "muted" }, "Its content, exactly as stored:"),
      h("div", { class: "memory-text", id: "memory-content" }, node.content),
      h("section", { "aria-labelledby": "memory-facts-title" },
        h("h2", { id: "memory-facts-title" }, "Facts"),
        nodeFacts(node)),
      sections,
      whyNotForm(ctx, node.id)),
  };
}
