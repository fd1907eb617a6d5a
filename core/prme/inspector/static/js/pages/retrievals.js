// The owner's saved retrievals, newest first, each linking to its receipt; and a way to open
// any receipt by its request id.

import { ApiError } from "../api.js";
import { excerpt, field, formatTime, h, link, route, table } from "../dom.js";

const PAGE_SIZE = 25;

function openByIdForm(navigate) {
  const input = h("input", { type: "text", name: "request_id", autocomplete: "off", spellcheck: "false", size: 40, required: true });
  return h("form", { class: "inline", "aria-label": "Open a receipt by request id", onSubmit: () => {
    const id = input.value.trim();
    if (id) navigate(route("retrieval", id));
  } },
  field("Request id", input, "metrics.request_id of a retrieval"),
  h("button", { type: "submit", class: "secondary" }, "Open receipt"));
}

async function listing(api, cursor) {
  try {
    return { page: await api.get("/v1/retrievals", { limit: PAGE_SIZE, cursor }) };
  } catch (error) {
    // A server without the listing route answers 404 or 405 for the bare collection.
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) return { unavailable: true };
    throw error;
  }
}

export async function render({ api, params, navigate }) {
  const cursor = params.get("cursor") || null;
  const { page, unavailable } = await listing(api, cursor);
  const parts = [];
  if (unavailable) {
    parts.push(h("p", { class: "warn", role: "note" },
      "This server cannot list saved retrievals (it has no GET /v1/retrievals). Run a retrieval from ",
      link("Ask", route("ask")), ", or open a receipt by its request id below."));
  } else {
    const items = page.retrievals || page.items || [];
    if (!items.length) {
      parts.push(h("p", {}, cursor ? "No older retrievals." : "No saved retrieval yet. ",
        cursor ? "" : link("Ask a question", route("ask")), cursor ? "" : " to make one."));
    } else {
      parts.push(table("Saved retrievals, newest first", ["When", "Question", "Returned", "Candidates", "Tokens used", "Context format"],
        items.map((item) => [
          formatTime(item.created_at),
          // A long query is listed by its start (query_truncated); the receipt has all of it.
          link(item.query_truncated ? `${excerpt(item.query, 120)}…` : excerpt(item.query, 120), route("retrieval", item.request_id)),
          String(item.returned_count ?? "—"),
          String(item.candidate_count ?? "—"),
          String(item.tokens_used ?? "—"),
          item.context_format || "—",
        ]), { numeric: [2, 3, 4] }));
    }
    const pager = h("nav", { class: "pager", "aria-label": "Pages of retrievals" });
    if (cursor) pager.append(link("First page", route("retrievals")));
    if (page.next_cursor) pager.append(link("Next page", route("retrievals", { cursor: page.next_cursor })));
    if (pager.childNodes.length) parts.push(pager);
  }
  return {
    title: "Retrievals",
    body: h("section", { "aria-labelledby": "retrievals-title" },
      h("h1", { id: "retrievals-title", tabindex: "-1" }, "Retrievals"),
      h("p", {}, "Every retrieval saves a receipt: what was asked, every candidate with how it was scored, and why each was returned or left out. Open one to see why the agent saw a memory, or did not."),
      parts,
      h("h2", {}, "Open a receipt"),
      openByIdForm(navigate)),
  };
}
