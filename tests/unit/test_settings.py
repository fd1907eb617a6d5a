"""Settings that cannot work are refused when read, with the reason."""

from __future__ import annotations

import pytest

from prme.settings import Settings


def test_settings_refuse_opensearch_serverless_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(Settings.env_name("opensearch_auth"), "aoss")
    with pytest.raises(ValueError, match=r"Serverless \(aoss\) is not supported"):
        Settings()


def test_replicas_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(Settings.env_name("opensearch_replicas"), "2")
    assert Settings().opensearch_replicas == 2
