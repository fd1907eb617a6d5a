// Review queues: alias proposals waiting for a person's decision (accept or reject, always
// with a reason) and the proposals already decided, with who decided and why.

import { facts, field, formatScore, formatTime, h, link, route, select, table } from "../dom.js";

const SCOPES = [["", "All scopes"], ...["personal", "project", "organisation", "agent", "system", "sandbox"].map((scope) => [scope, scope])];
// The API lists at most this many proposals per call, newest first.
const LIST_LIMIT = 100;

// The label sent as `reviewer_id`. The API records the key the call was signed with
// (reviewed_by_key_id and reviewed_by_role) whatever this says; it is only a note.
function reviewerLabel(session) {
  return session.keyId ? `inspector, key ${session.keyId}` : "inspector, local (no key)";
}

function identityNote(session) {
  const who = session.keyId
    ? ["the signed-in key, ", h("strong", {}, `key id ${session.keyId}`), ` (role ${session.role})`]
    : ["no key (a local server in keyless mode), so no key id is recorded; the role is ", h("strong", {}, String(session.role))];
  return h("p", { id: "reviewer-identity" },
    "Decisions are recorded under ", who,
    ". The API records the key itself; the reviewer label the page sends with it (",
    h("code", {}, reviewerLabel(session)), ") is only a note and proves nothing.");
}

function memoryLink(candidate) {
  // The entity's name is its memory's content: untrusted, so only ever a text node.
  return h("div", { class: "memory-text" }, link(candidate.name, route("memory", candidate.node_id)));
}

function candidateFacts(candidate) {
  return facts([
    ["Memory id", h("code", {}, candidate.node_id)],
    ["State when assessed", candidate.assessed ? candidate.assessed.lifecycle_state : "—"],
    ["Source events", candidate.evidence_refs.length ? candidate.evidence_refs.map((ref, i) =>
      [i ? ", " : "", link(ref, route("event", ref), { class: "id" })]) : "—"],
    ["Quoted source words", candidate.evidence_quote
      ? h("span", { class: "memory-text" }, candidate.evidence_quote) : undefined],
  ]);
}

function pairTitle(proposal) {
  return `${proposal.nodes[0].name} ↔ ${proposal.nodes[1].name}`;
}

function evidence(item) {
  const proposal = item.proposal;
  return [
    facts([
      ["Similarity", `${formatScore(proposal.similarity, 2)} (proposed at ${formatScore(proposal.threshold, 2)} or more)`],
      ["Scope", proposal.scope],
      ["Proposed", formatTime(item.proposal_journal && item.proposal_journal.created_at)],
      ["Scanner", proposal.scanner],
    ]),
    table("Signals that paired these names", ["Signal", "Score"],
      proposal.signals.map((signal) => [signal.name, formatScore(signal.score, 2)]), { numeric: [1] }),
  ];
}

function entities(proposal) {
  return h("div", { class: "alias-pair" }, proposal.nodes.map((candidate, i) =>
    h("div", { class: "alias-side" },
      h("h4", {}, `Entity memory ${i === 0 ? "A" : "B"}`),
      memoryLink(candidate),
      candidateFacts(candidate))));
}

function decisionText(review) {
  return review.decision === "accepted" ? "Accepted" : "Rejected";
}

function recordedBy(review) {
  const key = review.reviewed_by_key_id ? `key id ${review.reviewed_by_key_id}` : "no key (keyless or in-process)";
  return review.reviewed_by_role ? `${key}, role ${review.reviewed_by_role}` : key;
}

// One pending proposal: the two entity memories, the evidence, and the decision form.
function pendingProposal(item, ctx, onDecided) {
  const id = item.proposal_operation_id;
  const headingId = `proposal-${id}`;
  const reason = h("textarea", { name: "reason", rows: 2, cols: 60, maxlength: 2000 });
  const problem = h("p", { id: `${headingId}-problem`, class: "error", role: "alert", hidden: true });
  const buttons = [];

  async function decide(decision) {
    problem.hidden = true;
    reason.removeAttribute("aria-invalid");
    const text = reason.value.trim();
    if (!text) {
      problem.textContent = `Write a reason before you ${decision === "accepted" ? "accept" : "reject"}: every decision is recorded with its reason. Nothing was recorded.`;
      problem.hidden = false;
      reason.setAttribute("aria-invalid", "true");
      reason.focus();
      return;
    }
    buttons.forEach((button) => { button.disabled = true; });
    try {
      const reviewed = await ctx.api.post(`/v1/alias-proposals/${encodeURIComponent(id)}/review`, {
        decision, reviewer_id: reviewerLabel(ctx.session), reason: text,
      });
      onDecided(reviewed, article);
    } catch (error) {
      problem.textContent = ctx.describeError(error);
      problem.hidden = false;
      buttons.forEach((button) => { button.disabled = false; });
    }
  }

  const reasonField = field("Reason for the decision (required)", reason,
    "Say why these are, or are not, the same thing. Accepting adds a verified alias link between the two memories; nothing is merged or changed.");
  // The hint and, once shown, the refusal both describe the box.
  reason.setAttribute("aria-describedby", `${reason.id}-hint ${problem.id}`);
  buttons.push(
    h("button", { type: "button", "aria-describedby": headingId, onClick: () => decide("accepted") }, "Accept"),
    h("button", { type: "button", class: "secondary", "aria-describedby": headingId, onClick: () => decide("rejected") }, "Reject"),
  );
  const article = h("article", { class: "proposal", "aria-labelledby": headingId, "data-proposal-id": id },
    h("h3", { id: headingId }, pairTitle(item.proposal)),
    entities(item.proposal),
    evidence(item),
    h("div", { class: "decision", role: "group", "aria-label": "Decision" },
      reasonField,
      problem,
      h("div", { class: "decision-buttons" }, buttons)),
  );
  return article;
}

function decidedRow(item) {
  const review = item.review;
  return [
    decisionText(review),
    memoryLink(item.proposal.nodes[0]),
    memoryLink(item.proposal.nodes[1]),
    formatScore(item.proposal.similarity, 2),
    recordedBy(review),
    review.reviewer_id,
    h("span", { class: "memory-text" }, review.reason || "—"),
    formatTime(item.review_journal && item.review_journal.created_at),
  ];
}

function viewLinks(view, scope) {
  return h("nav", { "aria-label": "Review views", class: "pager" },
    h("a", { href: route("review", { scope }), "aria-current": view === "pending" ? "page" : null }, "Pending"),
    h("a", { href: route("review", { view: "decided", scope }), "aria-current": view === "decided" ? "page" : null }, "Decided"));
}

function scopeFilter(ctx, view, scope) {
  const chooser = select("scope", SCOPES, scope);
  return h("form", { class: "filters", "aria-label": "Filter proposals", onSubmit: () => {
    ctx.navigate(route("review", { view: view === "decided" ? "decided" : null, scope: chooser.value }));
  } }, field("Scope", chooser), h("button", { type: "submit", class: "secondary" }, "Show"));
}

async function pendingSection(ctx, scope) {
  const listed = await ctx.api.get("/v1/alias-proposals", { status: "pending", scope, limit: LIST_LIMIT });
  const items = listed.items || [];
  const count = h("p", { id: "pending-count" });
  const list = h("div", { class: "proposals" });
  const decided = h("ul", { class: "decisions", "aria-label": "Decisions made on this page" });
  const decidedBlock = h("section", { "aria-labelledby": "just-decided-title", hidden: true },
    h("h2", { id: "just-decided-title" }, "Decided just now"), decided);
  let left = items.length;

  function showCount() {
    count.textContent = left === 0 ? "No alias proposals are waiting for review."
      : `${left} alias proposal${left === 1 ? "" : "s"} waiting for review${items.length >= LIST_LIMIT ? " (the newest shown)" : ""}.`;
  }

  function onDecided(reviewed, article) {
    const review = reviewed.review;
    const summary = h("li", { tabindex: "-1", class: review.decision === "accepted" ? "ok" : "warn" },
      h("strong", {}, `${decisionText(review)}: `), pairTitle(reviewed.proposal),
      ` — recorded for ${recordedBy(review)}. Reason: `, h("span", { class: "memory-text" }, review.reason || "—"));
    decided.prepend(summary);
    decidedBlock.hidden = false;
    article.remove();
    left -= 1;
    showCount();
    ctx.announce(`${decisionText(review)}. Removed from the pending list.`);
    summary.focus();
  }

  items.forEach((item) => list.append(pendingProposal(item, ctx, onDecided)));
  showCount();
  return [
    decidedBlock,
    h("section", { "aria-labelledby": "pending-title" },
      h("h2", { id: "pending-title" }, "Alias proposals waiting for review"),
      h("p", { class: "muted" }, "Two entity memories that may name the same person, place or thing. A proposal is only advice: nothing is linked until someone accepts it."),
      count, list),
  ];
}

async function decidedSection(ctx, scope) {
  const [accepted, rejected] = await Promise.all(["accepted", "rejected"].map((status) =>
    ctx.api.get("/v1/alias-proposals", { status, scope, limit: LIST_LIMIT })));
  const when = (item) => (item.review_journal && item.review_journal.created_at) || "";
  const items = [...(accepted.items || []), ...(rejected.items || [])].filter((item) => item.review)
    .sort((a, b) => (when(a) < when(b) ? 1 : when(a) > when(b) ? -1 : 0));
  return h("section", { "aria-labelledby": "decided-title" },
    h("h2", { id: "decided-title" }, "Alias proposals already decided"),
    items.length ? table("Decided alias proposals, newest first",
      ["Decision", "Entity memory A", "Entity memory B", "Similarity", "Recorded reviewer (key)", "Reviewer label", "Reason", "Decided"],
      items.map(decidedRow), { numeric: [3] })
      : h("p", {}, "No alias proposal has been decided yet."));
}

export async function render(ctx) {
  const view = ctx.params.get("view") === "decided" ? "decided" : "pending";
  const scope = ctx.params.get("scope") || "";
  const body = view === "decided" ? [await decidedSection(ctx, scope)] : await pendingSection(ctx, scope);
  return {
    title: view === "decided" ? "Decided reviews" : "Review queues",
    body: h("section", { "aria-labelledby": "review-title" },
      h("h1", { id: "review-title", tabindex: "-1" }, "Review queues"),
      identityNote(ctx.session),
      viewLinks(view, scope),
      scopeFilter(ctx, view, scope),
      body,
      h("section", { "aria-labelledby": "supersedence-title" },
        h("h2", { id: "supersedence-title" }, "Proposed supersedences"),
        h("p", { class: "muted" }, "Proposed supersedences: not available yet. The API does not propose them yet; when it does, they will be reviewed here.")),
    ),
  };
}
