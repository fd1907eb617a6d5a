"""The memory inspector's static pages (HTML, CSS, JavaScript modules), shipped inside the
package and served under `/ui` by `prme.http.inspector`; no build step, nothing fetched."""
