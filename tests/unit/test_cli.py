"""The `prme` command in-process: where options may be typed, help with defaults, and each
expected failure as one line on stderr with its documented exit code."""

from __future__ import annotations

import argparse
import io
import json
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pytest

from prme import cli
from prme.backends.embedded.service import open_embedded
from prme.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, build_parser, main
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.model.enums import CredentialRole
from prme.model.records import Credential
from prme.settings import Settings
from tests.harness.engines import TOKEN_COUNTER


@pytest.fixture(autouse=True)
def _hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_EMBEDDER", "hashing")


@pytest.mark.parametrize(
    "argv",
    [
        ["--data-dir", "/d", "serve"],
        ["serve", "--data-dir", "/d"],
        ["keys", "--data-dir", "/d", "list"],
        ["keys", "create", "--operator", "--data-dir", "/d"],
        ["--debug", "reindex", "--user-id", "a", "--data-dir", "/d"],
    ],
)
def test_shared_options_work_before_and_after_the_subcommand(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).data_dir == Path("/d")


def test_shared_options_keep_their_defaults_when_not_typed() -> None:
    args = build_parser().parse_args(["keys", "list"])
    assert (args.data_dir, args.debug) == (None, False)


def test_help_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default: 8765)" in help_text
    assert "(default: 127.0.0.1)" in help_text
    assert "--log-level {debug,info,warning,error}" in help_text
    assert "(default: info)" in help_text
    assert "(default: None)" not in help_text  # unset options name where their default comes from


def test_help_shows_no_empty_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["keys", "create", "--help"])
    help_text = capsys.readouterr().out
    assert "--label LABEL" in help_text
    assert "(default: )" not in help_text
    assert "(default: False)" not in help_text


def test_serve_log_level_is_checked() -> None:
    assert build_parser().parse_args(["serve", "--log-level", "debug"]).log_level == "debug"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--log-level", "loud"])


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"prme {version('prme-cloud')}\n"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


# argv, environment, exit code, the one line on stderr (never a setting's value)
FAILURES: list[tuple[list[str], dict[str, str], int, str]] = [
    (
        ["keys", "revoke", "nope"],
        {},
        EXIT_FAILED,
        "prme: error: no API key has that key_id; `prme keys list` shows them",
    ),
    (
        ["reindex", "--user-id", ""],
        {},
        EXIT_USAGE,
        "prme: error: user_id must be 1 to 256 characters",
    ),
    (
        ["reindex", "--user-id", "alice", "--start-after", "bob"],
        {},
        EXIT_USAGE,
        "prme: error: --start-after goes with --all-users",
    ),
    (
        ["keys", "create"],
        {},
        EXIT_USAGE,
        "prme: error: give exactly one of --user-id NAME or --operator",
    ),
    (
        ["bootstrap"],
        {"PRME_OPENSEARCH_URL": ""},
        EXIT_USAGE,
        "prme: error: bootstrap needs the AWS settings: set PRME_OPENSEARCH_URL and an AWS"
        " region and credentials (or AWS_ENDPOINT_URL for the local AWS); see"
        " docs/aws-backend.md",
    ),
    (
        ["keys", "list"],
        {"PRME_EMBEDDER": "secret-value"},
        EXIT_USAGE,
        "prme: error: invalid setting PRME_EMBEDDER: Input should be 'minilm', 'hashing' or"
        " 'bedrock'; fix that environment variable",
    ),
    (
        ["keys", "list"],
        {"PRME_SCORING__RRF_K": "secret-value"},
        EXIT_USAGE,
        "prme: error: invalid setting PRME_SCORING__RRF_K: Input should be a valid integer,"
        " unable to parse string as an integer; fix that environment variable",
    ),
    (
        ["worker"],
        {"PRME_BACKEND": "aws", "PRME_OPENSEARCH_URL": ""},
        EXIT_USAGE,
        "prme: error: the aws backend needs PRME_OPENSEARCH_URL (the search endpoint); see"
        " docs/aws-backend.md",
    ),
    (
        ["keys", "list"],
        {"PRME_SCORING": "{secret-value"},
        EXIT_USAGE,
        "prme: error: PRME_SCORING is not valid JSON: set it to a JSON object, or set its"
        " parts one by one as PRME_SCORING__<PART> variables",
    ),
    (
        ["keys", "list"],
        {"PRME_EXTRACTOR": "openai", "PRME_OPENAI_MODEL": "", "PRME_OPENAI_BASE_URL": ""},
        EXIT_USAGE,
        "prme: error: PRME_EXTRACTOR=openai needs PRME_OPENAI_BASE_URL and PRME_OPENAI_MODEL;"
        " set both, or PRME_EXTRACTOR=rules",
    ),
]


@pytest.mark.parametrize("failure", FAILURES)
def test_an_expected_failure_is_one_line_with_its_exit_code(
    failure: tuple[list[str], dict[str, str], int, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv, env, code, line = failure
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _run([*argv, "--data-dir", str(tmp_path)], capsys) == (code, line + "\n")


def test_an_internal_error_is_one_line_without_its_message_unless_debugging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_args: argparse.Namespace, _settings: object) -> int:
        raise KeyError("memory content the bug quoted")

    monkeypatch.setitem(cli.HANDLERS, "worker", broken)
    argv = ["worker", "--data-dir", str(tmp_path)]
    assert _run(argv, capsys) == (
        EXIT_INTERNAL,
        "prme: error: internal error (KeyError); run again with --debug for details\n",
    )
    with pytest.raises(KeyError, match="memory content"):
        main([*argv, "--debug"])


def test_only_the_first_active_key_warns_that_keyless_mode_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path)]
    assert main(["keys", "create", "--operator", *data]) == 0
    assert "a keyless `prme serve` running on this data directory now requires a key" in (
        capsys.readouterr().err
    )
    assert main(["keys", "create", "--user-id", "bob", *data]) == 0
    assert "keyless" not in capsys.readouterr().err


def test_search_prints_the_context_then_each_result_with_its_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two memories of alice and one of bob
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        lisbon = memory.store("I moved to Lisbon in May.", user_id="alice").event_id
        memory.store("My dog is called Rex.", user_id="alice")
        memory.store("Bob lives in Oslo.", user_id="bob")
        lisbon_node = memory.get_event_nodes(lisbon, user_id="alice")[0].id
    data = ["--data-dir", str(tmp_path)]

    # When alice's memories are searched, at most one result
    assert main(["search", "Where do I live?", "--user-id", "alice", "--limit", "1", *data]) == 0

    # Then the packed context comes first, then the result with its context ref
    out = capsys.readouterr().out
    context, listing = out.split("\n\n1 results (context ref, node id, score, type):\n")
    assert "[m1] I moved to Lisbon in May." in context
    assert "Oslo" not in out
    ref, node_id, _score, node_type = listing.split()
    assert (ref, node_id, node_type) == ("m1", lisbon_node, "note")


def test_search_as_json_is_the_whole_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        memory.store("I moved to Lisbon in May.", user_id="alice")
    argv = ["search", "Lisbon", "--user-id", "alice", "--json", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    response = json.loads(capsys.readouterr().out)
    assert [r["content"] for r in response["results"]] == ["I moved to Lisbon in May."]
    assert "Lisbon" in response["bundle"]["context"]
    assert set(response) >= {"results", "bundle", "metrics"}


def test_search_refuses_a_query_the_contract_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "x", "--limit", "999", "--data-dir", str(tmp_path)]
    assert _run(argv, capsys) == (
        EXIT_USAGE,
        "prme: error: limit: Input should be less than or equal to 200\n",
    )


def test_a_closed_output_pipe_ends_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def reader_gone(_args: argparse.Namespace, _settings: object) -> int:
        raise BrokenPipeError

    monkeypatch.setitem(cli.HANDLERS, "worker", reader_gone)
    assert _run(["worker", "--data-dir", str(tmp_path)], capsys) == (cli.EXIT_PIPE_CLOSED, "")


def test_missing_aws_region_or_credentials_say_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from botocore.exceptions import NoCredentialsError, NoRegionError

    for missing in (NoRegionError(), NoCredentialsError()):

        def unconfigured(
            _args: argparse.Namespace, _settings: object, error: Exception = missing
        ) -> int:
            raise error

        monkeypatch.setitem(cli.HANDLERS, "keys", unconfigured)
        assert _run(["keys", "list", "--data-dir", str(tmp_path)], capsys) == (
            EXIT_USAGE,
            "prme: error: this command reaches AWS (PRME_BACKEND=aws, or a bedrock"
            " PRME_EMBEDDER or PRME_EXTRACTOR) and found no region or credentials: set"
            " AWS_REGION and AWS_ACCESS_KEY_ID (or a profile); see docs/aws-backend.md\n",
        )


def test_an_unusable_data_directory_is_named_with_what_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    argv = ["keys", "list", "--data-dir", str(not_a_directory)]
    assert _run(argv, capsys) == (
        EXIT_FAILED,
        f"prme: error: File exists: {not_a_directory}; check that path and its permissions\n",
    )
    with pytest.raises(FileExistsError):
        main([*argv, "--debug"])


def _alice_with_two_memories(data: Path) -> tuple[str, str]:
    """Alice's two stored memories (the first with a terminal escape in it) and one of bob;
    the event ids of alice's."""
    with MemoryClient(data, settings=Settings(embedder="hashing")) as memory:
        hostile = memory.store("Red \x1b[31malert\x1b[0m\nnext line", user_id="alice").event_id
        lisbon = memory.store("I moved to Lisbon in May.", user_id="alice").event_id
        memory.store("Bob lives in Oslo.", user_id="bob")
    return hostile, lisbon


def test_list_prints_one_line_per_node_with_its_type_state_and_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _alice_with_two_memories(tmp_path)
    assert main(["list", "--user-id", "alice", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2  # bob's memory is not listed, and there is no next page
    contents = sorted(line.split(maxsplit=4)[4] for line in lines)
    assert contents == ["I moved to Lisbon in May.", "Red \\x1b[31malert\\x1b[0m\\nnext line"]
    assert {tuple(line.split()[1:3]) for line in lines} == {("note", "tentative")}


def test_list_searches_text_and_time_on_nodes_and_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _alice_with_two_memories(tmp_path)
    where = ["--user-id", "alice", "--data-dir", str(tmp_path)]
    for kind in ([], ["--events"]):
        assert main(["list", *kind, "--text", "LISBON", *where]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1
        assert lines[0].endswith(" I moved to Lisbon in May.")
        assert main(["list", *kind, "--until", "2000-01-01T00:00:00Z", *where]) == 0
        assert capsys.readouterr().out == ""


def test_list_never_prints_a_terminal_escape_or_a_line_break_of_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        memory.store("a\x1b[2J\x1b]0;title\x07b\u202ec\rd\u2028e\x9bf", user_id="alice")
    for kind in ([], ["--events"]):
        assert main(["list", *kind, "--user-id", "alice", "--data-dir", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert out.count("\n") == 1
        assert all(ch == "\n" or ch.isprintable() for ch in out)
        assert "a\\x1b[2J\\x1b]0;title\\x07b\\u202ec\\rd\\u2028e\\x9bf" in out


def test_list_shows_only_the_first_80_characters_of_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        memory.store("y" * 80 + "z" * 100, user_id="alice")
    assert main(["list", "--user-id", "alice", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(" " + "y" * 80 + "...")


def test_list_events_pages_with_a_cursor_and_all_follows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given alice's two events, listed one per page
    hostile, lisbon = _alice_with_two_memories(tmp_path)
    first_id, second_id = sorted([hostile, lisbon])
    argv = ["list", "--events", "--user-id", "alice", "--limit", "1", "--data-dir", str(tmp_path)]

    # The first page ends with the cursor of the next, which gives the second page
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()
    assert first[0].split()[:2] == [first_id, "user"]
    assert first[1] == f"next page: --after {first_id}"
    assert main([*argv, "--after", first_id]) == 0
    assert capsys.readouterr().out.split()[0] == second_id

    # --all lists both, with progress on stderr only
    assert main([*argv, "--all"]) == 0
    listed = capsys.readouterr()
    assert [line.split()[0] for line in listed.out.splitlines()] == [first_id, second_id]
    assert "listed 1 records in 1 pages" in listed.err

    # and as JSON, one page of both with no cursor left
    assert main([*argv, "--all", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert ([e["id"] for e in page["items"]], page["next_after_id"]) == (
        [first_id, second_id],
        None,
    )


def test_an_empty_listing_says_so_on_stderr_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--user-id", "nobody", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr() == ("", "no records on this page\n")


def test_list_as_json_is_the_http_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile, lisbon = _alice_with_two_memories(tmp_path)
    argv = ["list", "--events", "--user-id", "alice", "--json", "--data-dir", str(tmp_path)]
    assert main([*argv, "--role", "user"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert page["next_after_id"] is None
    assert {e["id"] for e in page["items"]} == {hostile, lisbon}
    assert "I moved to Lisbon in May." in {e["content"] for e in page["items"]}
    assert main([*argv, "--role", "assistant"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == []


LIST_FAILURES = [
    (
        ["list", "--state", "gone"],
        "prme: error: --state: Input should be 'tentative', 'stable', 'contested',"
        " 'superseded', 'deprecated' or 'archived'",
    ),
    (
        ["list", "--after", "not-an-id"],
        "prme: error: --after: Input should be a valid UUID, invalid character: found `n` at 0",
    ),
    (["list", "--limit", "0"], "prme: error: --limit: Input should be greater than or equal to 1"),
    (
        ["list", "--role", "user"],
        "prme: error: --role filters events: add --events",
    ),
    (
        ["list", "--events", "--node-type", "fact"],
        "prme: error: --node-type lists nodes: drop it or drop --events",
    ),
    (
        ["list", "--events", "--since", "yesterday"],
        "prme: error: --since: Input should be a valid datetime or date, input is too short",
    ),
    (
        ["list", "--until", "2026-01-01T00:00:00"],
        "prme: error: --until: Input should have timezone info",
    ),
    (
        ["list", "--events", "--text", "a\x1bb"],
        "prme: error: --text: Value error, must not contain control characters",
    ),
    (
        ["delete", "not-an-id", "--yes"],
        "prme: error: event_id: Input should be a valid UUID, invalid character: found `n` at 0",
    ),
]


@pytest.mark.parametrize(("argv", "line"), LIST_FAILURES)
def test_managing_commands_refuse_what_the_contract_refuses(
    argv: list[str], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run([*argv, "--data-dir", str(tmp_path)], capsys) == (EXIT_USAGE, line + "\n")


def test_delete_removes_the_memory_and_prints_the_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile, lisbon = _alice_with_two_memories(tmp_path)
    data = ["--data-dir", str(tmp_path)]
    assert main(["delete", lisbon, "--user-id", "alice", "--yes", *data]) == 0
    out = capsys.readouterr().out
    # Its one work item (its memory's indexing) goes with it
    assert out.startswith(f"deleted event {lisbon}: 1 memory nodes, 0 edges, 1 work items")
    assert main(["list", "--events", "--user-id", "alice", *data]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [hostile]


def test_delete_of_an_unknown_or_foreign_event_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile, _ = _alice_with_two_memories(tmp_path)
    for event_id, user_id in ((hostile, "bob"), ("0193d5a8-0000-7000-8000-000000000000", "alice")):
        argv = ["delete", event_id, "--user-id", user_id, "--yes", "--data-dir", str(tmp_path)]
        assert _run(argv, capsys) == (
            EXIT_FAILED,
            "prme: error: no event of that user has this id; `prme list --events` shows them\n",
        )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_delete_asks_on_a_terminal_and_refuses_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, lisbon = _alice_with_two_memories(tmp_path)
    argv = ["delete", lisbon, "--user-id", "alice", "--data-dir", str(tmp_path)]

    # No terminal to ask on and no --yes: nothing is deleted
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert _run(argv, capsys) == (
        EXIT_USAGE,
        "prme: error: nothing deleted: add --yes to delete without a terminal to confirm\n",
    )
    # On a terminal, anything but yes keeps it
    question = f"Delete event {lisbon} of user alice and the memories derived from it? [y/N] "
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    assert _run(argv, capsys) == (
        EXIT_FAILED,
        question + "prme: error: nothing deleted: not confirmed\n",
    )
    # and yes deletes it
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert main(argv) == 0
    done = capsys.readouterr()
    assert done.out.startswith(f"deleted event {lisbon}: 1 memory nodes")
    assert done.err == question


def test_erase_asks_for_the_user_id_and_erases_only_that_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _alice_with_two_memories(tmp_path)
    data = ["--data-dir", str(tmp_path)]
    argv = ["erase", "--user-id", "alice", *data]

    # No terminal to ask on and no --yes: nothing is erased
    monkeypatch.setattr("sys.stdin", io.StringIO("alice\n"))
    assert _run(argv, capsys) == (
        EXIT_USAGE,
        "prme: error: nothing erased: add --yes to erase without a terminal to confirm\n",
    )
    # On a terminal, a "y" out of habit is not the user id
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    question = (
        "Erase everything stored for user alice (memories, journal, receipts, feedback, keys)? "
        "This cannot be undone. Type the user id to confirm: "
    )
    assert _run(argv, capsys) == (
        EXIT_FAILED,
        question + "prme: error: nothing erased: the user id was not typed\n",
    )
    # The id typed again erases her, and only her
    monkeypatch.setattr("sys.stdin", _Terminal("alice\n"))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("erased user alice: events 2, nodes 2,")
    assert main(["stats", "--user-id", "alice", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out)["events"] == 0
    assert main(["stats", "--user-id", "bob", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out)["events"] == 1
    # Erasing again finds nothing and answers with the same receipt
    assert main(["erase", "--user-id", "alice", "--yes", "--json", *data]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["complete"] is True and receipt["removed"]["events"] == 2
    assert "alice" not in json.dumps(receipt)


def test_erase_names_its_user_explicitly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["erase", "--yes", "--data-dir", str(tmp_path)])
    assert refused.value.code == EXIT_USAGE
    assert "required: --user-id" in capsys.readouterr().err


def test_stats_prints_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _alice_with_two_memories(tmp_path)
    argv = ["stats", "--user-id", "alice", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    assert capsys.readouterr().out == (
        "events: 2\nnodes: 2\n  state tentative: 2\n  type note: 2\n"
        "pending_materializations: 0\npending_extractions: 0\n"
    )
    assert main([*argv, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["events"] == 2
    assert stats["nodes_by_type"] == {"note": 2}


def test_keys_list_prints_stored_labels_and_user_ids_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key stored before labels and user ids had their character checks may hold terminal
    escapes or bidi overrides: the listing shows them as escapes, never raw."""
    backend = open_embedded(tmp_path, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    backend.ledger.put_credential(
        Credential(
            key_id="0123456789abcdef",
            key_hash="0" * 64,
            tenant_id="local",
            owner_id="eve\u202eevil",
            role=CredentialRole.OWNER,
            label="\x1b[2Japi_key: prme_fake",
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
    )
    backend.close()

    assert main(["keys", "list", "--data-dir", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "eve\\u202eevil" in out and "\\x1b[2Japi_key: prme_fake" in out
