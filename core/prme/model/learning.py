"""Ranking profiles learned from feedback: the ranking weights a profile sets, and what the
evaluation of a proposal on held-out judgments found.

A profile changes only settings of the fused ranking that a saved receipt records
(`retrieval.fusion.FusionConfig`), so a receipt made under a profile replays with the
weights it was ranked by, and a proposal can be scored offline by re-ranking the
candidates of judged receipts. A weight left `None` keeps the value the engine's settings
give it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The fused-ranking channels a channel weight can scale (retrieval/fusion.py rank names).
CHANNELS: tuple[str, ...] = ("vector", "lexical")


class RankingWeights(BaseModel):
    """The fused-ranking settings a ranking profile overrides; `None` keeps the default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rrf_k: int | None = Field(default=None, ge=1, le=1000, description="k of 1/(k + rank)")
    channel_weights: dict[str, float] | None = Field(
        default=None,
        description="Multiplier of each channel's RRF term, by channel name (vector, "
        "lexical); a channel not named keeps 1",
    )
    speaker_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a record by a person the query names"
    )
    time_mention_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a record said in a period named"
    )
    session_neighbour_weight: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Share of the best session neighbour's score"
    )
    recency_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Recency bonus on current-state questions"
    )
    current_value_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a claim that superseded a value"
    )
    correction_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a record worded as a correction"
    )

    def overrides(self) -> dict[str, object]:
        """The weights this profile sets, by `FusionConfig` field name (unset ones left out)."""
        return self.model_dump(exclude_none=True)

    def is_neutral(self) -> bool:
        return not self.overrides()
