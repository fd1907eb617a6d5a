// A receipt's codes in plain words: the settings a retrieval used, why each candidate was left
// out, and what each score adjustment did. The codes are the engine's (docs/receipts.md,
// core/prme/retrieval/caps.py, packing.py and fusion.py); a code this file does not know is
// shown as it is, so a newer server still reads.

import { formatScore } from "./dom.js";

// Why a candidate was left out of the results (ReceiptCandidate.outcome), given the settings.
export function leftOutReason(outcome, config, candidate) {
  switch (outcome) {
    case "min_score": {
      const asked = config.min_score;
      const had = candidate.semantic_relevance;
      if (had === null || had === undefined) {
        return `below the minimum relevance: the retrieval asked for a semantic relevance of at least ${formatScore(asked, 2)}, and this memory's was lower or could not be scored`;
      }
      return `below the minimum relevance: its semantic relevance ${formatScore(had, 3)} is under the ${formatScore(asked, 2)} the retrieval asked for`;
    }
    case "source_limit":
      return `per-source cap (max_per_source ${config.max_per_source}): that many higher-ranked results with the same text from the same source events were already chosen`;
    case "evidence_limit":
      return `per-evidence cap (max_per_evidence ${config.max_per_evidence}): that many higher-ranked results from the same source events were already chosen`;
    case "limit":
      return config.limit === 1
        ? "result limit: the one result allowed went to a higher-ranked candidate"
        : `result limit: the ${config.limit} results allowed went to higher-ranked candidates`;
    case "token_budget":
      return config.fill_budget
        ? `token budget: no limit was asked, so the results are what fitted in the ${config.token_budget}-token context, and this memory did not fit`
        : `token budget: it did not fit in what was left of the ${config.token_budget}-token context`;
    case "response_size":
      return "response size: the server cut the response to stay under its byte limit, and this lower-ranked memory was cut";
    case "filtered":
      return "filters: the request's filters (or its mode) exclude this memory";
    default:
      return `left out (${outcome})`;
  }
}

// The settings that decide what a retrieval could return, as [term, words] pairs.
export function settingsInWords(receipt, metricsTokens) {
  const c = receipt.config;
  const fusion = c.fusion || {};
  const filters = Object.entries(c.filters || {}).filter(([, value]) => value !== null && value !== undefined
    && !(Array.isArray(value) && value.length === 0));
  const minScore = c.min_score === null || c.min_score === undefined
    ? "none: semantic relevance did not exclude anything"
    : c.min_score_skipped
      ? `${formatScore(c.min_score, 2)} asked but not applied: no semantic scores were available (the vector search failed)`
      : `${formatScore(c.min_score, 2)}: candidates whose semantic relevance (cosine similarity to the question) is lower were left out`;
  return [
    ["Retrieval profile", c.retrieval_profile || "not recorded (receipt saved before profiles)"],
    ["Mode", c.mode === "explicit"
      ? "explicit: superseded, archived and deprecated memories and hypothetical or retracted statements could be returned too"
      : "default: only current memories were searched (not superseded, archived, expired, hypothetical or retracted ones)"],
    ["Result limit", c.fill_budget
      ? `none asked: as many results as the token budget held (at most ${c.limit})`
      : `at most ${c.limit} result${c.limit === 1 ? "" : "s"}`],
    ["Token budget", `${c.token_budget} tokens for the packed context; it used ${metricsTokens}`],
    ["Minimum relevance (min_score)", minScore],
    ["Per-source cap (max_per_source)", c.max_per_source
      ? `at most ${c.max_per_source} result${c.max_per_source === 1 ? "" : "s"} with the same text from the same source events`
      : "none"],
    ["Per-evidence cap (max_per_evidence)", c.max_per_evidence
      ? `at most ${c.max_per_evidence} result${c.max_per_evidence === 1 ? "" : "s"} from the same source events`
      : "none"],
    ["Context format", c.context_format === "auditable"
      ? "auditable: one JSON object per memory (ref, node id, time, speaker, text)"
      : "reader: one line per memory, [m1] date speaker: text"],
    ["Packing order", c.packing_order === "rank_admitted_session_grouped"
      ? "admitted best first while they fit, then printed grouped by date and session, oldest first"
      : "best first"],
    ["Repeated text", c.fold_repeated_text
      ? "folded: a result whose text repeats an earlier entry's gets its own reference but no line of its own"
      : "each result printed in full"],
    ["Filters", filters.length
      ? filters.map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(", ") : String(value)}`).join("; ")
      : "none"],
    ["Ranking", `reciprocal rank fusion: each search channel adds 1 / (${fusion.rrf_k ?? "k"} + the memory's rank there); then the adjustments listed with each candidate; equal scores rank ${fusion.tie_break === "event_time" ? "newest first" : `by ${fusion.tie_break}`}`],
    ["Asked about the current state", fusion.current_state ? "yes: newer memories and current values were favoured" : "no"],
    ["Embedding model", c.embedding_model || "none: the vector search did not run"],
    ["Token counter", c.token_counter],
    ["Search channels that failed", receipt.backend_failures && receipt.backend_failures.length
      ? receipt.backend_failures.join(", ") : "none"],
  ];
}

// One score adjustment (score_provenance.adjustments[i]) in words, and the score after it.
export function adjustmentInWords(adjustment, before) {
  const op = adjustment.op;
  const factor = adjustment.coefficient;
  if (op === "session_neighbour") {
    const after = before + Number(adjustment.term || 0);
    return { after, words: `said next to a strong match in the same session: + ${formatScore(adjustment.term, 6)} (a share of that neighbour's score)` };
  }
  const after = before * Number(factor ?? 1);
  const times = `× ${formatScore(factor, 4)}`;
  const words = {
    speaker_named: "the question names who said it",
    time_mentioned: "the question names the period it was said in",
    recency_boost: `the question asks about the current state, and newer memories gain (newness ${formatScore(adjustment.fraction, 2)} of 1)`,
    current_value: "it states a current value (it replaced an earlier one, or is worded as a change)",
    correction: "it is worded as a correction",
    named_entity: "a bare name: placed just below the records that mention it",
  }[op] || op;
  return { after, words: `${words}: ${times}` };
}
