"""The inspector's files as shipped: every page builds its DOM from text nodes (no HTML
strings, no code from strings), loads nothing from elsewhere, and has nothing inline that the
Content-Security-Policy would have to allow."""

from __future__ import annotations

import re

import pytest

from prme.http.inspector import CONTENT_SECURITY_POLICY, asset_directory, inspector_assets

SCRIPTS = sorted(path for path in asset_directory().rglob("*.js"))
# Sinks that turn a string into markup or code. Memory content reaching one of them is an XSS.
FORBIDDEN_SINKS = re.compile(
    r"\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function\b"
    r"|setTimeout\s*\(\s*['\"`]|setInterval\s*\(\s*['\"`]|createContextualFragment|DOMParser"
)


def test_the_package_ships_the_page_its_scripts_and_styles() -> None:
    names = set(inspector_assets())
    assert {"index.html", "inspector.css", "js/app.js", "js/dom.js", "js/api.js"} <= names
    assert len(SCRIPTS) >= 4


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_no_script_turns_strings_into_markup_or_code(script: object) -> None:
    text = script.read_text(encoding="utf-8")  # type: ignore[attr-defined]
    # The rule's own comment in dom.js names the sinks; code never uses them.
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    assert FORBIDDEN_SINKS.search(code) is None


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_no_script_reaches_another_origin(script: object) -> None:
    text = script.read_text(encoding="utf-8")  # type: ignore[attr-defined]
    assert re.search(r"https?://", text) is None


def test_the_page_has_no_inline_script_style_or_handler() -> None:
    page = (asset_directory() / "index.html").read_text(encoding="utf-8")
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page) is None
    assert "<style" not in page
    assert re.search(r"\son[a-z]+\s*=", page) is None
    assert re.search(r"(src|href)=\"(https?:)?//", page) is None


def test_the_policy_allows_only_this_origin_and_no_inline_code() -> None:
    directives = dict(
        part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";") if part.strip()
    )
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY
