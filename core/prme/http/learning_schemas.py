"""Bodies of the learning routes (`/v1/learning/...`)."""

from __future__ import annotations

from prme.http.schemas import USER_ID
from prme.model.learning import LearningInput


class LearningEvaluationRequest(LearningInput):
    """POST /v1/learning/evaluate: fit ranking weights to the owner's judged retrievals and
    evaluate them on those held out."""

    user_id: str | None = USER_ID
