// One saved retrieval's receipt as a page: what was asked and with which settings, the packed
// context exactly as the model saw it, every candidate in fused order with how its score was
// made and why it was returned or left out, a replay of the ranking, and the judgments and
// answer citations recorded against it. Every value from the API is shown as text.

import { ApiError } from "../api.js";
import { excerpt, facts, field, formatScore, formatTime, h, link, route, select, table } from "../dom.js";
import { adjustmentInWords, leftOutReason, settingsInWords } from "../receipt_words.js";
import { addCandidateFinder } from "./receipt_focus.js";

// Excerpts of candidates come from POST /v1/nodes/batch-get, this many ids a request (the
// route's most) and this many requests at a time: a receipt of 200 candidates is 2 requests.
const NODE_BATCH = 100;
const NODE_BATCHES_AT_ONCE = 2;
// Judgments and citations are listed for this retrieval only (request_id), a page at a time:
// the page reads at most this many pages of each (on AWS a page may be short while more follow).
const FEEDBACK_PAGE = 1000;
const FEEDBACK_PAGES_READ = 5;
// Only a UUID can name a node; anything else would make the whole batch refused (422).
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// The shell's describeError, set by render(): the text a person reads for a refused request.
let describe = (error) => String(error);

function receiptPath(requestId, tail = "") {
  return `/v1/retrievals/${encodeURIComponent(requestId)}${tail}`;
}

// node id -> the node, null when it is no longer stored (the batch read lists it missing:
// deleted, or unreadable), undefined when it could not be read (its batch was refused).
async function fetchNodes(api, ids) {
  const nodes = new Map();
  const wanted = [...new Set(ids)].filter((id) => {
    if (UUID_SHAPE.test(id)) return true;
    nodes.set(id, undefined);
    return false;
  });
  const batches = [];
  for (let start = 0; start < wanted.length; start += NODE_BATCH) batches.push(wanted.slice(start, start + NODE_BATCH));
  async function worker() {
    while (batches.length) {
      const batch = batches.shift();
      try {
        const answer = await api.post("/v1/nodes/batch-get", { node_ids: batch });
        for (const node of answer.items) nodes.set(node.id, node);
        for (const id of answer.missing_ids) nodes.set(id, null);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) throw error;
        for (const id of batch) nodes.set(id, undefined);
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(NODE_BATCHES_AT_ONCE, batches.length) }, worker));
  return nodes;
}

// { rebuilt }: the context as the server rebuilds it; { error } when it could not (an older
// server without the route, or a refusal), and the page falls back to the receipt's entries.
async function fetchContext(api, requestId) {
  try {
    return { rebuilt: await api.get(receiptPath(requestId, "/context")) };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) throw error;
    return { error };
  }
}

function memoryLink(nodeId, nodes, length = 90) {
  const node = nodes.get(nodeId);
  if (node === null) return link(`deleted memory ${nodeId}`, route("memory", nodeId));
  if (node === undefined) return link(`memory ${nodeId}`, route("memory", nodeId));
  return link(excerpt(node.content, length), route("memory", nodeId), { class: "memory-link" });
}

// The context text with each entry's reference ([m1] at the start of a reader line, "ref":"m1"
// at the start of an auditable line) a link to its memory; everything else stays text.
function contextBlock(text, references) {
  const pre = h("pre", { class: "context", "data-testid": "packed-context" });
  const lines = text.split("\n");
  lines.forEach((line, index) => {
    if (index) pre.append("\n");
    const reader = /^\[(m\d+)\]/.exec(line);
    const auditable = /^\{"ref":"(m\d+)"/.exec(line);
    const ref = (reader || auditable || [])[1];
    if (!ref || !references[ref]) {
      pre.append(line);
      return;
    }
    const href = route("memory", references[ref]);
    if (reader) {
      pre.append(h("a", { href }, `[${ref}]`), line.slice(ref.length + 2));
    } else {
      pre.append('{"ref":"', h("a", { href }, ref), line.slice(ref.length + 9));
    }
  });
  return pre;
}

function contextSection(receipt, contextResult, nodes) {
  const section = h("section", { "aria-labelledby": "context-title" },
    h("h2", { id: "context-title" }, "Packed context"));
  const entries = receipt.context.entries || [];
  if (!entries.length) {
    section.append(h("p", {}, "The context was empty: no memory was packed."));
    return section;
  }
  const { rebuilt, error } = contextResult;
  if (!rebuilt) {
    section.append(h("p", { class: "warn" },
      "This server did not return the context text (GET …/context: ",
      error instanceof ApiError ? `HTTP ${error.status}` : "unreachable",
      "). The receipt keeps which memory each reference showed:"));
    section.append(entriesTable(entries, nodes));
    return section;
  }
  if (rebuilt.matches) {
    section.append(h("p", {},
      h("span", { class: "badge good", "data-testid": "context-badge" }, "Exactly what the model saw (SHA-256 matches)"),
      " ", h("span", { class: "muted" }, `Rebuilt from the memories as stored now; its SHA-256 equals the one saved with the retrieval (${rebuilt.saved_context_sha256.slice(0, 12)}…).`)));
  } else {
    const missing = rebuilt.missing_node_ids || [];
    const changed = rebuilt.changed_node_ids || [];
    section.append(h("div", { class: "warn context-warning", "data-testid": "context-badge" },
      h("p", {}, h("span", { class: "badge bad" }, "Not exactly what the model saw"),
        " The text below is rebuilt from the memories as stored now, and its SHA-256 differs from the one saved with the retrieval."),
      missing.length ? h("p", {}, "Deleted since (their lines are missing): ",
        missing.map((id, i) => [i ? ", " : "", link(id, route("memory", id))])) : null,
      changed.length ? h("p", {}, "Changed since (their lines may read differently now): ",
        changed.map((id, i) => [i ? ", " : "", memoryLink(id, nodes, 50)])) : null));
  }
  section.append(contextBlock(rebuilt.context, rebuilt.references || {}));
  const folded = entries.filter((entry) => entry.representation === "folded");
  if (folded.length) {
    section.append(h("p", { class: "muted" }, "Folded references (same text as an earlier entry, so no line of their own): ",
      folded.map((entry, i) => [i ? "; " : "", `${entry.ref} → ${entry.folded_into}`])));
  }
  section.append(h("p", { class: "muted" }, `${receipt.context.tokens_used} tokens. Each [m…] link opens the memory it names.`));
  return section;
}

function entriesTable(entries, nodes) {
  return table("Context entries", ["Reference", "Memory", "Tokens"], entries.map((entry) => [
    entry.ref,
    memoryLink(entry.node_id, nodes),
    entry.representation === "folded" ? `folded into ${entry.folded_into}` : String(entry.tokens),
  ]), { numeric: [2] });
}

function channelRanks(candidate) {
  const names = Object.keys(candidate.ranks || {}).sort();
  if (!names.length) return candidate.context_of ? "not ranked (session context)" : "—";
  return h("ul", { class: "plain" }, names.map((name) => {
    const raw = (candidate.channel_scores || {})[name];
    return h("li", {}, `${name} #${candidate.ranks[name]}`, raw === undefined ? "" : ` (raw ${formatScore(raw, 4)})`);
  }));
}

// How the final score was made, step by step, from score_provenance.
function scoreSteps(candidate, rank, rrfK, nodes) {
  const provenance = candidate.score_provenance || {};
  const label = rank ? `Score of #${rank}` : "Score of this session-context record";
  const steps = [];
  if (provenance.session_context) {
    const { anchor, decay } = provenance.session_context;
    steps.push(h("li", {}, "Not a search candidate: added as session context of ",
      memoryLink(anchor, nodes, 50), `; it scores that result's score × ${formatScore(decay, 2)} = ${formatScore(provenance.score, 6)}`));
  } else if (provenance.rrf_terms) {
    for (const [channel, term] of Object.entries(provenance.rrf_terms)) {
      const at = (candidate.ranks || {})[channel];
      steps.push(h("li", { class: "rrf-term" }, `${channel} rank ${at}: 1 / (${rrfK} + ${at}) = ${formatScore(term, 6)}`));
    }
    let score = Number(provenance.rrf_score);
    steps.push(h("li", {}, `Rank fusion score (sum of the channel terms): ${formatScore(score, 6)}`));
    (provenance.adjustments || []).forEach((adjustment, i) => {
      const { after, words } = adjustmentInWords(adjustment, score);
      score = after;
      steps.push(h("li", { class: "adjustment", "data-op": adjustment.op },
        `Adjustment ${i + 1}, ${adjustment.op}: ${words} → ${formatScore(after, 6)}`,
        adjustment.neighbour ? [" (neighbour: ", memoryLink(adjustment.neighbour, nodes, 40), ")"] : null));
    });
    if (!(provenance.adjustments || []).length) steps.push(h("li", {}, "No adjustment applied."));
    steps.push(h("li", {}, `Final score: ${formatScore(provenance.score ?? candidate.score, 6)}`));
  } else {
    steps.push(h("li", {}, "This receipt keeps no score breakdown for this candidate (older receipts kept it for returned candidates only). Replay still recomputes its place from its saved ranks."));
  }
  return h("details", { class: "score-steps" }, h("summary", {}, label), h("ol", {}, steps));
}

function outcomeCell(candidate, receipt, entryOf, packExcluded) {
  if (candidate.outcome !== "returned") {
    return h("div", { class: "outcome", "data-outcome": candidate.outcome },
      h("span", { class: "badge bad" }, "Left out"), " ",
      h("span", { class: "reason" }, leftOutReason(candidate.outcome, receipt.config, candidate)));
  }
  const entry = entryOf.get(candidate.node_id);
  const parts = [h("span", { class: "badge good" }, "Returned")];
  if (candidate.context_of) parts.push(" as session context (said next to a result; added after the first results)");
  if (entry && entry.representation === "full") {
    parts.push(` as [${entry.ref}] in the context`);
  } else if (entry) {
    parts.push(` as [${entry.ref}], folded: its text repeats [${entry.folded_into}], so the context shows it once, under [${entry.folded_into}]`);
  } else if (packExcluded.has(candidate.node_id)) {
    parts.push(" in the results, but not in the context: it did not fit the token budget");
  } else {
    parts.push(" in the results, not in the context");
  }
  return h("div", { class: "outcome", "data-outcome": entry ? "returned" : "returned-not-packed" }, parts);
}

function candidatesSection(receipt, nodes) {
  const entryOf = new Map((receipt.context.entries || []).map((entry) => [entry.node_id, entry]));
  const packExcluded = new Set((receipt.context.excluded || []).map((item) => item.node_id));
  const rrfK = (receipt.config.fusion || {}).rrf_k;
  let rank = 0;
  const rows = receipt.candidates.map((candidate) => {
    const fused = !candidate.context_of;
    if (fused) rank += 1;
    return [
      fused ? String(rank) : "—",
      h("span", { class: "candidate", "data-node-id": candidate.node_id }, memoryLink(candidate.node_id, nodes)),
      channelRanks(candidate),
      candidate.semantic_relevance === null || candidate.semantic_relevance === undefined
        ? h("span", { class: "muted" }, "not kept")
        : formatScore(candidate.semantic_relevance, 3),
      formatScore(candidate.score, 4),
      outcomeCell(candidate, receipt, entryOf, packExcluded),
      scoreSteps(candidate, fused ? rank : null, rrfK, nodes),
    ];
  });
  const returned = receipt.returned_node_ids.length;
  const candidates = receipt.candidates.length;
  const leftOut = receipt.candidates.filter((candidate) => candidate.outcome !== "returned").length;
  return h("section", { "aria-labelledby": "candidates-title" },
    h("h2", { id: "candidates-title" }, "Every candidate"),
    h("p", {}, `The search found ${candidates} candidate${candidates === 1 ? "" : "s"}; ${returned} ${returned === 1 ? "was" : "were"} returned and ${leftOut} left out. `,
      "They are listed in fused order (best first). Channel ranks are each search's own order (vector: meaning; lexical: words); semantic relevance is the cosine similarity of the question and the memory (kept only for returned or packed memories); the final score is the rank fusion score after the adjustments, which you can open in the last column."),
    table("Candidates in fused order, with the reason each was returned or left out",
      ["Rank", "Memory", "Channel ranks", "Semantic relevance", "Final score", "Outcome", "How the score was made"],
      rows, { numeric: [0, 3, 4] }));
}

function replaySection(api, requestId, announce) {
  const result = h("div", { class: "replay-result", "aria-live": "polite" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const button = h("button", { type: "button", onClick: async () => {
    button.disabled = true;
    problem.hidden = true;
    result.replaceChildren();
    try {
      const report = await api.get(receiptPath(requestId, "/replay"));
      result.append(replayReport(report));
      announce(report.matches ? "Replay matches the saved ranking." : "Replay differs from the saved ranking.");
    } catch (error) {
      problem.textContent = describe(error);
      problem.hidden = false;
    } finally {
      button.disabled = false;
    }
  } }, "Replay");
  return h("section", { "aria-labelledby": "replay-title" },
    h("h2", { id: "replay-title" }, "Replay"),
    h("p", {}, "Recompute the ranking of the candidates below from this receipt alone (the saved ranks and settings, not the memories stored now) and compare it with the order the retrieval saved."),
    button, problem, result);
}

function replayReport(report) {
  if (report.matches) {
    return h("p", { class: "ok", "data-testid": "replay-verdict" },
      `Replay matches: recomputing from the receipt gives the same order of all ${report.saved_ranking.length} candidates`,
      report.receipt_checksum_valid ? ", and the receipt's checksum is valid." : ".");
  }
  const rows = [];
  const length = Math.max(report.saved_ranking.length, report.replayed_ranking.length);
  for (let i = 0; i < length; i += 1) {
    if (report.saved_ranking[i] !== report.replayed_ranking[i]) {
      rows.push([String(i + 1), report.saved_ranking[i] || "—", report.replayed_ranking[i] || "—"]);
    }
  }
  return h("div", {},
    h("p", { class: "error", "data-testid": "replay-verdict" }, `Replay differs: ${rows.length} position${rows.length === 1 ? "" : "s"} changed.`),
    table("Positions where the replay differs", ["Position", "Saved", "Replayed"], rows, { numeric: [0] }));
}

async function readAll(api, path, requestId) {
  const mine = [];
  let after = null;
  for (let page = 0; page < FEEDBACK_PAGES_READ; page += 1) {
    const body = await api.get(path, { limit: FEEDBACK_PAGE, after_id: after, request_id: requestId });
    // The server lists this retrieval's records only; the check keeps the page right on a
    // server older than the request_id filter, which ignores it.
    mine.push(...body.items.filter((item) => item.request_id === requestId));
    after = body.next_after_id;
    if (!after) return { items: mine, complete: true };
  }
  return { items: mine, complete: false };
}

function judgmentsTable(records, nodes) {
  return table("Relevance judgments recorded for this retrieval", ["When", "Judgment", "Labels"],
    records.map((record) => [
      formatTime(record.created_at),
      `${record.feedback_id} (${record.surface}, ${record.method})`,
      h("ul", { class: "plain" }, record.exposures.map((exposure) => h("li", {},
        exposure.position ? `Result ${exposure.position} ` : `[${exposure.context_ref}] `,
        memoryLink(exposure.node_id, nodes, 60), ": ",
        h("strong", {}, exposure.relevant ? "relevant" : "not relevant")))),
    ]));
}

function citationsTable(records, nodes) {
  return table("Answer citations recorded for this retrieval", ["When", "Answer", "Cited memories"],
    records.map((record) => [
      formatTime(record.created_at),
      `${record.answer_id} (${record.method})`,
      record.no_citations ? "none: the answer cited no memory"
        : h("ul", { class: "plain" }, record.cited_entries.map((entry) => h("li", {},
          `[${entry.context_ref}] `, memoryLink(entry.node_id, nodes, 60)))),
    ]));
}

async function recordedContent(api, requestId, nodes) {
  const [judgments, citations] = await Promise.all([
    readAll(api, "/v1/relevance", requestId),
    readAll(api, "/v1/answer-citations", requestId),
  ]);
  const parts = [];
  parts.push(judgments.items.length ? judgmentsTable(judgments.items, nodes)
    : h("p", { class: "muted" }, "No relevance judgment is recorded for this retrieval yet."));
  parts.push(citations.items.length ? citationsTable(citations.items, nodes)
    : h("p", { class: "muted" }, "No answer citation is recorded for this retrieval yet."));
  if (!judgments.complete || !citations.complete) {
    parts.push(h("p", { class: "warn" }, "This owner has more judgments or citations than the page reads; some may not be listed."));
  }
  return parts;
}

function recordedSection(api, requestId, nodes) {
  const body = h("div", { "data-testid": "recorded" });
  const section = h("section", { "aria-labelledby": "recorded-title" },
    h("h2", { id: "recorded-title" }, "Recorded judgments and citations"), body);
  async function refresh() {
    try {
      body.replaceChildren(...await recordedContent(api, requestId, nodes));
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) throw error;
      body.replaceChildren(h("p", { class: "error", role: "alert" }, describe(error)));
    }
  }
  return { section, refresh };
}

function relevanceSection(api, receipt, nodes, announce, refreshRecorded) {
  const requestId = receipt.request_id;
  const returned = receipt.returned_node_ids;
  const section = h("section", { "aria-labelledby": "relevance-title" },
    h("h2", { id: "relevance-title" }, "Record relevance"));
  if (!returned.length) {
    section.append(h("p", { class: "muted" }, "Nothing was returned, so there is nothing to judge."));
    return section;
  }
  const choices = returned.map((nodeId, i) => {
    const node = nodes.get(nodeId);
    const text = node ? excerpt(node.content, 70) : nodeId;
    const control = select(`relevance-${i + 1}`, [["", "Not judged"], ["true", "Relevant"], ["false", "Not relevant"]], "");
    return { nodeId, control, row: field(`Result ${i + 1}: ${text}`, control) };
  });
  const method = select("relevance-method", [["explicit_user", "a person judged (explicit_user)"], ["structured_evaluation", "an evaluation (structured_evaluation)"]], "explicit_user");
  const done = h("p", { class: "ok", role: "status", hidden: true });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const form = h("form", { class: "judgments", "aria-labelledby": "relevance-title", onSubmit: async () => {
    done.hidden = true;
    problem.hidden = true;
    const labels = {};
    for (const choice of choices) {
      if (choice.control.value) labels[choice.nodeId] = choice.control.value === "true";
    }
    if (!Object.keys(labels).length) {
      problem.textContent = "Choose Relevant or Not relevant for at least one result; results left as Not judged are not recorded.";
      problem.hidden = false;
      return;
    }
    try {
      const record = await api.post("/v1/relevance", { request_id: requestId, labels, surface: "results", method: method.value });
      const count = Object.keys(record.labels).length;
      done.textContent = `Recorded judgment ${record.feedback_id} of ${count} result${count === 1 ? "" : "s"}.`;
      done.hidden = false;
      announce("Relevance judgment recorded.");
      await refreshRecorded();
    } catch (error) {
      problem.textContent = describe(error);
      problem.hidden = false;
    }
  } },
  choices.map((choice) => choice.row),
  field("How the judgment was made", method),
  h("div", {}, h("button", { type: "submit" }, "Record relevance")));
  section.append(
    h("p", {}, "Say which returned results were relevant to the question. Results left as Not judged are simply unjudged, never negatives. Only returned results can be judged; a judgment changes no memory and no ranking."),
    form, done, problem);
  return section;
}

function citationsSection(api, receipt, nodes, announce, refreshRecorded) {
  const requestId = receipt.request_id;
  const entries = (receipt.context.entries || []).filter((entry) => entry.representation === "full");
  const section = h("section", { "aria-labelledby": "citations-title" },
    h("h2", { id: "citations-title" }, "Record answer citations"));
  if (!entries.length) {
    section.append(h("p", { class: "muted" }, "The context holds no memory, so an answer could not cite one."));
    return section;
  }
  const answerId = h("input", { type: "text", name: "answer_id", required: true, maxlength: 500, autocomplete: "off", spellcheck: "false" });
  const method = select("citation-method", [["human_verified", "a person checked (human_verified)"], ["application_verified", "the application checked (application_verified)"], ["model_reported", "the model said so (model_reported)"]], "human_verified");
  const boxes = entries.map((entry) => {
    const node = nodes.get(entry.node_id);
    const box = h("input", { type: "checkbox", name: "cited", value: entry.node_id });
    return { box, row: h("label", { class: "check" }, box, h("span", {}, `[${entry.ref}] `, node ? excerpt(node.content, 70) : entry.node_id)) };
  });
  const done = h("p", { class: "ok", role: "status", hidden: true });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const form = h("form", { class: "citations", "aria-labelledby": "citations-title", onSubmit: async () => {
    done.hidden = true;
    problem.hidden = true;
    const cited = boxes.filter((item) => item.box.checked).map((item) => item.box.value);
    try {
      const record = await api.post("/v1/answer-citations", { request_id: requestId, answer_id: answerId.value.trim(), cited_node_ids: cited, method: method.value });
      done.textContent = record.no_citations
        ? `Recorded ${record.citation_id}: answer ${record.answer_id} cited no memory.`
        : `Recorded ${record.citation_id}: answer ${record.answer_id} cited ${record.cited_entries.map((entry) => entry.context_ref).join(", ")}.`;
      done.hidden = false;
      announce("Answer citations recorded.");
      await refreshRecorded();
    } catch (error) {
      problem.textContent = describe(error);
      problem.hidden = false;
    }
  } },
  field("Answer id", answerId, "Your id of the answer, e.g. a message id."),
  h("fieldset", {}, h("legend", {}, "Memories the answer cited (none checked records an answer that cited no memory)"),
    boxes.map((item) => item.row)),
  field("How the citations were obtained", method),
  h("div", {}, h("button", { type: "submit" }, "Record answer citations")));
  section.append(
    h("p", {}, "Record which memories of the packed context an answer relied on. Only entries with their own line in the context can be cited."),
    form, done, problem);
  return section;
}

function notFoundPage(requestId, malformed) {
  return {
    title: "Receipt not found",
    body: h("section", { "aria-labelledby": "receipt-title" },
      h("h1", { id: "receipt-title", tabindex: "-1" }, "Receipt not found"),
      malformed
        ? h("p", { class: "error", role: "alert" }, h("code", {}, requestId), " is not a request id (a UUID).")
        : h("p", { class: "error", role: "alert" }, "No saved retrieval ", h("code", {}, requestId),
          " for this owner: it does not exist, its receipt expired, or it belongs to another owner."),
      h("p", {}, link("All retrievals", route("retrievals")), " · ", link("Ask a question", route("ask")))),
  };
}

export async function render(ctx) {
  const { api, parts, announce, describeError } = ctx;
  describe = describeError;
  const requestId = parts[0] || "";
  let receipt;
  try {
    receipt = await api.get(receiptPath(requestId));
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 422)) return notFoundPage(requestId, error.status === 422);
    throw error;
  }
  const nodeIds = [
    ...receipt.candidates.map((candidate) => candidate.node_id),
    ...(receipt.context.entries || []).map((entry) => entry.node_id),
  ];
  const [nodes, contextResult] = await Promise.all([fetchNodes(api, nodeIds), fetchContext(api, requestId)]);
  const returned = receipt.returned_node_ids.length;
  const recorded = recordedSection(api, requestId, nodes);
  await recorded.refresh();
  const body = h("article", { "aria-labelledby": "receipt-title" },
    h("p", { class: "muted" }, link("All retrievals", route("retrievals")), " / receipt"),
    h("h1", { id: "receipt-title", tabindex: "-1" }, "Retrieval receipt"),
    h("p", { class: "query-label" }, "The question as asked:"),
    h("div", { class: "memory-text query", "data-testid": "query" }, receipt.query),
    h("p", {}, `Returned ${returned} of ${receipt.candidates.length} candidate${receipt.candidates.length === 1 ? "" : "s"}. `,
      "Why was a memory seen, or not? Find it under Every candidate: its outcome says returned (with its [m…] reference in the context) or the rule that left it out."),
    facts([
      ["When", formatTime(receipt.created_at)],
      ["'Now' for the question", formatTime(receipt.reference_time)],
      ["Request id", receipt.request_id],
    ]),
    h("section", { "aria-labelledby": "settings-title" },
      h("h2", { id: "settings-title" }, "Settings that decided the result"),
      facts(settingsInWords(receipt, receipt.context.tokens_used))),
    contextSection(receipt, contextResult, nodes),
    replaySection(api, requestId, announce),
    candidatesSection(receipt, nodes),
    relevanceSection(api, receipt, nodes, announce, recorded.refresh),
    citationsSection(api, receipt, nodes, announce, recorded.refresh),
    recorded.section,
  );
  await addCandidateFinder(ctx, receipt, nodes, body);
  return { title: `Receipt: ${excerpt(receipt.query, 60)}`, body };
}
