"""The `prme` command: serve HTTP or MCP, manage keys, bootstrap AWS, run work, reindex, search,
list, delete, erase, count, export and import an owner's memories.

Exit codes: 0 done; 1 the command ran and failed (a key id that does not exist, storage or
the embedder unavailable); 2 the command line or a `PRME_*` setting is wrong, nothing was
done; 70 an internal error (a bug: `--debug` shows its traceback); 130 interrupted; 141,
silently, when the reader of its output went away (`| head`). Every failure is one line on
stderr that says what is wrong and what to do."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import shlex
import sys
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import SettingsError

from prme import cli_imports, cli_limits
from prme.composition import open_backend
from prme.engine.credentials import CredentialService
from prme.engine.service import MemoryEngine
from prme.errors import (
    BadRequestError,
    EmbeddingUnavailableError,
    InvalidRequestError,
    NotFoundError,
    PrmeError,
    StorageUnavailableError,
    safe_message,
)
from prme.http.schemas import EventListQuery, NodeListQuery
from prme.model.enums import CredentialRole
from prme.model.listings import EventPage, NodePage
from prme.model.portability import ExportPage
from prme.model.records import Event, MemoryNode, OwnerKey
from prme.model.usage import UsageUnits
from prme.settings import ENV_PREFIX, Settings

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141
LOG_LEVELS = ("debug", "info", "warning", "error")


class UsageError(Exception):
    """The command line or the settings cannot work; the message says what to change."""


class CommandFailedError(Exception):
    """The command ran and failed; the message says why and what to try."""


# Commands that open the search index, which the aws backend finds at PRME_OPENSEARCH_URL.
_OPENS_SEARCH_INDEX = {
    "serve",
    "worker",
    "reindex",
    "search",
    "mcp",
    "list",
    "delete",
    "erase",
    "stats",
    "export",
    "import",
    "usage",
}


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from prme.http.auth import AuthPolicy, is_loopback_name

    if args.backend:
        settings = settings.model_copy(update={"backend": args.backend})
    backend = open_backend(settings, args.data_dir)
    keyed = backend.credentials.any_active()
    if not is_loopback_name(args.host) and not keyed:
        backend.close()
        raise UsageError(
            f"refusing to bind {args.host}: no API key exists, so the API would be open to the "
            "network; create one with `prme keys create --user-id NAME` or bind 127.0.0.1"
        )
    import uvicorn

    from prme.http.app import create_app
    from prme.http.dependencies import ApiRuntime
    from prme.logs import start_json_logging

    # Keyless calls are a local convenience of the embedded default, never of the cloud backend,
    # and are decided here, once: a key created later closes them until restart.
    local = is_loopback_name(args.host) and settings.backend == "embedded"
    policy = AuthPolicy.at_startup(
        backend.credentials, local_tenant=settings.tenant_id if local else None
    )
    app = create_app(
        ApiRuntime(
            engine=backend.engine,
            credentials=backend.credentials,
            auth=policy,
            max_body_bytes=settings.max_body_bytes,
            max_response_bytes=settings.max_response_bytes,
            request_budget_ms=settings.request_budget_ms,
            mcp_tools=settings.mcp_tools,
        )
    )
    base = f"http://{args.host}:{args.port}"
    where = settings.backend if settings.backend == "aws" else args.data_dir or settings.data_dir
    print(f"PRME serving {where} at {base}  (docs: {base}/docs)")
    if not policy.keyless_open:
        print("Send 'Authorization: Bearer <key>' with every request (prme keys create).")
    else:
        print(
            "No API key exists: loopback callers act as an operator (user_id defaults to 'default')"
            " until a key is created."
        )
    print(
        f"  curl -s {base}/v1/store -H 'content-type: application/json' "
        '-d \'{"content": "I moved to Lisbon in May.", "user_id": "alice"}\''
    )
    print(
        f"  curl -s {base}/v1/retrieve -H 'content-type: application/json' "
        '-d \'{"query": "Where do I live?", "user_id": "alice"}\''
    )
    sys.stdout.flush()
    # JSON lines on stderr from a background thread; uvicorn's own loggers included, and no
    # access log of its own (the request middleware writes one line per request).
    level = logging.getLevelNamesMapping()[args.log_level.upper()]
    listener = start_json_logging(("prme", "uvicorn"), level=level)
    # uvicorn's own info lines repeat the banner above; its warnings and errors stay.
    logging.getLogger("uvicorn").setLevel(max(level, logging.WARNING))
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)
    except SystemExit as exc:
        # uvicorn exits by itself when it cannot start (a port in use, say), after logging why.
        failed = exc.code not in (None, 0)
    else:
        failed = False
    finally:
        listener.stop()
        backend.close()
    if failed:
        raise CommandFailedError(
            f"could not serve at {base} (the log line above says why); "
            "choose another --port or --host"
        )
    return 0


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    if settings.backend == "aws":
        from prme.backends.aws.service import open_aws_credentials

        # Keys live in the table only: no embedder, queue or search setting is read.
        return _manage_keys(args, settings, open_aws_credentials(settings))
    backend = open_backend(settings, args.data_dir)
    try:
        return _manage_keys(args, settings, backend.credentials)
    finally:
        backend.close()


def _manage_keys(args: argparse.Namespace, settings: Settings, service: CredentialService) -> int:
    if args.keys_command == "create":
        if args.operator == (args.user_id is not None):
            raise UsageError("give exactly one of --user-id NAME or --operator")
        # Keyless local mode (embedded `prme serve` on loopback) lasts only while no key exists.
        ends_keyless = settings.backend == "embedded" and not service.any_active()
        issued = service.create(
            tenant_id=settings.tenant_id,
            owner_id=args.user_id,
            role=CredentialRole.OPERATOR if args.operator else CredentialRole.OWNER,
            label=args.label,
        )
        c = issued.credential
        print(f"key_id: {c.key_id}\nrole: {c.role.value}\nuser_id: {c.owner_id or '-'}")
        print(f"api_key: {issued.secret}")
        print("Store the api_key now: only its hash is kept.", file=sys.stderr)
        if ends_keyless:
            print(
                "note: this is the first active key: a keyless `prme serve` running on this data"
                " directory now requires a key on every request, whatever its banner said.",
                file=sys.stderr,
            )
    elif args.keys_command == "list":
        for c in service.list(settings.tenant_id):
            state = "revoked" if c.revoked_at else "active"
            # Labels and user ids stored before their character checks may hold anything.
            user = visible(c.owner_id, KEY_FIELD_CHARS) if c.owner_id else "-"
            label = visible(c.label, KEY_FIELD_CHARS)
            print(f"{c.key_id}  {c.role.value:8}  {user:20}  {state:7}  {label}")
    else:
        try:
            revoked = service.revoke(args.key_id)
        except NotFoundError:
            raise CommandFailedError(
                "no API key has that key_id; `prme keys list` shows them"
            ) from None
        print(f"revoked {revoked.key_id}")
    return 0


def _limits(args: argparse.Namespace, settings: Settings) -> int:
    try:
        return cli_limits.run(args, settings)
    except cli_limits.LimitsUsageError as exc:
        raise UsageError(str(exc)) from None


def _bootstrap(_args: argparse.Namespace, settings: Settings) -> int:
    """Create the AWS resources (table, queues, index); safe to repeat. A CDK deployment
    needs none of it (the stack makes all three); it sets up the local AWS or a hand-made one."""
    from prme.backends.aws.service import bootstrap_from_settings, build_clients

    if not settings.opensearch_url:
        raise UsageError(
            "bootstrap needs the AWS settings: set PRME_OPENSEARCH_URL and an AWS region and "
            "credentials (or AWS_ENDPOINT_URL for the local AWS); see docs/aws-backend.md"
        )
    bootstrap_from_settings(
        settings, build_clients(settings), dimension=settings.embedding_dimension, say=print
    )
    return 0


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    backend = open_backend(settings, args.data_dir)
    try:
        report = backend.engine.process_materializations(None, budget_ms=args.budget_ms)
        aliases = backend.engine.propose_aliases(None)
        print(
            f"processed={report.processed} pending={report.pending} failed={report.failed} "
            f"alias_proposals={aliases.proposals_created} "
            f"alias_pairs_compared={aliases.pairs_compared} "
            f"alias_scan_complete={str(aliases.complete).lower()}"
        )
        return 0
    finally:
        backend.close()


def _reindex(args: argparse.Namespace, settings: Settings) -> int:
    """Re-embed one owner's records, or every owner's of the tenant, with the current
    embedder and vector settings."""
    from prme.engine.identity import validate_user_id

    if args.start_after is not None and not args.all_users:
        raise UsageError("--start-after goes with --all-users")
    backend = open_backend(settings, args.data_dir)
    try:
        if not args.all_users:
            return _reindex_owner(backend.engine, settings, validate_user_id(args.user_id))
        return _reindex_tenant(backend.engine, settings, args.start_after)
    finally:
        backend.close()


def _reindex_owner(engine: MemoryEngine, settings: Settings, user_id: str) -> int:
    owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=user_id)

    def say(done: int, total: int) -> None:
        print(f"reindexed {done}/{total} records", file=sys.stderr, flush=True)

    try:
        report = engine.reindex(owner, progress=say)
    except PrmeError as exc:
        # Batches before the failure are rewritten; a rerun redoes every record.
        print(f"reindex stopped: {exc.detail}. Run it again when that is fixed.", file=sys.stderr)
        return 1
    print(f"reindexed={report.nodes} batches={report.batches} model={report.embedding_model}")
    return 0


def _reindex_tenant(engine: MemoryEngine, settings: Settings, start_after: str | None) -> int:
    """Every owner of the tenant in id order; a stop says how to resume after the last
    owner that finished (reindexing an owner again is harmless, only slower)."""
    owners = engine.list_owners(settings.tenant_id)
    if start_after is not None:
        owners = [o for o in owners if o > start_after]
    print(f"tenant {settings.tenant_id}: {len(owners)} owners to reindex", file=sys.stderr)
    finished: str | None = start_after
    records = 0
    for position, user_id in enumerate(owners, start=1):
        owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=user_id)

        def say(done: int, total: int, *, user_id: str = user_id, position: int = position) -> None:
            print(
                f"[{position}/{len(owners)}] {user_id}: reindexed {done}/{total} records",
                file=sys.stderr,
                flush=True,
            )

        try:
            report = engine.reindex(owner, progress=say)
        except PrmeError as exc:
            resume = "" if finished is None else f" --start-after {shlex.quote(finished)}"
            print(
                f"reindex stopped at {user_id}: {exc.detail}. Owners before it are done; when "
                f"that is fixed, run: prme reindex --all-users{resume}",
                file=sys.stderr,
            )
            return 1
        finished = user_id
        records += report.nodes
        print(f"user_id={user_id} reindexed={report.nodes} batches={report.batches}", flush=True)
    print(f"owners={len(owners)} reindexed={records}")
    return 0


def _search(args: argparse.Namespace, settings: Settings) -> int:
    """One retrieval for one owner: the packed context, then each result's context ref, node
    id, score and type (or the whole response as JSON)."""
    from prme.engine.identity import validate_user_id
    from prme.model.inputs import RetrieveInput

    given = {"query": args.query, "token_budget": args.token_budget, "limit": args.limit}
    try:
        request = RetrieveInput.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise InvalidRequestError.from_validation(exc) from None
    owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=validate_user_id(args.user_id))
    backend = open_backend(settings, args.data_dir)
    try:
        response = backend.engine.retrieve(owner, request)
    finally:
        backend.close()
    if args.json:
        print(response.model_dump_json(indent=2))
        return 0
    print(response.bundle.context)
    refs = {node_id: ref for ref, node_id in response.bundle.context_references.items()}
    print(f"\n{len(response.results)} results (context ref, node id, score, type):")
    for result in response.results:
        ref = refs.get(result.node_id, "-")
        print(f"{ref}  {result.node_id}  {result.score:.4f}  {result.node_type.value}")
    return 0


PREVIEW_CHARS = 80
# Control, format (bidi overrides, zero-width), unassigned and line/paragraph separators:
# memory content is untrusted, so none of it may reach a terminal raw.
_INVISIBLE_CATEGORIES = ("C", "Zl", "Zp")
# The most of a key's user id or label `prme keys list` shows.
KEY_FIELD_CHARS = 256
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def visible(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The first `limit` characters of untrusted text on one line, every control or format
    character shown as an escape, never sent to the terminal."""
    shown = []
    for char in text[:limit]:
        if char in _NAMED_ESCAPES:
            shown.append(_NAMED_ESCAPES[char])
        elif unicodedata.category(char).startswith(_INVISIBLE_CATEGORIES):
            code = ord(char)
            shown.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            shown.append(char)
    return "".join(shown) + ("..." if len(text) > limit else "")


def _owner(args: argparse.Namespace, settings: Settings) -> OwnerKey:
    from prme.engine.identity import validate_user_id

    return OwnerKey(tenant_id=settings.tenant_id, owner_id=validate_user_id(args.user_id))


# Query fields whose option is not the field's own name in kebab case.
_LIST_FLAGS = {"lifecycle_state": "--state", "after_id": "--after"}


def _list_query(args: argparse.Namespace) -> NodeListQuery | EventListQuery:
    """The listing the options ask for, checked by the HTTP listing's own query model: the
    same rules and messages as GET /v1/nodes and GET /v1/events."""
    if args.events:
        for flag, value in (
            ("--node-type", args.node_type),
            ("--state", args.state),
            ("--scope", args.scope),
            ("--include-inactive", args.include_inactive or None),
        ):
            if value is not None:
                raise UsageError(f"{flag} lists nodes: drop it or drop --events")
        given = {"session_id": args.session_id, "role": args.role}
        query_model: type[NodeListQuery | EventListQuery] = EventListQuery
    else:
        if args.role:
            raise UsageError("--role filters events: add --events")
        given = {
            "node_type": args.node_type,
            "lifecycle_state": args.state,
            "scope": args.scope,
            "session_id": args.session_id,
            "include_inactive": args.include_inactive,
        }
        query_model = NodeListQuery
    given |= {"since": args.since, "until": args.until, "text": args.text}
    given |= {"limit": args.limit, "after_id": args.after}
    try:
        return query_model.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        refused = InvalidRequestError.from_validation(exc)
        # The contract's message, located by the option typed rather than the query field.
        field = str(refused.field[0]) if refused.field else ""
        flag = _LIST_FLAGS.get(field, "--" + field.replace("_", "-"))
        message = refused.detail.removeprefix(".".join(map(str, refused.field)) + ": ")
        raise InvalidRequestError(f"{flag}: {message}", field=refused.field) from None


def _read_page(
    engine: MemoryEngine,
    owner: OwnerKey,
    query: NodeListQuery | EventListQuery,
    cursor: str | None,
) -> tuple[list[MemoryNode] | list[Event], str | None]:
    if isinstance(query, EventListQuery):
        events = engine.list_events(owner, query.event_filter(), limit=query.limit, after_id=cursor)
        return events.items, events.next_after_id
    nodes = engine.list_nodes(owner, query.node_filter(), limit=query.limit, after_id=cursor)
    return nodes.items, nodes.next_after_id


def _list(args: argparse.Namespace, settings: Settings) -> int:
    """One owner's memory nodes (or, with --events, source events) a page at a time: one line
    per record, then the cursor of the next page; --all follows the cursors to the end."""
    query = _list_query(args)
    owner = _owner(args, settings)
    cursor = str(query.after_id) if query.after_id is not None else None
    records: list[MemoryNode | Event] = []
    backend = open_backend(settings, args.data_dir)
    try:
        pages = 0
        while True:
            page, cursor = _read_page(backend.engine, owner, query, cursor)
            pages += 1
            records.extend(page)
            if not args.json:
                for record in page:
                    print(_record_line(record))
            if not args.all or cursor is None:
                break
            print(f"listed {len(records)} records in {pages} pages, continuing", file=sys.stderr)
    finally:
        backend.close()
    if args.json:
        print(_page_json(records, cursor, events=args.events))
    else:
        if not records:
            print("no records on this page", file=sys.stderr)
        if cursor is not None:
            print(f"next page: --after {cursor}")
    return 0


def _page_json(records: list[MemoryNode | Event], cursor: str | None, *, events: bool) -> str:
    from prme.http.schemas import EventPageResponse, NodePageResponse

    if events:
        event_items = [r for r in records if isinstance(r, Event)]
        page = EventPageResponse.of(EventPage(items=event_items, next_after_id=cursor))
        return page.model_dump_json(indent=2)
    node_items = [r for r in records if isinstance(r, MemoryNode)]
    return NodePageResponse.of(NodePage(items=node_items, next_after_id=cursor)).model_dump_json(
        indent=2
    )


def _record_line(record: MemoryNode | Event) -> str:
    if isinstance(record, Event):
        return _event_line(record)
    return _node_line(record)


def _node_line(node: MemoryNode) -> str:
    moment = node.effective_time.isoformat(timespec="seconds")
    state = node.lifecycle_state.value
    return f"{node.id}  {node.node_type.value:10}  {state:10}  {moment}  {visible(node.content)}"


def _event_line(event: Event) -> str:
    moment = event.effective_time.isoformat(timespec="seconds")
    return f"{event.id}  {event.role.value:11}  {moment}  {visible(event.content)}"


def _delete(args: argparse.Namespace, settings: Settings) -> int:
    """Delete one source event and the memories derived from it, after a confirmation."""
    from uuid import UUID

    from pydantic import TypeAdapter

    try:
        event_id = str(TypeAdapter(UUID).validate_python(args.event_id))
    except ValidationError as exc:
        raise InvalidRequestError.from_validation(exc, prefix=("event_id",)) from None
    owner = _owner(args, settings)
    if not args.yes:
        answer = _ask(
            f"Delete event {event_id} of user {visible(owner.owner_id)} and the memories "
            "derived from it? [y/N] ",
            refused="nothing deleted: add --yes to delete without a terminal to confirm",
        )
        if answer.strip().lower() not in ("y", "yes"):
            raise CommandFailedError("nothing deleted: not confirmed")
    backend = open_backend(settings, args.data_dir)
    try:
        deletion = backend.engine.delete_memory(owner, event_id)
    except NotFoundError:
        raise CommandFailedError(
            "no event of that user has this id; `prme list --events` shows them"
        ) from None
    finally:
        backend.close()
    print(
        f"deleted event {deletion.event_id}: {len(deletion.deleted_node_ids)} memory nodes, "
        f"{deletion.edges_removed} edges, {deletion.work_items_removed} work items "
        f"(journal {deletion.journal_id})"
    )
    return 0


def _ask(question: str, *, refused: str) -> str:
    """The line typed in answer to `question`; UsageError(`refused`) without a terminal to
    ask on. The question goes to stderr: stdout carries only the command's result."""
    if not sys.stdin.isatty():
        raise UsageError(refused)
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline()


def _erase(args: argparse.Namespace, settings: Settings) -> int:
    """Erase everything stored for one owner, after the user id is typed again (or --yes)."""
    owner = _owner(args, settings)
    shown = visible(owner.owner_id)
    if not args.yes:
        # Typing the id, not just "y": the command cannot be confirmed by habit.
        answer = _ask(
            f"Erase everything stored for user {shown} (memories, journal, receipts, feedback, "
            "keys)? This cannot be undone. Type the user id to confirm: ",
            refused="nothing erased: add --yes to erase without a terminal to confirm",
        )
        if answer.rstrip("\n") != owner.owner_id:
            raise CommandFailedError("nothing erased: the user id was not typed")
    backend = open_backend(settings, args.data_dir)
    try:
        # One call removes a bounded number of records; a large owner takes several.
        while True:
            receipt = backend.engine.erase_owner(owner, confirm=owner.owner_id)
            if receipt.complete:
                break
            print(f"erasing: {receipt.removed.total} records removed so far", file=sys.stderr)
    finally:
        backend.close()
    if args.json:
        print(receipt.model_dump_json(indent=2))
        return 0
    counts = ", ".join(f"{name} {n}" for name, n in receipt.removed.model_dump().items() if n)
    print(f"erased user {shown}: {counts or 'nothing was stored'} (erasure {receipt.erasure_id})")
    return 0


def _stats(args: argparse.Namespace, settings: Settings) -> int:
    """Counts of one owner's stored memory."""
    owner = _owner(args, settings)
    backend = open_backend(settings, args.data_dir)
    try:
        stats = backend.engine.get_stats(owner)
    finally:
        backend.close()
    if args.json:
        print(stats.model_dump_json(indent=2))
        return 0
    print(f"events: {stats.events}\nnodes: {stats.nodes}")
    for state, count in sorted(stats.nodes_by_lifecycle_state.items()):
        print(f"  state {state.value}: {count}")
    for node_type, count in sorted(stats.nodes_by_type.items()):
        print(f"  type {node_type.value}: {count}")
    print(f"pending_materializations: {stats.pending_materializations}")
    print(f"pending_extractions: {stats.pending_extractions}")
    return 0


def _progress(verb: str) -> Callable[[int, int], None]:
    """Progress lines on stderr: records done of the total the file's header counts, and the
    rate so far."""
    started = time.monotonic()

    def say(done: int, total: int) -> None:
        rate = done / max(time.monotonic() - started, 1e-3)
        print(f"{verb} {done}/{total} records ({rate:.0f}/s)", file=sys.stderr, flush=True)

    return say


def _export(args: argparse.Namespace, settings: Settings) -> int:
    """Write one owner's memory to an NDJSON export file (or stdout with `--out -`)."""
    from prme.export_files import write_export

    owner = _owner(args, settings)
    backend = open_backend(settings, args.data_dir)
    try:

        def page(cursor: str | None) -> ExportPage:
            return backend.engine.export_owner(owner, cursor)

        stats = backend.engine.get_stats(owner)
        if stats.pending_materializations or stats.pending_extractions:
            # Pending work is not exported: what it would build never reaches the target.
            print(
                f"warning: {stats.pending_materializations} memories and "
                f"{stats.pending_extractions} extractions are still pending; run `prme worker` "
                "first to export them too",
                file=sys.stderr,
            )

        if args.out == "-":
            written = write_export(page, sys.stdout, _progress("exported"))
        else:
            target = Path(args.out)
            # Written beside the target and renamed at the end: a failed export never leaves
            # a file that looks complete.
            partial = target.with_name(target.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8") as out:
                    written = write_export(page, out, _progress("exported"))
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
    finally:
        backend.close()
    print(f"exported {written} records of user {visible(owner.owner_id)}", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace, settings: Settings) -> int:
    """Import an NDJSON export file (or stdin with `-`) into one owner's memory."""
    from prme.export_files import read_export
    from prme.model.portability import LineError

    owner = _owner(args, settings)
    backend = open_backend(settings, args.data_dir)
    try:
        with contextlib.ExitStack() as files:
            if args.file == "-":
                lines: Iterable[str] = sys.stdin
            else:
                lines = files.enter_context(Path(args.file).open(encoding="utf-8"))
            totals = read_export(
                lines,
                lambda batch: backend.engine.import_records(owner, batch),
                _progress("imported"),
            )
    except LineError as exc:
        if exc.line == 1:  # the header: nothing was imported
            raise InvalidRequestError(str(exc)) from None
        raise InvalidRequestError(
            f"{exc}; batches before that line are imported (importing again skips them)"
        ) from None
    except UnicodeDecodeError:
        raise InvalidRequestError("the file is not UTF-8 text; is it a PRME export?") from None
    finally:
        backend.close()
    print(
        f"imported events={totals.events} nodes={totals.nodes} edges={totals.edges} "
        f"skipped={totals.skipped} pending={totals.pending}"
    )
    return 0


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the MCP tools on stdin/stdout for one configured owner (nothing else on stdout)."""
    from prme.engine.identity import Principal, validate_user_id
    from prme.mcp.server import build_mcp_server

    user_id = validate_user_id(args.user_id or settings.mcp_user_id)
    backend = open_backend(settings, args.data_dir)
    principal = Principal.owner(settings.tenant_id, user_id)
    try:
        build_mcp_server(
            backend.engine,
            lambda: principal,
            max_response_bytes=settings.max_response_bytes,
            tools=settings.mcp_tools,
            transport="stdio",
        ).run("stdio")
        return 0
    finally:
        backend.close()


def package_version() -> str:
    try:
        return metadata.version("prme-cloud")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class _DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Appends an option's default to its help, unless the help already names one or there
    is nothing worth showing (an unset option or an off flag)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, "") or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _shared_options(*, top_level: bool) -> argparse.ArgumentParser:
    """Options every command takes, before or after its name. Only the top level holds their
    defaults: a subcommand's copy stays unset unless typed, so it never overwrites a value
    typed before the subcommand."""
    shared = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    shared.add_argument(
        "--data-dir",
        type=Path,
        help="data directory of the embedded backend (default: $PRME_DATA_DIR, else ./memory)",
    )
    shared.add_argument(
        "--debug",
        action="store_true",
        help="print the traceback of an internal error instead of one line",
    )
    if top_level:
        shared.set_defaults(data_dir=None, debug=False)
    return shared


# A string: argparse's subparsers action cannot be subscripted at run time.
CommandMaker = Callable[
    ["argparse._SubParsersAction[argparse.ArgumentParser]", str, str], argparse.ArgumentParser
]


def _add_manage_commands(
    command: CommandMaker, sub: argparse._SubParsersAction[argparse.ArgumentParser]
) -> None:
    """`list`, `delete`, `erase` and `stats`: managing one owner's stored memory."""
    listing = command(sub, "list", "list one owner's memory nodes or source events, by id")
    listing.add_argument("--user-id", default="default", help="the owner whose memories to list")
    listing.add_argument(
        "--events", action="store_true", help="list source events instead of memory nodes"
    )
    listing.add_argument(
        "--limit", type=int, default=None, help="most records per page (default: 100)"
    )
    listing.add_argument(
        "--after", default=None, metavar="ID", help="the next-page id a previous listing printed"
    )
    listing.add_argument(
        "--all", action="store_true", help="follow the pages to the end (progress on stderr)"
    )
    listing.add_argument(
        "--node-type", default=None, help="only nodes of this type (fact, preference, note, ...)"
    )
    listing.add_argument(
        "--state", default=None, help="only nodes in this lifecycle state (stable, archived, ...)"
    )
    listing.add_argument("--scope", default=None, help="only nodes of this scope")
    listing.add_argument(
        "--include-inactive",
        action="store_true",
        help="also superseded, deprecated and archived nodes",
    )
    listing.add_argument("--session-id", default=None, help="only records of this session")
    listing.add_argument("--role", default=None, help="with --events: only events of this role")
    listing.add_argument(
        "--since",
        default=None,
        help="only records at or after this ISO time (the event time, else when recorded)",
    )
    listing.add_argument(
        "--until", default=None, help="only records before this ISO time (as for --since)"
    )
    listing.add_argument(
        "--text", default=None, help="only records whose content contains this, ignoring case"
    )
    listing.add_argument(
        "--json", action="store_true", help="print the page (or, with --all, every record) as JSON"
    )

    delete = command(sub, "delete", "delete one source event and the memories derived from it")
    delete.add_argument("event_id", help="the source event's id (`prme list --events` shows them)")
    delete.add_argument("--user-id", default="default", help="the owner of the event")
    delete.add_argument("--yes", action="store_true", help="delete without asking")

    erase = command(sub, "erase", "erase everything stored for one owner, their API keys included")
    erase.add_argument("--user-id", required=True, help="the owner to erase (no default)")
    erase.add_argument(
        "--yes", action="store_true", help="erase without asking to type the user id again"
    )
    erase.add_argument("--json", action="store_true", help="print the erasure receipt as JSON")

    stats = command(sub, "stats", "count one owner's events, memory nodes and pending work")
    stats.add_argument("--user-id", default="default", help="the owner whose memory to count")
    stats.add_argument("--json", action="store_true", help="print the counts as JSON")

    export = command(
        sub, "export", "write one owner's memory to an NDJSON file (progress on stderr)"
    )
    export.add_argument("--user-id", default="default", help="the owner whose memory to export")
    export.add_argument(
        "--out", required=True, metavar="FILE", help="the file to write; - writes to stdout"
    )

    load = command(
        sub, "import", "import an NDJSON export file into one owner's memory (progress on stderr)"
    )
    load.add_argument("file", help="the export file; - reads stdin")
    load.add_argument("--user-id", default="default", help="the owner to import into")


def _add_usage_command(
    command: CommandMaker, sub: argparse._SubParsersAction[argparse.ArgumentParser]
) -> None:
    """`usage`: the tenant's metered usage, summed per period and kind."""
    usage = command(sub, "usage", "sum the tenant's metered usage per day or month and kind")
    usage.add_argument("--user-id", default=None, help="only this user's usage (default: all)")
    usage.add_argument(
        "--start", default=None, help="ISO time with a timezone (default: this UTC month's start)"
    )
    usage.add_argument(
        "--end", default=None, help="ISO time with a timezone (default: today's end)"
    )
    usage.add_argument("--period", choices=("day", "month"), default="day", help="sum per")
    usage.add_argument("--json", action="store_true", help="print the report as JSON")


def _usage_time(text: str | None, name: str) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--{name} is not an ISO time: use 2026-12-01T00:00:00+00:00") from None
    if moment.tzinfo is None:
        raise UsageError(f"--{name} needs a timezone, as in 2026-12-01T00:00:00+00:00")
    return moment


def _usage(args: argparse.Namespace, settings: Settings) -> int:
    """The tenant's (PRME_TENANT_ID) metered usage, as `GET /v1/usage` sums it."""
    start, end = _usage_time(args.start, "start"), _usage_time(args.end, "end")
    backend = open_backend(settings, args.data_dir)
    try:
        report = backend.engine.get_usage(
            settings.tenant_id, user_id=args.user_id, start=start, end=end, period=args.period
        )
    finally:
        backend.close()
    if args.json:
        print(report.model_dump_json(indent=2))
        return 0
    units = list(UsageUnits.model_fields)
    print("\t".join(["period", "kind", "operations", *units]))
    for total in report.totals:
        values = [str(getattr(total.units, unit)) for unit in units]
        print("\t".join([total.period, total.kind, str(total.operations), *values]))
    return 0


def build_parser() -> argparse.ArgumentParser:
    formatter = _DefaultsHelp
    shared = _shared_options(top_level=False)
    parser = argparse.ArgumentParser(
        prog="prme",
        description="PRME memory service",
        formatter_class=formatter,
        parents=[_shared_options(top_level=True)],
        epilog="Exit codes: 0 done, 1 failed, 2 bad command line or setting, 70 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"prme {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        parent: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
    ) -> argparse.ArgumentParser:
        return parent.add_parser(
            name, help=help, description=help, parents=[shared], formatter_class=formatter
        )

    serve = command(sub, "serve", "serve the HTTP API (and MCP at /mcp)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind")
    serve.add_argument("--port", type=int, default=8765, help="port to bind")
    serve.add_argument(
        "--backend",
        choices=["embedded", "aws"],
        default=None,
        help="backend (default: $PRME_BACKEND, else embedded)",
    )
    serve.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="lowest level logged to stderr as JSON lines (info logs one line per request)",
    )

    keys = command(sub, "keys", "manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = command(keys_sub, "create", "create a key (the secret is printed once)")
    create.add_argument("--user-id", default=None, help="bind the key to this owner")
    create.add_argument("--operator", action="store_true", help="a tenant-wide operator key")
    create.add_argument("--label", default="", help="a note shown by `keys list`")
    command(keys_sub, "list", "list keys (never their secrets)")
    revoke = command(keys_sub, "revoke", "revoke a key")
    revoke.add_argument("key_id", help="the key_id printed by `keys create` or `keys list`")

    cli_limits.add_parser(command, sub)

    command(sub, "bootstrap", "create the AWS table, queues and index (idempotent)")

    worker = command(sub, "worker", "run one pass over pending work")
    worker.add_argument(
        "--budget-ms", type=int, default=None, help="stop starting new work after this long"
    )

    reindex = command(
        sub,
        "reindex",
        "re-embed one owner's records (after changing the embedder or vector settings)",
    )
    whom = reindex.add_mutually_exclusive_group(required=True)
    whom.add_argument("--user-id", help="the owner whose records to reindex")
    whom.add_argument(
        "--all-users",
        action="store_true",
        help="every owner of the tenant (PRME_TENANT_ID), in id order, with progress",
    )
    reindex.add_argument(
        "--start-after",
        default=None,
        metavar="USER_ID",
        help="with --all-users: only owners whose id sorts after this one (to resume)",
    )

    search = command(sub, "search", "retrieve one owner's memories for a query")
    search.add_argument("query", help="what you need to know, in plain words")
    search.add_argument("--user-id", default="default", help="the owner whose memories to search")
    search.add_argument(
        "--token-budget",
        type=int,
        default=None,
        help="context size in tokens (default: the configured default_token_budget)",
    )
    search.add_argument("--limit", type=int, default=None, help="most results to return")
    search.add_argument(
        "--json", action="store_true", help="print the whole response (receipt included) as JSON"
    )

    _add_manage_commands(command, sub)
    cli_imports.add_commands(command, sub)
    _add_usage_command(command, sub)

    mcp = command(sub, "mcp", "serve the MCP tools over stdio for one owner")
    mcp.add_argument(
        "--user-id",
        default=None,
        help="the owner the tools act for (default: $PRME_MCP_USER_ID)",
    )
    return parser


def settings_error_line(error: ValidationError) -> str:
    """A settings validation failure as the environment variable to fix; never its value."""
    first = error.errors(include_input=False, include_url=False)[0]
    loc = [str(part) for part in first["loc"]]
    # The engine's settings are read without their group's name (see prme.settings).
    if loc[:1] == ["engine"] and len(loc) > 1:
        loc = loc[1:]
    name = ENV_PREFIX + "__".join(loc).upper()
    return f"invalid setting {name}: {safe_message(first['msg'])}; fix that environment variable"


def _unparsable_setting_line(exc: SettingsError) -> str:
    """Name the variable whose value is not the JSON its nested setting takes; pydantic's own
    message names the field and an internal source class instead."""
    # The message quotes only the field's name, never the value.
    found = re.search(r'field "([a-z_]+)"', str(exc))
    if found is None:
        return "a PRME_* variable holds a value that is not valid JSON; fix it"
    name = f"PRME_{found.group(1).upper()}"
    return (
        f"{name} is not valid JSON: set it to a JSON object, or set its parts one by one as "
        f"{name}__<PART> variables"
    )


def explain(exc: Exception) -> tuple[str, int]:
    """The one line and exit code of a failure. A PRME error's detail is safe to show by
    contract; of anything else only the type is named, since its message can quote provider
    text or memory content."""
    if isinstance(exc, UsageError):
        return str(exc), EXIT_USAGE
    if isinstance(exc, CommandFailedError):
        return str(exc), EXIT_FAILED
    if isinstance(exc, InvalidRequestError | BadRequestError):
        return exc.detail, EXIT_USAGE
    if isinstance(exc, EmbeddingUnavailableError):
        return f"{exc.detail}; check PRME_EMBEDDER and its model, then retry", EXIT_FAILED
    if isinstance(exc, StorageUnavailableError):
        return f"{exc.detail}; check the storage is reachable, then retry", EXIT_FAILED
    if isinstance(exc, PrmeError):
        return exc.detail, EXIT_FAILED
    aws = _aws_environment_problem(exc)
    if aws is not None:
        return aws, EXIT_USAGE
    if isinstance(exc, OSError):  # the data directory, mostly: not a directory, no permission
        problem = exc.strerror or type(exc).__qualname__
        if exc.filename:
            return f"{problem}: {exc.filename}; check that path and its permissions", EXIT_FAILED
        return f"{problem}; check the data directory and the network, then retry", EXIT_FAILED
    return (
        f"internal error ({type(exc).__qualname__}); run again with --debug for details",
        EXIT_INTERNAL,
    )


def _aws_environment_problem(exc: Exception) -> str | None:
    """What to set when boto3 found no AWS region or credentials (it is imported only by the
    aws backend and bootstrap, so another command never pays for importing it here)."""
    if "botocore.exceptions" not in sys.modules:
        return None
    from botocore.exceptions import NoCredentialsError, NoRegionError

    if isinstance(exc, NoRegionError | NoCredentialsError):
        return (
            "this command reaches AWS (PRME_BACKEND=aws, or a bedrock PRME_EMBEDDER or "
            "PRME_EXTRACTOR) and found no region or credentials: set AWS_REGION and "
            "AWS_ACCESS_KEY_ID (or a profile); see docs/aws-backend.md"
        )
    return None


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush finds no closed pipe."""
    # Nothing to do when stdout is not a file (captured or replaced).
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


Handler = Callable[[argparse.Namespace, Settings], int]

HANDLERS: dict[str, Handler] = {
    "serve": _serve,
    "keys": _keys,
    "worker": _worker,
    "bootstrap": _bootstrap,
    "mcp": _mcp,
    "reindex": _reindex,
    "search": _search,
    "list": _list,
    "delete": _delete,
    "erase": _erase,
    "stats": _stats,
    "export": _export,
    "import": _import,
    "limits": _limits,
    "imports": cli_imports.run,
    "usage": _usage,
}


def _settings(args: argparse.Namespace) -> Settings:
    try:
        settings = Settings()
    except ValidationError as exc:
        raise UsageError(settings_error_line(exc)) from None
    except SettingsError as exc:  # a value that is not even JSON where JSON is expected
        raise UsageError(_unparsable_setting_line(exc)) from None
    if settings.extractor == "openai" and not (settings.openai_base_url and settings.openai_model):
        # Otherwise the extractor's construction fails as an internal error (exit 70).
        raise UsageError(
            "PRME_EXTRACTOR=openai needs PRME_OPENAI_BASE_URL and PRME_OPENAI_MODEL;"
            " set both, or PRME_EXTRACTOR=rules"
        )
    backend = getattr(args, "backend", None) or settings.backend
    if backend == "aws" and args.command in _OPENS_SEARCH_INDEX and not settings.opensearch_url:
        raise UsageError(
            "the aws backend needs PRME_OPENSEARCH_URL (the search endpoint); "
            "see docs/aws-backend.md"
        )
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return HANDLERS[args.command](args, _settings(args))
    except BrokenPipeError:
        # Whoever read the output (`| head`) stopped reading: nothing is wrong, nothing to say.
        _discard_stdout()
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        line, code = "interrupted", EXIT_INTERRUPTED
    except Exception as exc:
        expected = isinstance(exc, UsageError | CommandFailedError | PrmeError)
        if args.debug and not expected:
            raise
        line, code = explain(exc)
    print(f"prme: error: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
