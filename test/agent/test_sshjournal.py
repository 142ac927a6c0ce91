"""fail2ban's sshd jail on a host without /var/log/auth.log reads the journal (sshjournal.py), and a user's own
[sshd] settings win over hostguard's drop-in wherever fail2ban lets them stand: jail.local, jail.d/*.local and
any jail.d/*.conf of theirs. Read by fail2ban's own configuration reader (`fail2ban-client -c DIR -d`) over a
copy of this machine's /etc/fail2ban."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hostguard.install import sshjournal

pytestmark = pytest.mark.skipif(
    shutil.which("fail2ban-client") is None or not os.path.isfile("/etc/fail2ban/jail.d/defaults-debian.conf"),
    reason="needs Debian's fail2ban (its jail.d/defaults-debian.conf enables the sshd jail)",
)


def sshd_jail(conf: Path) -> tuple[str, list[str]]:
    """The sshd jail's backend and log paths as fail2ban reads CONF."""
    done = subprocess.run(["fail2ban-client", "-c", str(conf), "-d"], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    backend, logs = "", []
    for line in done.stdout.splitlines():
        if not line.startswith("['"):
            continue
        words = ast.literal_eval(line)
        if words[:2] == ["add", "sshd"]:
            backend = words[2]
        if words[:3] == ["set", "sshd", "addlogpath"]:
            logs.append(words[3])
    return backend, logs


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    copy = tmp_path / "fail2ban"
    shutil.copytree("/etc/fail2ban", copy, symlinks=True)
    (copy / sshjournal.DROPIN.removeprefix("/etc/fail2ban/")).write_bytes(sshjournal.CONTENT)
    return copy


def test_the_drop_in_makes_the_stock_sshd_jail_read_the_journal(conf: Path) -> None:
    assert sshd_jail(conf)[0] == "systemd"


@pytest.mark.parametrize("name", ["jail.local", "jail.d/custom.conf", "jail.d/zz-sshd.conf", "jail.d/sshd.local"])
def test_a_users_own_sshd_settings_win(conf: Path, tmp_path: Path, name: str) -> None:
    """A user's jail.d/custom.conf sorted before hostguard-sshd-journal.conf lost to it: their sshd jail read
    the journal, and their logpath was silently dropped."""
    log = tmp_path / "secure.log"
    log.write_text("")
    (conf / name).write_text(f"[sshd]\nbackend = polling\nlogpath = {log}\n")
    assert sshd_jail(conf) == ("polling", [str(log)])
