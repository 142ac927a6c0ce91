"""On the live root, install finds a user's own worker_shutdown_timeout in `nginx -T` (install/workershutdown.py):
any file nginx reads, not only nginx.conf and modules-enabled/, and never hostguard's own drop-in. The dump is
the real nginx's, of a configuration made here (the machine's /etc/nginx is not read)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hostguard.install import workershutdown

pytestmark = pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")


def dump(tmp_path: Path, main: str) -> str:
    """`nginx -T` of a configuration whose main context has MAIN (its files under TMP_PATH)."""
    (tmp_path / "logs").mkdir(exist_ok=True)
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/logs/error.log;\n{main}\nevents {{}}\n")
    done = subprocess.run(["nginx", "-T", "-q", "-p", str(tmp_path), "-c", str(conf), "-e", f"{tmp_path}/logs/e.log"],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_users_own_found_in_any_file_nginx_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine").mkdir()
    mine = "# worker_shutdown_timeout 1s; (a comment)\nworker_shutdown_timeout 10s;\n"
    (tmp_path / "mine" / "timeouts.conf").write_text(mine)
    text = dump(tmp_path, f"include {tmp_path}/mine/*.conf;")
    monkeypatch.setattr(workershutdown, "_dump", lambda: text)
    assert workershutdown.users_file("", lambda p: str(tmp_path / "none") + p) == f"{tmp_path}/mine/timeouts.conf"


def test_ours_and_comments_are_not_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "other.conf").write_text("# worker_shutdown_timeout 10s;\nworker_rlimit_nofile 1024;\n")
    (tmp_path / "ours.conf").write_text("worker_shutdown_timeout 30s;\n")
    text = dump(tmp_path, f"include {tmp_path}/mine/*.conf;\ninclude {tmp_path}/ours.conf;")
    text = text.replace(f"# configuration file {tmp_path}/ours.conf:", f"# configuration file {workershutdown.DROPIN}:")
    assert f"# configuration file {workershutdown.DROPIN}:" in text
    monkeypatch.setattr(workershutdown, "_dump", lambda: text)
    assert workershutdown.users_file("", lambda p: str(tmp_path / "none") + p) == ""
