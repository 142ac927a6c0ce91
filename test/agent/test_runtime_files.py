"""hostguard.runtime_files: every file a program of a part writes while running is in the part's rows.

Each program runs for real (its script, as cron, fail2ban or the ban tool run it) in a temporary root
(HOSTGUARD_ROOT), with a message it cannot deliver (no webhook file: spooled), so it writes what a host
sees; then every file under the state and spool directories must match a row of the program's part, or of
base (the spool and the settings cache: every deploy installs base, and its uninstall removes them).
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAKE_DOCKER
from hostguard import paths, runtime_files

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
SETTINGS = "MEMORY_THRESHOLD=1\nDISK_THRESHOLD=1\nCONTAINER_WATCH=app\nNOTIFY_ATTEMPTS=1\nNOTIFY_BUDGET=2\n"
RUNS = [
    ("monitors", ["host-monitor"]),
    ("monitors", ["container-monitor"]),
    ("base", ["hostguard-notify", "text", "kept in the spool"]),
    # The ban action's list, as fail2ban's process writes it (nginxban.apply).
    (
        "bantool",
        [
            "-c",
            f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); from hostguard.ban import nginxban; "
            "nginxban.apply(['192.0.2.1'], '/nonexistent.pid', [])",
        ],
    ),
]


def written(root: Path) -> list[str]:
    out = []
    for folder in (paths.STATE_PATH, paths.SPOOL_PATH):
        for path in sorted((root / folder.lstrip("/")).rglob("*")):
            if not path.is_dir():
                out.append("/" + str(path.relative_to(root)))
    return out


@pytest.mark.parametrize(("part", "argv"), RUNS, ids=[part + "-" + argv[0] for part, argv in RUNS])
def test_what_a_program_writes_is_in_its_parts_rows(tmp_path: Path, part: str, argv: list[str]) -> None:
    (tmp_path / "etc/hostguard").mkdir(parents=True)
    (tmp_path / paths.STATE_PATH.lstrip("/")).mkdir(parents=True, mode=0o700)  # part base's
    (tmp_path / "etc/hostguard/hostguard.conf").write_text(SETTINGS)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/docker").symlink_to(FAKE_DOCKER)
    (tmp_path / "containers.json").write_text(
        '{"containers": [{"name": "web", "state": "running", "cpu": "1.00%", "mem": "1.00%"},'
        ' {"name": "app", "state": "exited", "exit_code": 1, "error": "x"}]}\n'
    )
    env = {
        "PATH": f"{tmp_path}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOSTGUARD_ROOT": str(tmp_path),
        "FAKE_DOCKER_STATE": str(tmp_path / "containers.json"),
    }
    for _ in range(2):  # a second run starts from the first's state
        command = [sys.executable, *argv] if argv[0] == "-c" else [str(SCRIPTS / argv[0]), *argv[1:]]
        subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    files = written(tmp_path)
    assert files, f"{argv[0]} wrote nothing: the run did not get far enough to show its files"
    rows = [path for _, path in runtime_files.TABLE[part] + runtime_files.TABLE["base"]]
    unlisted = [f for f in files if not any(fnmatch.fnmatchcase(f, row) for row in rows)]
    assert unlisted == [], f"{argv[0]} wrote files neither runtime_files.TABLE[{part!r}] nor base's lists"


def test_every_row_is_in_a_root_only_directory_of_hostguard() -> None:
    for part, rows in runtime_files.TABLE.items():
        for kind, path in rows:
            assert kind in ("state", "message"), (part, path)
            assert os.path.dirname(path) in (paths.STATE_PATH, paths.SPOOL_PATH), (part, path)
            assert "*" not in os.path.dirname(path) and ".." not in path, (part, path)
