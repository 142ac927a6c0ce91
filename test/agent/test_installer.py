"""hostguard.install.installer end to end in a temporary root: a crash (SIGKILL) after every step of the transaction
store, for install and for uninstall.

Each run is a real `install` process (the module's main in a child interpreter, as the shim runs it);
the killed ones kill themselves right after the Nth transaction of the store commits.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from conftest import agent_bundle
from conftest import installer_steps as steps
from conftest import run_installer as run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the installer runs as root")


def listing(root: Path) -> list[tuple[str, ...]]:
    """Every path but /run and the store's bytes: type, mode, owner, content or link target."""
    out: list[tuple[str, ...]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (Path(folder) == root and d == "run"))
        for name in sorted(dirs + files):
            path = Path(folder, name)
            st = path.lstat()
            if path.is_symlink():
                what = "-> " + os.readlink(path)
            elif path.is_dir():
                what = "dir"
            elif name.startswith("install.db"):
                what = "store"
            else:
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            out.append((str(path.relative_to(root)), oct(st.st_mode), str(st.st_uid), str(st.st_gid), what))
    return out


def records(root: Path) -> list[tuple[str, ...]]:
    import sqlite3

    db = root / "var/lib/hostguard/install.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT part, kind, path, a, b FROM record ORDER BY part, id"))


TABLE = """# an expanded table, as a bundle carries it
base hostguard.conf /etc/hostguard/hostguard.conf 0644
base tool /usr/local/lib/hostguard/tool 0755
base a.conf /etc/demo/a.conf 0644
base b.conf /etc/demo/sub/b.conf 0644
"""


def make_bundle(where: Path) -> Path:
    """A bundle of part base: the agent's package, a program declaring a runtime file, two files."""
    agent_bundle(where)
    (where / "files.table").write_text(TABLE)
    (where / "hostguard.conf").write_text("SLACK_CHANNEL=ops\n")
    (where / "tool").write_text('#!/bin/sh\necho "state /var/lib/hostguard/tool.state"\n')
    (where / "tool").chmod(0o755)
    (where / "a.conf").write_text("ours\n")
    (where / "b.conf").write_text("b\n")
    return where


def fresh_root(where: Path) -> Path:
    """A root with a user's own file where install places a.conf (kept as a backup) and a lock dir."""
    if where.exists():
        shutil.rmtree(where)
    (where / "etc/demo").mkdir(parents=True)
    (where / "run").mkdir()
    (where / "etc/demo/a.conf").write_text("the admin's own\n")
    (where / "etc/demo/a.conf").chmod(0o640)
    return where


def test_install_killed_after_any_step_converges(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "bundle")
    root = fresh_root(tmp_path / "root")
    pristine = listing(root)
    whole = run(bundle, "install", "--root", str(root), "--part", "base")
    assert whole.returncode == 0, whole.stderr
    total = steps(whole)
    installed, installed_records = listing(root), records(root)
    assert total > 5
    for k in range(1, total + 1):
        root = fresh_root(tmp_path / "root")
        killed = run(bundle, "install", "--root", str(root), "--part", "base", kill_after=k)
        assert killed.returncode == -9, f"step {k}: {killed.stderr}"
        if k % 2:
            # Resumed: the same tree and records as an install never killed.
            again = run(bundle, "install", "--root", str(root), "--part", "base")
            assert again.returncode == 0, f"step {k}: {again.stderr}"
            assert listing(root) == installed, f"killed after step {k}"
            assert [r[:3] for r in records(root)] == [r[:3] for r in installed_records], f"killed after step {k}"
        gone = run(bundle, "uninstall", "--root", str(root))
        assert gone.returncode == 0, f"step {k}: {gone.stderr}"
        assert listing(root) == pristine, f"killed after step {k}"


def test_uninstall_killed_after_any_step_converges(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "bundle")
    root = fresh_root(tmp_path / "root")
    pristine = listing(root)
    assert run(bundle, "install", "--root", str(root), "--part", "base").returncode == 0
    whole = run(bundle, "uninstall", "--root", str(root))
    assert whole.returncode == 0, whole.stderr
    assert listing(root) == pristine
    total = steps(whole)
    assert total > 5
    for k in range(1, total + 1):
        root = fresh_root(tmp_path / "root")
        assert run(bundle, "install", "--root", str(root), "--part", "base").returncode == 0
        killed = run(bundle, "uninstall", "--root", str(root), kill_after=k)
        assert killed.returncode == -9, f"step {k}: {killed.stderr}"
        gone = run(bundle, "uninstall", "--root", str(root))
        assert gone.returncode == 0, f"step {k}: {gone.stderr}"
        assert listing(root) == pristine, f"killed after step {k}"
        assert (root / "etc/demo/a.conf").read_text() == "the admin's own\n"


def test_two_include_records_of_one_file_are_undone_in_turn(tmp_path: Path) -> None:
    """A server block added between two installs gets its own token: uninstall undoes both records, the second
    on the first's result (each read afresh, the last write would bring the first token's lines back)."""
    import time

    from hostguard.install import webedit

    (tmp_path / "etc/nginx").mkdir(parents=True)
    site = tmp_path / "etc/nginx/site"
    site.write_bytes(b"server { listen 80; }\n")
    tokens = []
    for extra in (b"", b"server { listen 81; }\n"):
        site.write_bytes(site.read_bytes() + extra)
        web = webedit.Web(str(tmp_path), time.time() + 60)
        web.nginx("/etc/nginx/site")
        (change,) = web.changes
        tokens.append(change.extra[0])
        web.write(change.label, change.real, change.new)
    assert site.read_bytes().count(b"# hostguard") == 2 and tokens[0] != tokens[1]
    web = webedit.Web(str(tmp_path), time.time() + 60)
    for token in tokens[::-1]:
        web.undo("include", "/etc/nginx/site", [token])
    for change in web.changes:
        web.write(change.label, change.real, change.new)
    assert site.read_bytes() == b"server { listen 80; }\nserver { listen 81; }\n"


def test_state_directories_a_run_killed_before_its_store_left_are_taken_as_its_own(tmp_path: Path) -> None:
    """The state directory is made with plain mkdirs, then the store records them: a run killed in between
    (or an uninstall killed between removing the store and the directories) leaves an empty chain with no
    store, which the next uninstall removes and the next install records."""
    bundle = make_bundle(tmp_path / "bundle")
    root = fresh_root(tmp_path / "root")
    pristine = listing(root)
    (root / "var/lib/hostguard").mkdir(parents=True)
    gone = run(bundle, "uninstall", "--root", str(root))
    assert gone.returncode == 0, gone.stderr
    assert listing(root) == pristine
    (root / "var/lib/hostguard").mkdir(parents=True)
    done = run(bundle, "install", "--root", str(root), "--part", "base")
    assert done.returncode == 0, done.stderr
    assert [r[2] for r in records(root) if r[:2] == ("", "dir")] == ["/var", "/var/lib", "/var/lib/hostguard"]
    gone = run(bundle, "uninstall", "--root", str(root))
    assert gone.returncode == 0, gone.stderr
    assert listing(root) == pristine


def test_a_first_install_stopped_early_takes_back_the_state_directory(tmp_path: Path) -> None:
    """SIGTERM after the store's first steps fails the part: its journal removes what it placed, the store,
    then the directories made for it (named undo kinds, newest first)."""
    bundle = make_bundle(tmp_path / "bundle")
    for k in (1, 2, 3):
        root = fresh_root(tmp_path / "root")
        pristine = listing(root)
        failed = run(bundle, "install", "--root", str(root), "--part", "base", kill_after=k, sig=15)
        assert failed.returncode == 1 and "rolled back" in failed.stderr, f"step {k}: {failed.stderr}"
        assert listing(root) == pristine, f"stopped after step {k}"


def test_a_store_made_by_a_run_killed_before_its_first_step_counts_as_none(tmp_path: Path) -> None:
    """Killed between creating install.db and its first step: the next install records the directories it
    made, so uninstall leaves the root as it was."""
    from hostguard.install import txnstore

    bundle = make_bundle(tmp_path / "bundle")
    root = fresh_root(tmp_path / "root")
    pristine = listing(root)
    (root / "var/lib/hostguard").mkdir(parents=True)
    txnstore.Store(str(root / "var/lib/hostguard/install.db")).close()
    done = run(bundle, "install", "--root", str(root), "--part", "base")
    assert done.returncode == 0, done.stderr
    assert [r[2] for r in records(root) if r[:2] == ("", "dir")] == ["/var", "/var/lib", "/var/lib/hostguard"]
    gone = run(bundle, "uninstall", "--root", str(root))
    assert gone.returncode == 0, gone.stderr
    assert listing(root) == pristine
