// Who is signed in, kept in this tab's sessionStorage only: closing the tab forgets the key.
// The key never goes into a URL, a cookie or localStorage.

const STORE = "prme-inspector";

export function loadSession() {
  try {
    const saved = JSON.parse(window.sessionStorage.getItem(STORE) || "null");
    if (saved && typeof saved === "object") return { key: null, owner: null, role: null, ...saved };
  } catch (ignored) {
    // A damaged entry is the same as none.
  }
  return { key: null, owner: null, role: null, tenant: null, keyId: null };
}

export function saveSession(session) {
  window.sessionStorage.setItem(STORE, JSON.stringify(session));
}

export function forgetSession() {
  window.sessionStorage.removeItem(STORE);
}
