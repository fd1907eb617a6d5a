// The JSON API as the pages call it: the signed-in key goes in the Authorization header of
// each request (never in a URL), and an operator's chosen owner goes in as `user_id`.

// Where the API lives: the pages are served at <base>/ui/, the API at <base>/v1/... (behind
// API Gateway <base> is the stage prefix).
export function apiBase() {
  const path = window.location.pathname;
  const at = path.lastIndexOf("/ui/");
  return at >= 0 ? path.slice(0, at) : "";
}

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || [];
  }
}

// What a person reads for each refusal; the API's own message follows where it has one.
const STATUS_TEXT = {
  401: "The key is missing, wrong or revoked. Sign in again.",
  403: "This key may not act for that owner.",
  404: "Not found: it does not exist, was deleted, or belongs to another owner.",
  409: "That conflicts with something already recorded.",
  413: "The request is too large.",
  422: "The input was refused; nothing was written.",
  429: "Too many requests for this tenant right now; try again shortly.",
  503: "A service the API depends on is unavailable; try again shortly.",
};

export function describeError(error) {
  if (!(error instanceof ApiError)) return "The request failed: the server could not be reached.";
  const base = STATUS_TEXT[error.status] || `The request failed (HTTP ${error.status}).`;
  const said = [error.message, ...error.details].filter((text) => text && text !== base);
  return said.length ? `${base} ${said.join("; ")}` : base;
}

export class Api {
  // session: { key: string|null, owner: string|null, role: string|null }
  constructor(session) {
    this.session = session;
    this.base = apiBase();
  }

  headers(extra = {}) {
    const headers = { Accept: "application/json", ...extra };
    if (this.session.key) headers.Authorization = `Bearer ${this.session.key}`;
    return headers;
  }

  // An operator names the owner on every call; an owner key's owner is implied.
  withOwner(params) {
    const owner = this.session.role === "owner" ? null : this.session.owner;
    // The chosen owner wins over anything a page passes: no page can act for another owner.
    return owner ? { ...params, user_id: owner } : { ...params };
  }

  url(path, params = {}) {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) {
      if (value === undefined || value === null || value === "") continue;
      if (Array.isArray(value)) value.forEach((item) => query.append(name, String(item)));
      else query.append(name, String(value));
    }
    const text = query.toString();
    const target = `${this.base}${path}`;
    // A path part of "." or ".." (an id taken from the address, say) would make the browser
    // resolve the URL to another route: /v1/nodes/.. is /v1/. Such a request never leaves.
    if (new URL(target, window.location.origin).pathname !== target) {
      throw new ApiError(422, "invalid_path", "That address does not name a record.");
    }
    return `${target}${text ? `?${text}` : ""}`;
  }

  async request(method, path, { params = {}, body, owner = true } = {}) {
    const options = { method, headers: this.headers(), credentials: "omit", cache: "no-store" };
    const query = owner && method === "GET" ? this.withOwner(params) : params;
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(owner ? this.withOwner(body) : body);
    }
    const url = this.url(path, query);
    let response;
    try {
      response = await fetch(url, options);
    } catch (cause) {
      throw new ApiError(0, "unreachable", "");
    }
    const type = response.headers.get("content-type") || "";
    const payload = type.includes("json") ? await response.json().catch(() => null) : null;
    if (!response.ok) {
      // Error bodies: {"detail": "text", "error": "code"} or, for 422, {"detail": [{loc, msg}]}.
      const detail = payload && typeof payload === "object" ? payload.detail : null;
      const messages = Array.isArray(detail)
        ? detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`) : [];
      const message = typeof detail === "string" ? detail : "";
      throw new ApiError(response.status, (payload && payload.error) || "", message, messages);
    }
    return payload;
  }

  get(path, params = {}, options = {}) {
    return this.request("GET", path, { ...options, params });
  }

  post(path, body = {}, options = {}) {
    return this.request("POST", path, { ...options, body });
  }
}
