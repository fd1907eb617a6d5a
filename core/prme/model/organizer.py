"""The organizer's request and reports: which maintenance jobs to run on one owner's memory,
within what time, and what each job scanned, changed and left for the next run."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictInt

# The jobs in the order a run takes them: promotion first (it only needs age and evidence),
# then decay, whose written values the archive and deprecate thresholds read, then dedup
# and the TTL sweep.
OrganizerJob = Literal["promote", "decay", "archive", "deprecate", "dedup", "ttl_sweep"]
ORGANIZER_JOBS: tuple[OrganizerJob, ...] = get_args(OrganizerJob)
MAX_BUDGET_MS = 60_000
DEFAULT_BUDGET_MS = 5_000

ORGANIZE_EXAMPLE: dict[str, Any] = {"jobs": ["promote", "archive"], "budget_ms": 2000}


class OrganizeInput(BaseModel):
    """One organizer run over the owner's memory."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", json_schema_extra={"examples": [ORGANIZE_EXAMPLE]}
    )

    jobs: tuple[OrganizerJob, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=len(ORGANIZER_JOBS),
        description="Jobs to run, each at most once, run in the organizer's fixed order; "
        f"omitted: all of {', '.join(ORGANIZER_JOBS)}",
    )
    budget_ms: StrictInt = Field(
        default=DEFAULT_BUDGET_MS,
        ge=1,
        le=MAX_BUDGET_MS,
        description="Time the run may take, in milliseconds; jobs stop between memories when "
        "it is spent and the next run continues where they stopped",
    )

    def selected_jobs(self) -> tuple[OrganizerJob, ...]:
        """The asked jobs, once each, in the organizer's order."""
        asked = set(self.jobs or ORGANIZER_JOBS)
        return tuple(job for job in ORGANIZER_JOBS if job in asked)


class OrganizerJobReport(BaseModel):
    """What one job did in one run."""

    model_config = ConfigDict(frozen=True)

    scanned: int = Field(description="Memories the job examined in this run")
    changed: int = Field(description="Memories the job changed (each with its journal record)")
    complete: bool = Field(
        description="Whether the job reached the end of the owner's memories; false: the "
        "budget ran out and the next run continues after `cursor`"
    )
    cursor: str | None = Field(
        default=None,
        description="The id of the last memory examined when the job stopped part way",
    )


class OrganizeReport(BaseModel):
    """What one organizer run did, per job."""

    model_config = ConfigDict(frozen=True)

    jobs_run: list[OrganizerJob] = Field(description="The jobs this run started, in order")
    per_job: dict[str, OrganizerJobReport] = Field(description="Each started job's report")
    duration_ms: int = Field(description="Wall time of the run, in milliseconds")
    complete: bool = Field(description="Whether every asked job reached the end of its pass")


class OrganizerPass(BaseModel):
    """What a maintenance pass of the organizer over many owners did."""

    model_config = ConfigDict(frozen=True)

    owners_visited: int
    owners_complete: int
    changed: int
    # Whether every owner was organized; None when the pass fell outside the daily window.
    complete: bool | None
