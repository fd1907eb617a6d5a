// "Why did the agent see this memory, and why not that one?" On a receipt page: a search box
// that narrows the candidates table, and `?focus=<node id>`, which highlights that memory's
// row and says at the top, in words, why it was returned, left out, or never a candidate.
// On a memory's page: a question form that runs a retrieval and opens its receipt so focused.

import { ApiError } from "../api.js";
import { excerpt, field, formatTime, h, link, route } from "../dom.js";
import { leftOutReason } from "../receipt_words.js";

// The engine's default mode searches no memory in these states or of these epistemic types
// (model/enums.py INACTIVE_LIFECYCLE_STATES, DEFAULT_EXCLUDED_EPISTEMIC_TYPES).
const INACTIVE_STATE_WORDS = {
  superseded: "superseded: a newer memory replaced it",
  deprecated: "deprecated: a contradiction was resolved against it",
  archived: "archived: its time to live ran out, or it was archived on purpose",
};
const LEFT_OUT_EPISTEMIC_WORDS = {
  hypothetical: "a hypothetical statement (speculation)",
  deprecated: "a retracted statement",
};

const MEMORY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function nodePath(nodeId, tail = "") {
  return `/v1/nodes/${encodeURIComponent(nodeId)}${tail}`;
}

function later(iso, than) {
  return Boolean(iso) && Boolean(than) && new Date(iso).getTime() > new Date(than).getTime();
}

function earlier(iso, than) {
  return Boolean(iso) && Boolean(than) && new Date(iso).getTime() < new Date(than).getTime();
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

// The node, or { missing: 404 | 422 }, or { error } when it could not be read.
async function readNode(api, nodeId) {
  try {
    return { node: await api.get(nodePath(nodeId)) };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) throw error;
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) return { missing: error.status };
    return { error };
  }
}

function memoryAnchor(nodeId, node, length = 120) {
  if (!node) return link(`memory ${nodeId}`, route("memory", nodeId));
  return link(excerpt(node.content, length) || "(empty)", route("memory", nodeId));
}

// The memory that replaced a superseded one (a supersedes edge points from the new to the old),
// with its text when it can be read; null when none is recorded or the edges cannot be read.
async function replacementOf(api, nodeId) {
  let edges;
  try {
    edges = await api.get(nodePath(nodeId, "/edges"));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) throw error;
    return null;
  }
  const edge = edges.find((item) => item.edge_type === "supersedes" && item.target_node_id === nodeId);
  if (!edge) return null;
  const { node } = await readNode(api, edge.source_node_id);
  return memoryAnchor(edge.source_node_id, node, 90);
}

function filterList(value) {
  if (value === null || value === undefined) return null;
  return Array.isArray(value) ? value : [value];
}

// Each of the request's filters (config.filters) that this memory fails, in words.
function filterReasons(filters, node) {
  const reasons = [];
  const scopes = filterList(filters.scope);
  if (scopes && !scopes.includes(node.scope)) {
    reasons.push(`The request's scope filter (${scopes.join(", ")}) leaves it out: its scope is ${node.scope}.`);
  }
  const excluded = filterList(filters.exclude_node_types);
  if (excluded && excluded.includes(node.node_type)) {
    reasons.push(`The request left out memories of type ${node.node_type} (exclude_node_types), and this one is a ${node.node_type}.`);
  }
  const sources = filterList(filters.source_types);
  if (sources && !sources.includes(node.source_type)) {
    reasons.push(sources.length
      ? `The request allowed only the source types ${sources.join(", ")}: this memory's is ${node.source_type}.`
      : "The request allowed no source type at all (source_types: []), so nothing could be found.");
  }
  const effective = node.event_time || node.created_at;
  if (earlier(effective, filters.time_from)) {
    reasons.push(`The request asked for memories from ${formatTime(filters.time_from)} on (time_from); this one is from ${formatTime(effective)}.`);
  }
  if (later(effective, filters.time_to)) {
    reasons.push(`The request asked for memories up to ${formatTime(filters.time_to)} (time_to); this one is from ${formatTime(effective)}.`);
  }
  if ((filters.event_time_from || filters.event_time_to) && !node.event_time) {
    reasons.push("The request filtered on event time (event_time_from / event_time_to), and this memory has no event time.");
  } else {
    if (earlier(node.event_time, filters.event_time_from)) {
      reasons.push(`The request asked for events from ${formatTime(filters.event_time_from)} on (event_time_from); this one happened ${formatTime(node.event_time)}.`);
    }
    if (later(node.event_time, filters.event_time_to)) {
      reasons.push(`The request asked for events up to ${formatTime(filters.event_time_to)} (event_time_to); this one happened ${formatTime(node.event_time)}.`);
    }
  }
  return reasons;
}

// Why a memory that exists is not among a receipt's candidates: a list of reasons (strings or
// arrays of strings and nodes), from the first that settles it to the fallback "not among the
// best matches". A memory's lifecycle only moves forward, so one active now was active then.
async function absenceReasons(api, receipt, node) {
  const ranAt = receipt.created_at;
  if (later(node.created_at, ranAt)) {
    return [[`It was stored after this retrieval ran (stored ${formatTime(node.created_at)}; the retrieval ran ${formatTime(ranAt)}), so the search could not find it. `,
      link("Ask the same question again", route("ask", { q: receipt.query })), " to see where it ranks now."]];
  }
  const config = receipt.config;
  const defaultMode = config.mode !== "explicit";
  const reasons = [];
  const stateWords = INACTIVE_STATE_WORDS[node.lifecycle_state];
  if (stateWords) {
    const since = node.lifecycle_state === "superseded" ? node.valid_to || node.updated_at : node.updated_at;
    if (later(since, ranAt)) {
      reasons.push(`It is ${node.lifecycle_state} now, but it changed after this retrieval ran (${formatTime(since)}), so at the time it may still have been current.`);
    } else if (defaultMode) {
      const replacement = node.lifecycle_state === "superseded" ? await replacementOf(api, node.id) : null;
      reasons.push([`It is not current: it is ${stateWords}`, since ? ` (${formatTime(since)})` : "",
        ". This retrieval used the default mode, which searches only current memories; the explicit mode would have searched it too.",
        replacement ? [" It was replaced by: ", replacement, "."] : ""]);
    }
  }
  if (defaultMode && LEFT_OUT_EPISTEMIC_WORDS[node.epistemic_type]) {
    reasons.push(`It is ${LEFT_OUT_EPISTEMIC_WORDS[node.epistemic_type]}, and the default mode leaves those out.`);
  }
  if (defaultMode && node.epistemic_type === "conditional") {
    reasons.push("It is conditional, and the default mode returns a conditional memory only once its condition is known to hold.");
  }
  if (node.expires_at && !later(node.expires_at, ranAt)) {
    reasons.push(`It had expired when the retrieval ran (it expired ${formatTime(node.expires_at)}): expired memories are never searched.`);
  }
  reasons.push(...filterReasons(config.filters || {}, node));
  if (reasons.length) return reasons;
  const depth = config.candidate_depth;
  const channels = depth
    ? `each search channel (vector: meaning; lexical: words) returns only its best ${depth} matches, and this memory ranked lower than ${depth} in every one`
    : "each search channel (vector: meaning; lexical: words) returns only its best matches, and this memory ranked below them in every one (this receipt does not record how many each returns)";
  const failed = (receipt.backend_failures || []).length
    ? ` The ${receipt.backend_failures.join(", ")} search failed in this retrieval, so only the others searched.` : "";
  return [`It was searched but not among the best matches of any search channel: ${channels}. A question that shares more of its words or meaning would find it.${failed}`];
}

// The summary box for a memory that is among the candidates.
function candidateSummary(receipt, index, node) {
  const candidate = receipt.candidates[index];
  const fused = receipt.candidates.filter((item) => !item.context_of).length;
  const rank = receipt.candidates.slice(0, index + 1).filter((item) => !item.context_of).length;
  const entry = (receipt.context.entries || []).find((item) => item.node_id === candidate.node_id);
  const packExcluded = (receipt.context.excluded || []).some((item) => item.node_id === candidate.node_id);
  const where = entry
    ? entry.representation === "full"
      ? `returned as [${entry.ref}] in the context`
      : `returned as [${entry.ref}], folded into [${entry.folded_into}] (its text repeats that entry's)`
    : packExcluded
      ? "returned in the results, but not in the context: it did not fit the token budget"
      : "returned in the results, not in the context";
  let verdict;
  if (candidate.context_of) {
    verdict = ["This memory was not ranked by the search: it was added as session context of ",
      link("another result", route("memory", candidate.context_of)), ` (said next to it) and ${where}.`];
  } else if (candidate.outcome === "returned") {
    verdict = `This memory was ranked #${rank} of ${plural(fused, "candidate")}: ${where}.`;
  } else {
    verdict = `This memory was ranked #${rank} of ${plural(fused, "candidate")}: left out: ${leftOutReason(candidate.outcome, receipt.config, candidate)}.`;
  }
  return {
    verdict: h("p", { class: "focus-verdict", "data-outcome": candidate.outcome }, verdict),
    spoken: typeof verdict === "string" ? verdict : "This memory was added as session context.",
    memory: memoryAnchor(candidate.node_id, node),
  };
}

// The summary box for a memory that is not among the candidates.
async function absenceSummary(api, receipt, nodeId) {
  // Not asked of the server: an id with a slash would read as another route's 404.
  const read = MEMORY_ID.test(nodeId) ? await readNode(api, nodeId) : { missing: 422 };
  const count = plural(receipt.candidates.length, "candidate");
  if (read.missing === 422) {
    return { verdict: h("p", { class: "focus-verdict", "data-outcome": "not-an-id" }, "The address names no memory: ", h("code", {}, nodeId), " is not a memory id (a UUID)."), spoken: "That is not a memory id." };
  }
  if (read.missing === 404) {
    return {
      verdict: h("p", { class: "focus-verdict", "data-outcome": "deleted" },
        `This memory is not among the ${count}, and no memory of this owner has the id `, h("code", {}, nodeId),
        " now: it was deleted (a deleted memory is never searched), or the id belongs to no memory of this owner."),
      spoken: "This memory is not among the candidates: it was deleted or does not exist.",
    };
  }
  if (read.error) {
    return {
      verdict: h("p", { class: "focus-verdict error", "data-outcome": "unknown" },
        `This memory is not among the ${count}. The inspector could not read it to say why: ${read.error.message}`),
      spoken: "This memory is not among the candidates.",
    };
  }
  const reasons = await absenceReasons(api, receipt, read.node);
  return {
    verdict: h("div", { class: "focus-verdict", "data-outcome": "not-a-candidate" },
      h("p", {}, `This memory is not among the ${count} of this retrieval, so it was never ranked. Why:`),
      h("ul", { class: "focus-reasons" }, reasons.map((reason) => h("li", {}, reason)))),
    spoken: "This memory is not among the candidates; the reasons are listed at the top of the page.",
    memory: memoryAnchor(nodeId, read.node),
  };
}

// The candidates table's rows, each with the text a search matches: the memory's full text
// (when the page read it, else its excerpt in the row) and its node id. Not the whole row: its
// score steps name neighbouring memories, which would match too.
function candidateRows(table, nodes) {
  return [...table.querySelectorAll("tbody > tr")].map((row) => {
    const marker = row.querySelector("span.candidate");
    const nodeId = marker ? marker.getAttribute("data-node-id") : "";
    const node = nodes.get(nodeId);
    const text = node ? node.content : marker ? marker.textContent : "";
    const haystack = `${text}\n${nodeId}`.toLowerCase();
    return { row, nodeId, haystack };
  });
}

function searchBox(rows, announce) {
  const input = h("input", { type: "search", name: "candidate-search", autocomplete: "off", spellcheck: "false", size: 40 });
  const count = h("p", { class: "muted search-count", "aria-live": "polite", "data-testid": "candidate-search-count" });
  const apply = () => {
    const words = input.value.trim().toLowerCase();
    let shown = 0;
    for (const item of rows) {
      item.row.hidden = Boolean(words) && !item.haystack.includes(words);
      if (!item.row.hidden) shown += 1;
    }
    count.textContent = words ? `${shown} of ${plural(rows.length, "candidate")} match.` : "";
  };
  input.addEventListener("input", apply);
  const form = h("form", { class: "inline candidate-search", role: "search", "aria-label": "Candidates", onSubmit: () => {
    apply();
    announce(count.textContent);
  } },
  field("Find a memory among the candidates", input, "Words of its text, or its id; rows that do not match are hidden."));
  return [form, count];
}

// After the shell has put the page in place and focused its h1 (it does so right after render
// resolves), move focus to the memory's row or to the summary.
function focusWhenShown(target, announce, spoken) {
  setTimeout(() => {
    if (!target.isConnected) return;
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "center" });
    announce(spoken);
  }, 0);
}

// The receipt page's hook: adds the search box above the candidates table and, with
// ?focus=<node id>, the summary under the h1, the highlighted row and its open score steps.
export async function addCandidateFinder(ctx, receipt, nodes, body) {
  const section = body.querySelector('section[aria-labelledby="candidates-title"]');
  const table = section && section.querySelector("table");
  if (!table) return;
  const rows = candidateRows(table, nodes);
  table.before(...searchBox(rows, ctx.announce));
  const focusId = (ctx.params.get("focus") || "").trim();
  if (!focusId) return;
  const index = receipt.candidates.findIndex((candidate) => candidate.node_id === focusId);
  const summary = index >= 0 ? candidateSummary(receipt, index, nodes.get(focusId)) : await absenceSummary(ctx.api, receipt, focusId);
  const box = h("section", { class: "focus-summary", "aria-labelledby": "focus-title", tabindex: "-1", "data-testid": "focus-summary" },
    h("h2", { id: "focus-title" }, "Why this memory, or why not?"),
    summary.memory ? h("p", {}, "The memory: ", summary.memory) : null,
    summary.verdict);
  body.querySelector("h1").after(box);
  const item = rows.find((candidate) => candidate.nodeId === focusId);
  if (!item) {
    focusWhenShown(box, ctx.announce, summary.spoken);
    return;
  }
  item.row.classList.add("focused-candidate");
  item.row.setAttribute("tabindex", "-1");
  item.row.setAttribute("aria-current", "true");
  const steps = item.row.querySelector("details.score-steps");
  if (steps) steps.open = true;
  box.append(h("p", {}, "Its row under Every candidate is highlighted, with how its score was made. ",
    h("button", { type: "button", class: "secondary", onClick: () => item.row.focus() }, "Go to its row")));
  focusWhenShown(item.row, ctx.announce, summary.spoken);
}

// The memory page's form: run a retrieval for a question and open its receipt focused on this
// memory, to see whether the question finds it and, if not, why.
export function whyNotForm(ctx, nodeId) {
  const question = h("input", { type: "search", name: "why-question", required: true, maxlength: 10000, autocomplete: "off", size: 50 });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit" }, "Run and explain");
  const form = h("form", { class: "inline why-not", "aria-labelledby": "why-not-title", onSubmit: async () => {
    problem.hidden = true;
    submit.disabled = true;
    ctx.announce("Retrieving…");
    try {
      const response = await ctx.api.post("/v1/retrieve", { query: question.value });
      if (!response.metrics.receipt_persisted) {
        problem.textContent = "The retrieval ran, but its receipt could not be saved, so there is nothing to open. Try again.";
        problem.hidden = false;
        ctx.announce("");
        return;
      }
      ctx.navigate(route("retrieval", response.metrics.request_id, { focus: nodeId }));
    } catch (error) {
      problem.textContent = ctx.describeError(error);
      problem.hidden = false;
      ctx.announce("");
    } finally {
      submit.disabled = false;
    }
  } },
  field("Question", question, "What the agent would ask its memory."),
  h("div", {}, submit));
  return h("section", { "aria-labelledby": "why-not-title", class: "memory-section" },
    h("h2", { id: "why-not-title" }, "Why (not) for a question?"),
    h("p", {}, "Type a question: the inspector runs it as a retrieval (with the default settings) and opens its receipt at this memory, saying whether it was returned, why it was left out, or why the search never found it."),
    form, problem);
}
