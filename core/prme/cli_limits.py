"""`prme limits show|set|clear`: the service provider's per-tenant limits, written on the
configured backend (like `prme keys`); a tenant's own keys can read its limits, never set them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from prme.composition import open_limits
from prme.errors import safe_message
from prme.model.limits import LimitName, TenantLimits
from prme.settings import Settings

UNLIMITED = "unlimited"
# The limits `set` can change, as option names and the TenantLimits fields they set.
OPTIONS = {
    "--requests-per-second": "requests_per_second",
    "--burst": "burst",
    "--stored-records": "stored_records",
    "--stored-bytes": "stored_bytes",
    "--retrievals-per-day": "retrievals_per_day",
}


class LimitsUsageError(ValueError):
    """A command line `prme limits` cannot use; the message says which option and why."""


def _limit_value(text: str) -> int | None:
    """A whole number or `unlimited`; range checks are TenantLimits' own."""
    if text.strip().lower() == UNLIMITED:
        return None
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or {UNLIMITED!r}, got {text[:40]!r}"
        ) from None


def add_parser(command: Callable[..., argparse.ArgumentParser], sub: Any) -> None:
    limits = command(sub, "limits", "show or set a tenant's limits (the service provider's)")
    actions = limits.add_subparsers(dest="limits_command", required=True, metavar="ACTION")
    show = command(actions, "show", "a tenant's limits and its use of them")
    show.add_argument("--tenant", required=True, help="the tenant id")
    show.add_argument("--json", action="store_true", help="print the report as JSON")
    change = command(
        actions,
        "set",
        "set a tenant's own limits (the rest are kept: its own, else the defaults)",
    )
    change.add_argument("--tenant", required=True, help="the tenant id")
    for option, field in OPTIONS.items():
        change.add_argument(
            option,
            dest=field,
            type=_limit_value,
            default=argparse.SUPPRESS,
            metavar="N|unlimited",
            help=TenantLimits.model_fields[field].description,
        )
    clear = command(actions, "clear", "remove a tenant's own limits: the defaults apply again")
    clear.add_argument("--tenant", required=True, help="the tenant id")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """`prme limits ...`; raises LimitsUsageError for a value the limits refuse."""
    tenant = args.tenant.strip()
    if not tenant or len(tenant) > 128:
        raise LimitsUsageError("--tenant needs a tenant id of 1 to 128 characters")
    gate, close = open_limits(settings, args.data_dir)
    try:
        if args.limits_command == "set":
            changes = {field: getattr(args, field) for field in OPTIONS.values() if field in args}
            if not changes:
                raise LimitsUsageError(f"give at least one of {', '.join(OPTIONS)}")
            current, _ = gate.limits_of(tenant)
            try:
                limits = TenantLimits.model_validate({**current.model_dump(), **changes})
            except ValidationError as exc:
                first = exc.errors(include_input=False, include_url=False)[0]
                option = "--" + str(first["loc"][0]).replace("_", "-")
                raise LimitsUsageError(f"{option}: {safe_message(first['msg'])}") from None
            gate.set_limits(tenant, limits)
        elif args.limits_command == "clear" and not gate.clear_limits(tenant):
            print(f"tenant {tenant!r} had no limits of its own; the defaults apply")
            return 0
        report = gate.report(tenant)
    finally:
        close()
    if getattr(args, "json", False):
        print(json.dumps(report.model_dump(mode="json"), indent=2))
        return 0
    source = "its own" if report.overridden else "the defaults"
    print(f"tenant {tenant!r}: {source}")
    for usage in report.limits:
        value = UNLIMITED if usage.limit_value is None else str(usage.limit_value)
        if usage.limit is LimitName.REQUESTS_PER_SECOND and report.burst is not None:
            value += f" (burst {report.burst} per {usage.window_seconds:g} s)"
        used = "-" if usage.used is None else str(usage.used)
        resets = usage.resets_at.isoformat() if usage.resets_at else "-"
        print(f"  {usage.limit.value:20}  {value:32}  used {used:>12}  resets {resets}")
    return 0
