// The inspector's shell: sign-in, the header, and a hash router that renders one page at a
// time into <main>. Routes look like #/memory/<id>?tab=x; nothing secret is ever in them.

import { Api, ApiError, describeError } from "./api.js";
import { clear, field, h, route } from "./dom.js";
import { forgetSession, loadSession, saveSession } from "./session.js";

// Every page is a module whose `render(ctx)` resolves to { title, body }. Pages with `nav`
// are listed in the header, in this order; `section` says which header entry a page lights up.
const PAGES = {
  overview: { nav: "Overview", load: () => import("./pages/overview.js") },
  memories: { nav: "Memories", load: () => import("./pages/memories.js") },
  memory: { section: "memories", load: () => import("./pages/memory.js") },
  event: { section: "memories", load: () => import("./pages/event.js") },
  retrievals: { nav: "Retrievals", load: () => import("./pages/retrievals.js") },
  retrieval: { section: "retrievals", load: () => import("./pages/retrieval.js") },
  ask: { nav: "Ask", load: () => import("./pages/ask.js") },
  review: { nav: "Review", load: () => import("./pages/review.js") },
};
const DEFAULT_PAGE = "overview";

let session = loadSession();
let renderCount = 0;
// A message for the next sign-in form (set when the form re-renders in another state).
let pendingMessage = "";

function announce(text) {
  const status = document.getElementById("status");
  status.textContent = text;
}

function parseHash() {
  const raw = window.location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map((part) => {
    try { return decodeURIComponent(part); } catch (ignored) { return part; }
  });
  return { name: parts[0] || DEFAULT_PAGE, parts: parts.slice(1), params: new URLSearchParams(query) };
}

export function navigate(hash) {
  if (window.location.hash === hash) render();
  else window.location.hash = hash;
}

function signedIn() {
  return Boolean(session.role) && (session.role === "owner" || Boolean(session.owner));
}

function renderHeader(current) {
  const nav = document.getElementById("site-nav");
  const who = document.getElementById("who");
  clear(nav);
  clear(who);
  nav.hidden = !signedIn();
  who.hidden = !session.role;
  if (signedIn()) {
    const section = (PAGES[current] && PAGES[current].section) || current;
    nav.append(h("ul", {}, Object.entries(PAGES).filter(([, page]) => page.nav).map(([name, page]) =>
      h("li", {}, h("a", { href: route(name), "aria-current": name === section ? "page" : null }, page.nav)))));
  }
  if (!session.role) return;
  const role = session.role === "owner" ? "owner key" : session.keyless ? "local, no key" : "operator key";
  who.append(h("span", {}, session.owner ? `Owner ${session.owner}` : "No owner chosen", ` · ${role}`));
  if (session.role !== "owner") {
    who.append(h("button", { type: "button", class: "secondary", onClick: () => {
      session = { ...session, owner: null };
      saveSession(session);
      render();
    } }, "Change owner"));
  }
  if (session.key) {
    who.append(h("button", { type: "button", class: "secondary", onClick: () => {
      forgetSession();
      session = loadSession();
      announce("Signed out.");
      navigate(route(DEFAULT_PAGE));
    } }, "Sign out"));
  }
}

// Who the key is: GET /v1/me. Without a key this succeeds only on a local `prme serve` that
// has no key yet (keyless mode); anywhere else it is a 401 and the sign-in form shows.
async function identify(key) {
  const api = new Api({ key, owner: null, role: "owner" });
  const me = await api.get("/v1/me", {}, { owner: false });
  return {
    key,
    role: me.role,
    keyless: Boolean(me.keyless),
    owner: me.owner_id || null,
    suggestedOwner: me.default_owner_id || null,
    tenant: me.tenant_id || null,
    keyId: me.key_id || null,
  };
}

function signInPage(message) {
  const keyInput = h("input", { type: "password", name: "key", autocomplete: "off", spellcheck: "false", size: 48 });
  const ownerInput = h("input", { type: "text", name: "owner", autocomplete: "off", spellcheck: "false", size: 32, value: session.owner || session.suggestedOwner || "" });
  const problem = h("p", { class: "error", role: "alert", hidden: !message }, message || "");
  const needsKey = !session.role;
  const form = h("form", { class: "signin", "aria-labelledby": "signin-title", onSubmit: async () => {
    problem.hidden = true;
    try {
      const who = needsKey ? await identify(keyInput.value.trim() || null) : { ...session };
      const owner = who.role === "owner" ? who.owner : ownerInput.value.trim();
      if (!owner) {
        session = { ...who, owner: null };
        saveSession(session);
        pendingMessage = "An operator key acts for one owner at a time: enter the owner's user_id.";
        render();
        return;
      }
      session = { ...who, owner };
      saveSession(session);
      announce(`Signed in for owner ${owner}.`);
      render();
    } catch (error) {
      problem.textContent = error instanceof ApiError ? describeError(error) : error.message;
      problem.hidden = false;
      renderHeader("signin");
    }
  } },
  needsKey ? field("API key", keyInput, "Kept in this browser tab only; closing the tab forgets it.") : null,
  field("Owner (user_id)", ownerInput, needsKey ? "Needed with an operator key; an owner key knows its owner." : "The owner whose memory to inspect."),
  h("button", { type: "submit" }, needsKey ? "Sign in" : "Open"),
  );
  return {
    title: needsKey ? "Sign in" : "Choose an owner",
    body: h("section", { "aria-labelledby": "signin-title" },
      h("h1", { id: "signin-title", tabindex: "-1" }, needsKey ? "Sign in" : "Choose an owner"),
      problem, form),
  };
}

function errorPage(error) {
  return {
    title: "Error",
    body: h("section", {}, h("h1", { tabindex: "-1" }, "Something went wrong"),
      h("p", { class: "error", role: "alert" }, describeError(error))),
  };
}

async function render() {
  const ticket = ++renderCount;
  const { name, parts, params } = parseHash();
  const main = document.getElementById("main");
  let page;
  if (!signedIn()) {
    page = signInPage(pendingMessage);
    pendingMessage = "";
  } else if (!PAGES[name]) {
    page = { title: "Not found", body: h("section", {}, h("h1", { tabindex: "-1" }, "No such page"),
      h("p", {}, "The inspector has no page at this address. ", h("a", { href: route(DEFAULT_PAGE) }, "Go to the overview."))) };
  } else {
    announce("Loading…");
    const api = new Api(session);
    try {
      const module = await PAGES[name].load();
      page = await module.render({ api, session, parts, params, navigate, announce, describeError, route });
      announce("");
    } catch (error) {
      if (error instanceof ApiError && error.status === 401 && session.key) {
        forgetSession();
        session = loadSession();
        page = signInPage(describeError(error));
      } else {
        page = errorPage(error);
      }
      announce("");
    }
  }
  if (ticket !== renderCount) return; // a later navigation already replaced this one
  renderHeader(name);
  clear(main).append(page.body);
  document.title = `${page.title} · PRME memory inspector`;
  const heading = main.querySelector("h1");
  (heading || main).focus();
}

async function start() {
  window.addEventListener("hashchange", render);
  // The skip link moves focus to the page's content without touching the route in the hash.
  document.getElementById("skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    document.getElementById("main").focus();
  });
  if (!session.role) {
    try {
      session = { ...(await identify(null)), owner: session.owner };
      if (session.role === "owner") session.owner = session.owner || null;
      saveSession(session);
    } catch (ignored) {
      session = loadSession(); // not a keyless local server: sign in with a key
    }
  }
  await render();
}

start();
