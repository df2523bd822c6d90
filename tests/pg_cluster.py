"""A throwaway PostgreSQL cluster of the caller's own, to stop and start at will.

initdb into a temp folder with Debian's binaries (/usr/lib/postgresql/*/bin), trust
authentication, TCP on 127.0.0.1 and a free port, its socket in that folder. When run as root the
tools run as the postgres user (initdb refuses root) and the folder is theirs. Nothing of the
machine's own PostgreSQL is used but the binaries: the shared server on 5432 is never touched.
Used by tests/runs/test_database_restart.py and bench/outage --postgres.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def initdb_path() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return found[-1] if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, database: str = "evalsite") -> None:
        initdb = initdb_path()
        if initdb is None:
            raise RuntimeError("no /usr/lib/postgresql/*/bin/initdb: apt-get install postgresql")
        self.bin = Path(initdb).parent
        self.folder = Path(tempfile.mkdtemp(prefix="evalsite-pg-"))
        self.port = free_port()
        self.data = self.folder / "pgdata"
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/{database}"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        # fsync off: a throwaway cluster need not survive a power cut, and initdb is 3x faster.
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", database)

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def start(self) -> None:
        """Start and wait until it accepts connections."""
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "postgres.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """A restart's first half (``-m fast``, what systemd and docker do): every session is
        terminated, then the server is gone until ``start``."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
