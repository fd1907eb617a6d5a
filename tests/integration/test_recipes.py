"""The recipes in docs/recipes run as written against the frameworks' real packages, offline:
each page's Python blocks run as one program in which every connection or name lookup
outside loopback is refused and reported, followed by checks of what PRME stored, what came
back and what the model was given."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.harness.doc_blocks import runnable_code

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "docs" / "recipes"

# Runs after the LangGraph page: a second conversation, with the model's input recorded
# through LangChain's callbacks (LangGraph passes them to every model call in a node).
LANGGRAPH_CHECKS = """
from langchain_core.callbacks import BaseCallbackHandler


class ModelInputs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.calls = []

    def on_chat_model_start(self, serialized, messages, **kwargs):
        self.calls.extend(messages)


seen = ModelInputs()
with MemoryClient("./langgraph-demo") as memory:
    chat = build_chat(memory, FakeListChatModel(responses=["Noted.", "Noted."]))
    chat.invoke(
        {
            "messages": [HumanMessage("Is there anything I cannot eat?")],
            "user_id": "priya",
            "session_id": "lunch",
        },
        config={"callbacks": [seen]},
    )
    (prompt,) = seen.calls
    system, question = prompt
    assert system.type == "system" and question.text == "Is there anything I cannot eat?"
    # The fact stored before the first conversation and that conversation's own turns.
    assert "Priya is allergic to peanuts." in system.text, system.text
    assert "the lemon tart has no peanuts" in system.text, system.text

    # Another user's conversation is given none of Priya's memories.
    other = chat.invoke(
        {"messages": [HumanMessage("Any allergies?")], "user_id": "omar", "session_id": "s"}
    )
    assert other["context"] == "", other["context"]
    assert len(memory.list_nodes(user_id="priya").items) == 5
print("checked")
"""

# Runs after the Agents SDK page: the page's own agent, on a scripted model.
OPENAI_AGENTS_CHECKS = """
from tests.harness.scripted_agent_model import ScriptedModel, ToolCall

with MemoryClient("./agents-demo") as client:
    me = UserMemory(client, user_id="sam")
    told = ScriptedModel([ToolCall("remember", {"fact": "I'm vegetarian."}), "Noted."])
    Runner.run_sync(assistant.clone(model=told), "Remember that I'm vegetarian.", context=me)
    (stored,) = client.list_nodes(user_id="sam").items
    assert (stored.content, stored.node_type, stored.ttl_days) == ("I'm vegetarian.", "fact", None)
    assert told.turns[1].tool_outputs() == [f"Remembered (memory {stored.id})."]

    asked = ScriptedModel([ToolCall("recall", {"query": "diet"}), "A mushroom risotto."])
    answer = Runner.run_sync(assistant.clone(model=asked), "What should I cook?", context=me)
    assert answer.final_output == "A mushroom risotto."
    assert sorted(asked.turns[0].tool_names) == ["recall", "remember"]
    assert "recall" in asked.turns[0].instructions
    (context,) = asked.turns[1].tool_outputs()
    assert "[m1] I'm vegetarian." in context, context

    # The user comes from the run's context, not from the model: another user recalls nothing.
    stranger = ScriptedModel([ToolCall("recall", {"query": "diet"}), "No idea."])
    Runner.run_sync(
        assistant.clone(model=stranger), "What do I eat?", context=UserMemory(client, "kim")
    )
    assert stranger.turns[1].tool_outputs() == ["Nothing remembered about that."]
print("checked")
"""

# Runs after the LlamaIndex page: the retriever on its own.
LLAMAINDEX_CHECKS = """
with MemoryClient("./llamaindex-demo") as memory:
    found = PrmeRetriever(memory, user_id="ops").retrieve("When do production deploys happen?")
    assert found[0].node.get_content() == "Production deploys happen on Tuesdays."
    top = memory.get_node(found[0].node.node_id, user_id="ops")
    assert top.content == found[0].node.get_content()
    scores = [node.score for node in found]
    assert scores == sorted(scores, reverse=True) and len(found) == 3
    assert PrmeRetriever(memory, user_id="dev").retrieve("staging database port") == []
    (turn,) = memory.list_nodes(user_id="ops", session_id="chat-1").items
    assert turn.content == "Which port does the staging database use?"
print("checked")
"""

CHECKS = {
    "langgraph.md": LANGGRAPH_CHECKS,
    "openai-agents.md": OPENAI_AGENTS_CHECKS,
    "llamaindex.md": LLAMAINDEX_CHECKS,
}


def run_offline(program: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `program` with remote connections refused; also return what it tried to reach."""
    refused = cwd / "refused-connections.txt"
    guard = textwrap.dedent(
        f"""
        from pathlib import Path
        from tests.harness.no_network import refuse_remote_connections
        refuse_remote_connections(Path({str(refused)!r}))
        """
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PRME_") and k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    # With a key set, the Agents SDK exports traces to OpenAI from a background thread (the
    # guard reports it: api.openai.com); the page says how to turn tracing off, as done here.
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", guard + program],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    attempts = refused.read_text().splitlines() if refused.exists() else []
    return result, attempts


def test_every_recipe_page_is_checked() -> None:
    assert {page.name for page in RECIPES.glob("*.md")} == {"README.md", *CHECKS}


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(CHECKS), ids=lambda name: name.removesuffix(".md"))
def test_recipe_runs_offline(page: str, tmp_path: Path) -> None:
    program = runnable_code((RECIPES / page).read_text()) + CHECKS[page]
    result, attempts = run_offline(program, tmp_path)
    assert result.returncode == 0, f"{page} failed:\n{result.stderr[-3000:]}"
    assert result.stdout.rstrip().endswith("checked")
    assert attempts == [], f"{page} tried to reach the network: {attempts}"


@pytest.mark.slow
def test_the_guard_reports_a_connection_made_on_a_background_thread(tmp_path: Path) -> None:
    # A thread that swallows its error, as a telemetry exporter would; the TEST-NET address
    # is never routed, and the guard refuses before any packet leaves.
    program = textwrap.dedent(
        """
        import socket
        import threading

        def export() -> None:
            try:
                socket.create_connection(("192.0.2.1", 443), timeout=1)
            except OSError:
                pass

        worker = threading.Thread(target=export)
        worker.start()
        worker.join()
        with socket.create_server(("127.0.0.1", 0)) as server:
            socket.create_connection(server.getsockname(), timeout=1).close()
        print("checked")
        """
    )
    result, attempts = run_offline(program, tmp_path)
    assert result.returncode == 0, result.stderr
    assert attempts == ["lookup 192.0.2.1"]
