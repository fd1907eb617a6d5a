"""The `prme` command in-process: where options may be typed, help with defaults, and each
expected failure as one line on stderr with its documented exit code."""

from __future__ import annotations

import argparse
import json
from importlib.metadata import version
from pathlib import Path

import pytest

from prme import cli
from prme.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, build_parser, main
from prme.client import MemoryClient
from prme.settings import Settings


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
        'prme: error: error parsing value for field "scoring" from source'
        ' "EnvSettingsSource"; fix that PRME_* variable',
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
            "prme: error: the aws backend needs an AWS region and credentials (AWS_REGION,"
            " AWS_ACCESS_KEY_ID or a profile); see docs/aws-backend.md\n",
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
