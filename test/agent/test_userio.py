"""hostguard.install.safepath and hostguard.install.userio: resolution by descriptor, a user's file read and written
by a child with that user's rights, and the install's bounds (issue 23). Needs root (it changes
owners and forks children that drop to `nobody`); skipped otherwise."""

from __future__ import annotations

import os
import pwd
import resource
import signal
import time
from pathlib import Path

import pytest

from hostguard.errors import HostguardError
from hostguard.install import safepath, userio

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def user_tree(root: Path) -> Path:
    uid, gid = nobody()
    (root / "srv").mkdir(mode=0o755)
    root.chmod(0o755)
    app = root / "srv" / "app"
    app.mkdir(mode=0o755)
    os.chown(app, uid, gid)
    f = app / "a.properties"
    f.write_bytes(b"x=1\n")
    os.chown(f, uid, 0)
    f.chmod(0o640)
    return f


def budget(seconds: float = 30.0, total: int = userio.TOTAL_BYTES) -> userio.Budget:
    return userio.Budget(time.time() + seconds, total)


def test_user_file_read_and_replaced_as_the_user(tmp_path: Path) -> None:
    f = user_tree(tmp_path)
    target = safepath.resolve("APP_PROPERTIES", "/srv/app/a.properties", str(tmp_path))
    try:
        assert (target.uid, target.real) == (nobody()[0], "/srv/app/a.properties")
        assert userio.read(target, budget()) == b"x=1\n"
        userio.replace(target, b"x=2\n", budget())
    finally:
        target.close()
    st = f.stat()
    assert f.read_bytes() == b"x=2\n"
    # Owner and mode kept; the group only where the user may give it (root's group: not).
    assert (st.st_uid, oct(st.st_mode & 0o777)) == (nobody()[0], "0o640")
    assert not list(f.parent.glob(".hostguard-tmp.*"))


def test_refusals_name_the_path(tmp_path: Path) -> None:
    f = user_tree(tmp_path)
    (f.parent / "link").symlink_to("a.properties")
    with pytest.raises(HostguardError, match="is a symbolic link in a directory of uid"):
        safepath.resolve("L", "/srv/app/link", str(tmp_path))
    f.parent.chmod(0o775)
    with pytest.raises(HostguardError, match="/srv/app is writable by a group or by all users"):
        safepath.resolve("L", "/srv/app/a.properties", str(tmp_path))
    with pytest.raises(HostguardError, match=r"\(/srv/x is missing\)"):
        safepath.resolve("L", "/srv/x/y", str(tmp_path))


def test_link_in_root_directory_is_followed(tmp_path: Path) -> None:
    f = user_tree(tmp_path)
    (tmp_path / "srv" / "cur").symlink_to("app")
    target = safepath.resolve("L", "/srv/cur/a.properties", str(tmp_path))
    target.close()
    assert target.real == "/srv/app/a.properties"
    assert f.exists()


def test_bounds_are_per_install(tmp_path: Path) -> None:
    user_tree(tmp_path)
    target = safepath.resolve("L", "/srv/app/a.properties", str(tmp_path))
    try:
        b = budget(total=6)
        userio.read(target, b)
        with pytest.raises(HostguardError, match="over the bound of 6 bytes"):
            userio.read(target, b)
        with pytest.raises(HostguardError, match="bound of 60 s .* is spent"):
            userio.read(target, budget(seconds=-1))
    finally:
        target.close()


def test_a_pipe_nobody_reads_stalls_root_only_until_the_deadline() -> None:
    rfd, wfd = os.pipe()
    start = time.time()
    assert userio._feed(wfd, b"x" * (4 << 20), start + 0.3) is False
    assert time.time() - start < 2
    os.close(rfd)


def test_root_directory_check(tmp_path: Path) -> None:
    (tmp_path / "etc" / "x").mkdir(parents=True)
    safepath.root_dir("/etc/x/missing", str(tmp_path))
    (tmp_path / "etc" / "x").chmod(0o777)
    with pytest.raises(HostguardError, match="/etc/x is writable by a group or by all users"):
        safepath.root_dir("/etc/x", str(tmp_path))


def test_a_killed_writes_temp_file_is_dropped_as_the_user(tmp_path: Path) -> None:
    f = user_tree(tmp_path)
    temp = f.with_name(safepath.TMP_PREFIX + f.name)
    victim = tmp_path / "victim"
    victim.write_text("root's\n")
    # What stands at the temp name is the user's: a link is removed, never followed.
    temp.symlink_to(victim)
    os.lchown(temp, *nobody())
    target = safepath.resolve("APP_PROPERTIES", "/srv/app/a.properties", str(tmp_path))
    try:
        userio.drop_temp(target, budget())
        assert not temp.is_symlink() and victim.read_text() == "root's\n"
        userio.drop_temp(target, budget())  # none there: nothing done
        # Removed with the user's rights: where only root could remove it, it stays, named.
        temp.write_bytes(b"")
        f.parent.chmod(0o555)
        with pytest.raises(HostguardError, match=r"APP_PROPERTIES: /srv/app/\.hostguard-tmp\.a\.properties could"):
            userio.drop_temp(target, budget())
        assert temp.exists()
    finally:
        target.close()


@pytest.mark.parametrize("owner", ["user", "root"])
def test_a_write_that_fails_leaves_no_temp_file(tmp_path: Path, owner: str) -> None:
    f = user_tree(tmp_path)
    if owner == "root":
        os.chown(f.parent, 0, 0)
        os.chown(f, 0, 0)
    target = safepath.resolve("APP_PROPERTIES", "/srv/app/a.properties", str(tmp_path))
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    xfsz = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        # A file over the size limit: the write fails (EFBIG) with its temp file made.
        resource.setrlimit(resource.RLIMIT_FSIZE, (2, limit[1]))
        with pytest.raises(HostguardError, match="could not be written"):
            userio.replace(target, b"x=22222\n", budget())
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, xfsz)
        target.close()
    assert f.read_bytes() == b"x=1\n"
    assert not list(f.parent.glob(".hostguard-tmp.*"))
