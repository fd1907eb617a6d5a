// The landing page: what this owner has stored, and where to go from here.

import { facts, h } from "../dom.js";

export async function render({ api, session }) {
  const stats = await api.get("/v1/stats");
  const byState = Object.entries(stats.nodes_by_lifecycle_state || {}).map(([state, count]) => `${state} ${count}`).join(", ");
  const byType = Object.entries(stats.nodes_by_type || {}).map(([type, count]) => `${type} ${count}`).join(", ");
  return {
    title: "Overview",
    body: h("section", { "aria-labelledby": "overview-title" },
      h("h1", { id: "overview-title", tabindex: "-1" }, `Memory of ${session.owner}`),
      facts([
        ["Source events", String(stats.events)],
        ["Memory nodes", String(stats.nodes)],
        ["By lifecycle", byState || "—"],
        ["By type", byType || "—"],
        ["Waiting to be indexed", String(stats.pending_materializations)],
        ["Waiting for extraction", String(stats.pending_extractions)],
      ]),
      h("p", {}, "Why did the agent see a memory, or not? Ask a question and open its receipt, or start from a memory and see the retrievals that returned it."),
      h("p", { class: "muted" }, "Memory content is shown as plain text, exactly as stored."),
    ),
  };
}
