// Ask: run a retrieval for any question and open its receipt, to see why each memory was or
// was not returned.

import { field, h } from "../dom.js";

// An optional whole-number or decimal setting: undefined when left empty.
function optionalNumber(input, parse) {
  const text = input.value.trim();
  return text === "" ? undefined : parse(text);
}

export async function render({ api, params, navigate, route, announce, describeError }) {
  const query = h("input", { type: "search", name: "query", required: true, maxlength: 10000, autocomplete: "off", size: 60, value: params.get("q") || "" });
  const limit = h("input", { type: "number", name: "limit", min: 0, max: 200, step: 1, inputmode: "numeric" });
  const budget = h("input", { type: "number", name: "token_budget", min: 0, max: 200000, step: 1, inputmode: "numeric" });
  const minScore = h("input", { type: "number", name: "min_score", min: 0, max: 1, step: "any", inputmode: "decimal" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit" }, "Ask");
  const form = h("form", { class: "filters ask", "aria-labelledby": "ask-title", onSubmit: async () => {
    problem.hidden = true;
    const body = {
      query: query.value,
      limit: optionalNumber(limit, (text) => Number.parseInt(text, 10)),
      token_budget: optionalNumber(budget, (text) => Number.parseInt(text, 10)),
      min_score: optionalNumber(minScore, Number),
    };
    submit.disabled = true;
    announce("Retrieving…");
    try {
      const response = await api.post("/v1/retrieve", body);
      const metrics = response.metrics;
      if (!metrics.receipt_persisted) {
        problem.textContent = `The retrieval returned ${metrics.returned} results, but its receipt could not be saved, so there is nothing to open. Try again.`;
        problem.hidden = false;
        announce("");
        return;
      }
      navigate(route("retrieval", metrics.request_id));
    } catch (error) {
      problem.textContent = describeError(error);
      problem.hidden = false;
      announce("");
    } finally {
      submit.disabled = false;
    }
  } },
  field("Question", query, "What the agent would ask its memory, in plain words."),
  field("Limit (optional)", limit, "Most results; empty: as many as the token budget holds."),
  field("Token budget (optional)", budget, "Tokens for the packed context; empty: the server's default."),
  field("Minimum relevance (optional)", minScore, "0 to 1; empty: none."),
  h("div", {}, submit));
  return {
    title: "Ask",
    body: h("section", { "aria-labelledby": "ask-title" },
      h("h1", { id: "ask-title", tabindex: "-1" }, "Ask"),
      h("p", {}, "Run a retrieval as the agent would and open its receipt: the context the model would see, every candidate the search found, and why each was returned or left out. A small limit or token budget shows more left out."),
      form, problem),
  };
}
