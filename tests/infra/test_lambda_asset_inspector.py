"""The Lambda asset carries the inspector's pages: the api function serves them from the
package it runs, so every file `/ui` serves locally must be copied into the asset too."""

from __future__ import annotations

from pathlib import Path

from infra.package_lambda import REPO_ROOT, add_sources
from prme.http.inspector import inspector_assets


def test_the_asset_holds_every_file_the_inspector_serves(tmp_path: Path) -> None:
    add_sources(tmp_path, REPO_ROOT)
    static = tmp_path / "prme" / "inspector" / "static"
    served = inspector_assets()
    assert {"index.html", "js/app.js", "js/pages/review.js"} <= set(served)
    for name, source in served.items():
        assert (static / name).read_bytes() == source.read_bytes(), name
