"""The organizer's thresholds are read from `PRME_ORGANIZER__*` and checked when read."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from prme.settings import Settings


def test_thresholds_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_ORGANIZER__PROMOTION_AGE_DAYS", "3")
    monkeypatch.setenv("PRME_ORGANIZER__DEPRECATE_CONFIDENCE", "0.2")
    organizer = Settings().engine.organizer
    assert (organizer.promotion_age_days, organizer.deprecate_confidence) == (3.0, 0.2)
    # The others keep PRME 0.15's defaults.
    assert (organizer.archive_salience, organizer.archive_confidence) == (0.10, 0.40)
    assert organizer.force_archive_salience == 0.05


def test_a_threshold_outside_zero_to_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_ORGANIZER__ARCHIVE_SALIENCE", "1.5")
    with pytest.raises(ValidationError):
        Settings()
