"""The value-bindings seed example from the contract, run unchanged on the default engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.mark.slow
def test_seed_example_runs_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    from prme import MemoryClient, MemoryValueBinding

    with MemoryClient("./memory") as memory:
        memory.store(
            '{"plan":"Current City: Salt Lake City(Utah)"}',
            retrieval_content="Confirmed plan\nCurrent City: Salt Lake City(Utah)",
            value_bindings=[
                MemoryValueBinding(
                    reference="current-city-1",
                    kind="city",
                    presentation="Salt Lake City(Utah)",
                    lookup="Salt Lake City",
                )
            ],
            user_id="alice",
        )

        response = memory.retrieve("Which city?", user_id="alice")
        print(response.bundle.render_value_bindings())

        resolution = response.bundle.resolve_tool_arguments({"city": "Salt Lake City(Utah)"})
        assert resolution.arguments == {"city": "Salt Lake City"}
        assert resolution.binding_uses[0].operation == "replaced"
    assert os.path.isdir(tmp_path / "memory")
