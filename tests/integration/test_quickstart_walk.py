"""docs/quickstart.md walked as a reader types it, from step 2 on: its Python example saved as
`quickstart.py`, then every command of its shell blocks and step 4's Python block (the
remote client), in page order, in one working
directory where `venv/` is this test's environment. Only three things are filled in, as the
reader would: the port (a free one instead of 8765, which may be taken), the key `prme keys
create` printed, and an event id the server returned. Step 1 (the install) is the README's,
which tests/integration/test_wheel_install.py follows with the built wheel."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.cli import free_port
from tests.harness.doc_blocks import WITH_SERVER, python_blocks

pytestmark = pytest.mark.slow  # the real embedder, a server and a dozen subprocesses

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "quickstart.md").read_text()
_SHELL_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
DOC_PORT = "8765"
BASH = shutil.which("bash") or "/bin/bash"


def shell_commands() -> list[str]:
    """Each command of the page's shell blocks, continuation lines joined, comments dropped."""
    blocks = _SHELL_BLOCK.findall(PAGE)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#\s.*$", "", line).strip()
            if command:
                commands.append(command)
    return commands


def test_the_install_commands_are_the_readmes() -> None:
    # So the wheel test, which follows the README, covers the quickstart's step 1 too.
    readme = (ROOT / "README.md").read_text()
    install = [c for c in shell_commands() if "pip install" in c or "-m venv" in c]
    assert install and all(command in readme for command in install)


@pytest.fixture
def reader(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working directory with `venv/` and a shell environment without PRME settings."""
    (tmp_path / "venv").symlink_to(Path(sys.executable).parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRME_")}
    env["PYTHONPATH"] = str(ROOT / "core")
    return tmp_path, env


def api_key_of(printed: str) -> str:
    keys: list[str] = re.findall(r"^api_key: (\S+)$", printed, re.MULTILINE)
    assert len(keys) == 1, "prme keys create prints one api_key line"
    return keys[0]


def wait_until_serving(port: str, server: subprocess.Popen[str]) -> None:
    # uvicorn listens once the app has started, so a connection means it answers.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()[1][-2000:]
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
        except OSError:
            time.sleep(0.2)
        else:
            return
    pytest.fail("prme serve did not answer within 60 s")


def test_the_quickstart_as_typed(reader: tuple[Path, dict[str, str]]) -> None:
    work, env = reader
    (example,) = [block.code for block in python_blocks(PAGE) if block.runs]
    (remote_example,) = [b.code for b in python_blocks(PAGE) if b.marker == WITH_SERVER]
    (work / "quickstart.py").write_text(example)
    port = str(free_port())
    (work / "remote.py").write_text(remote_example.replace(DOC_PORT, port))
    ran: list[tuple[str, str]] = []  # (the command as the page has it, what it printed)

    def output_of(fragment: str) -> str:
        printed = [out for typed, out in ran if fragment in typed]
        assert len(printed) == 1, f"the page has {len(printed)} commands with {fragment!r}"
        return printed[0]

    def shell(command: str) -> str:
        done = subprocess.run(
            [BASH, "-c", command],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
        return done.stdout

    server: subprocess.Popen[str] | None = None
    try:
        ran.append(("venv/bin/python quickstart.py", shell("venv/bin/python quickstart.py")))
        for typed in shell_commands():
            command = typed.replace(DOC_PORT, port)
            if "pip install" in command or "-m venv" in command:
                continue
            if command == "venv/bin/prme serve":
                server = subprocess.Popen(
                    [*command.split(), "--port", port],
                    cwd=work,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                wait_until_serving(port, server)
                continue
            if command.startswith("export PRME_KEY="):
                env["PRME_KEY"] = api_key_of(output_of("keys create --user-id"))
                continue
            if command.startswith("export PRME_OPERATOR_KEY="):
                env["PRME_OPERATOR_KEY"] = api_key_of(output_of("keys create --operator"))
                continue
            if "EVENT_ID" in command:
                stored = json.loads(output_of("/v1/store"))
                command = command.replace("EVENT_ID", stored["event_id"])
            ran.append((typed, shell(command)))
            if "/v1/retrieve" in command:
                # Step 4's Python block follows its curl calls on the page.
                ran.append(("venv/bin/python remote.py", shell("venv/bin/python remote.py")))
    finally:
        if server is not None:
            server.terminate()
            server.communicate(timeout=30)

    # Step 2: stored, searchable before store returned, and in the packed context.
    assert " completed\n" in output_of("quickstart.py")
    assert "8 September" in output_of("quickstart.py")
    # Step 3: the command line reads the same directory.
    assert "Ines starts school on 8 September." in output_of(
        'prme search "When does Ines start school?" --user-id alice'
    )
    assert "fact" in output_of("list --user-id") and "user" in output_of("list --events")
    assert "events: 1" in output_of("prme stats")
    # Step 4: the owner key needs no user_id; the server answers from the same directory.
    stored = json.loads(output_of("/v1/store"))
    assert stored["processing_status"] == "completed"
    context = json.loads(output_of("/v1/retrieve"))["bundle"]["context"]
    assert "allergic to kiwi" in context and "starts school on 8 September" in context
    # The remote client reads the same memory as curl did.
    assert "allergic to kiwi" in output_of("remote.py")
    assert "events: 2" in output_of("remote.py")
    # Step 5: two memories listed, one deleted with its node, one left.
    assert len(json.loads(output_of("/v1/nodes?"))["items"]) == 2
    assert len(json.loads(output_of("/v1/events?"))["items"]) == 2
    deleted = json.loads(output_of("/v1/events/EVENT_ID"))
    assert deleted["deleted_node_ids"] == [stored["node_id"]]
    assert json.loads(output_of("curl -s http://127.0.0.1:8765/v1/stats"))["events"] == 1
    # Step 6: the export moves alice's one memory to bob, who retrieves it.
    header, *records = (work / "alice.ndjson").read_text().splitlines()
    assert json.loads(header)["counts"] == {"events": 1, "nodes": 1, "edges": 0}
    assert [json.loads(line)["kind"] for line in records] == ["event", "node"]
    assert "imported events=1 nodes=1" in output_of("prme import")
    bob_search = output_of('prme search "When does Ines start school?" --user-id bob')
    assert "Ines starts school on 8 September." in bob_search
    # Erased: the receipt counts alice's records, and her key no longer opens anything.
    receipt = json.loads(output_of("/v1/owner?"))
    assert receipt["complete"] is True
    assert receipt["removed"]["events"] == 1 and receipt["removed"]["api_keys"] == 1
    assert output_of("http_code").strip() == "401"
