"""A throwaway local PostgreSQL server (the machine's ``initdb``/``pg_ctl``), for tests,
benchmarks and trying replicas on one machine: a temporary data directory, a free loopback
port, trust authentication for the ``toolroute`` role, stopped and deleted on exit.

    with LocalPostgres() as pg:
        url = pg.create_database("replicas")      # postgresql://toolroute@127.0.0.1:PORT/replicas

PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` system user
(Debian's package creates it) through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from toolroute.errors import StoreError

__all__ = ["LocalPostgres", "postgres_bin_dir"]


def postgres_bin_dir() -> Path | None:
    """Directory of ``initdb`` and ``pg_ctl`` (PATH, then Debian's layout), or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """Start on ``__enter__``, stop and delete on ``__exit__`` (or :meth:`stop`)."""

    def __init__(self, *, user: str = "toolroute", settings: dict[str, str] | None = None) -> None:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise StoreError("PostgreSQL's initdb/pg_ctl not found (apt-get install postgresql)")
        self.bin_dir = bin_dir
        self.user = user
        self.settings = settings or {}
        self.port = 0
        self._root: Path | None = None
        self._as: list[str] = []

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{name}"

    def _run(self, *args: str) -> None:
        out = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, check=False
        )
        if out.returncode != 0:
            raise StoreError(f"{Path(args[0]).name} failed: {out.stderr.strip() or out.stdout}")

    def __enter__(self) -> LocalPostgres:
        self._root = Path(tempfile.mkdtemp(prefix="toolroute-pg-"))
        data = self._root / "data"
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise StoreError("as root, PostgreSQL needs a postgres user to run as") from None
            os.chown(self._root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        try:
            self._run(
                str(self.bin_dir / "initdb"), "-D", str(data), "-U", self.user,
                "--auth=trust", "-E", "UTF8", "--no-sync",
            )  # fmt: skip
            self.port = _free_port()
            options = {
                "port": str(self.port),
                "listen_addresses": "127.0.0.1",
                "unix_socket_directories": str(self._root),
                **self.settings,
            }
            self._run(
                str(self.bin_dir / "pg_ctl"), "-D", str(data), "-l", str(self._root / "log"),
                "-w", "-t", "60", "-o", " ".join(f"-c {k}={v}" for k, v in options.items()),
                "start",
            )  # fmt: skip
        except BaseException:
            self.stop()
            raise
        return self

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def stop(self) -> None:
        if self._root is None:
            return
        data = self._root / "data"
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*self._as, str(self.bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                 "-t", "60", "stop"],
                capture_output=True, timeout=90, check=False,
            )  # fmt: skip
        shutil.rmtree(self._root, ignore_errors=True)
        self._root = None

    def __exit__(self, *exc: object) -> None:
        self.stop()
