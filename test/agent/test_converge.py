"""An install with changed web settings (webedit.stale): the old edits of users' files go in the same run.

A real `install` process in a temporary root, part web: installed with NGINX_SERVER_CONF and APP_PROPERTIES
set, then again with NGINX_SERVER_CONF on another file and APP_PROPERTIES empty. That second run killed
(SIGKILL) after each step of the store, then run again, ends as the run never killed does; stopped (SIGTERM)
after each step before its commit, it rolls back to the first install's tree, undone edits included;
uninstall then leaves the root as before.

A run killed while it writes a user's file (its temp file made beside it, not yet renamed) leaves nothing of
it after the next install or uninstall, in root's directory and in a user's.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import agent_bundle
from conftest import installer_steps as steps
from conftest import run_installer as run
from hostguard.install import webedit
from hostguard.install.safepath import TMP_PREFIX

SITE = b"server {\n    listen 80;\n}\n\nserver {\n    listen 81;\n    location / { return 200; }\n}\n"
OTHER = b"# another app\nserver {\n    listen 8080;\n}\n"
PROPS = b"# Spring\nserver.port=8080\n"
OLD = "NGINX_SERVER_CONF=/etc/nginx/sites-available/site\nAPP_PROPERTIES=/opt/app/application.properties\n"
NEW = "NGINX_SERVER_CONF=/etc/nginx/conf.d/other.conf\n"
PROPS_ONLY = "APP_PROPERTIES=/opt/app/application.properties\n"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nginx"), reason="root and nginx -V")

Done = subprocess.CompletedProcess[str]


def install(bundle: Path, root: Path, settings: str, kill_after: int = 0, sig: int = 9) -> Done:
    conf = bundle / "settings.conf"
    conf.write_text(settings)
    return run(bundle, "install", "--root", str(root), "--part", "web", "--settings", str(conf), kill_after=kill_after,
               sig=sig)  # fmt: skip


def listing(root: Path) -> list[tuple[str, ...]]:
    """Every path but /run and the store's bytes (its records apart): type, mode, owner, content."""
    out: list[tuple[str, ...]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (Path(folder) == root and d == "run"))
        for name in sorted(dirs + files):
            path = Path(folder, name)
            st = path.lstat()
            if name.startswith("install.db"):
                continue
            what = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
            out.append((str(path.relative_to(root)), oct(st.st_mode), str(st.st_uid), what))
    db = root / "var/lib/hostguard/install.db"
    if db.exists():
        with sqlite3.connect(db) as conn:
            out += [tuple(r) for r in conn.execute("SELECT part, kind, path FROM record ORDER BY part, id")]
    return out


def make_bundle(where: Path) -> Path:
    agent_bundle(where)
    (where / "files.table").write_text("web deny.conf /etc/nginx/snippets/hostguard-deny.conf 0644\n")
    (where / "deny.conf").write_text("location ~ /\\.env { return 403; }\n")
    return where


def fresh_root(where: Path) -> Path:
    if where.exists():
        shutil.rmtree(where)
    for folder in ("run", "etc/nginx/sites-available", "etc/nginx/conf.d", "opt/app"):
        (where / folder).mkdir(parents=True)
    (where / "etc/nginx/sites-available/site").write_bytes(SITE)
    (where / "etc/nginx/conf.d/other.conf").write_bytes(OTHER)
    (where / "opt/app/application.properties").write_bytes(PROPS)
    return where


def test_stale_picks_the_records_the_settings_no_longer_edit(tmp_path: Path) -> None:
    root = fresh_root(tmp_path / "root")
    web = webedit.Web(str(root), 1e12)
    web.nginx("/etc/nginx/conf.d/other.conf")
    records = [("include", "/etc/nginx/sites-available/site"), ("include", "/etc/nginx/conf.d/other.conf"),
               ("props", "/opt/app/application.properties")]  # fmt: skip
    assert webedit.stale(records, web) == [0, 2]
    web.props("/opt/app/application.properties")
    assert webedit.stale(records, web) == [0]


def test_a_converging_install_killed_or_stopped_after_any_step_ends_as_one_never_stopped(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "bundle")
    root = fresh_root(tmp_path / "root")
    pristine = listing(root)
    assert install(bundle, root, OLD).returncode == 0
    first = listing(root)
    assert (root / "etc/nginx/sites-available/site").read_bytes() != SITE
    whole = install(bundle, root, NEW)
    assert whole.returncode == 0, whole.stderr
    assert "removed the deny include from /etc/nginx/sites-available/site" in whole.stdout
    assert "removed the final document spring.web.resources.add-mappings=false from" in whole.stdout
    assert (root / "etc/nginx/sites-available/site").read_bytes() == SITE
    assert (root / "opt/app/application.properties").read_bytes() == PROPS
    converged, total = listing(root), steps(whole)
    assert total >= 3
    for k in range(1, total + 1):
        root = fresh_root(tmp_path / "root")
        assert install(bundle, root, OLD).returncode == 0
        killed = install(bundle, root, NEW, kill_after=k)
        assert killed.returncode == -9, f"step {k}: {killed.stderr}"
        again = install(bundle, root, NEW)
        assert again.returncode == 0, f"step {k}: {again.stderr}"
        assert listing(root) == converged, f"killed after step {k}"
        root = fresh_root(tmp_path / "root")
        assert install(bundle, root, OLD).returncode == 0
        # The last step is the commit: after it there is nothing to roll back.
        if k < total:
            stopped = install(bundle, root, NEW, kill_after=k, sig=15)
            assert stopped.returncode == 1 and "rolled back" in stopped.stderr, f"step {k}: {stopped.stderr}"
            assert listing(root) == first, f"stopped after step {k}"
        gone = run(bundle, "uninstall", "--root", str(root))
        assert gone.returncode == 0, f"step {k}: {gone.stderr}"
        assert listing(root) == pristine, f"step {k}"


def user_app(root: Path) -> Path:
    """ROOT with /opt/app and its properties file `nobody`'s: written by a child dropped to nobody."""
    nobody = pwd.getpwnam("nobody")
    for path in (root / "opt/app", root / "opt/app/application.properties"):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    return root


def writing(root: Path) -> Path | None:
    """The user's file a killed run was about to write: the first its journal names (None: none)."""
    conn = sqlite3.connect(root / "var/lib/hostguard/install.db")
    try:
        row = conn.execute("SELECT path FROM journal WHERE kind = 'user-file' ORDER BY id").fetchone()
    finally:
        conn.close()
    return None if row is None else root / row[0].lstrip("/")


def killed(bundle: Path, settings: str, verb: str, k: int, where: Path) -> Path:
    """A root (made in WHERE) where VERB was killed after its Kth step."""
    root = user_app(fresh_root(where))
    if verb == "uninstall":
        assert install(bundle, root, settings).returncode == 0
        done = run(bundle, "uninstall", "--root", str(root), kill_after=k)
    else:
        done = install(bundle, root, settings, kill_after=k)
    assert done.returncode == -9, f"{verb} killed after step {k}: {done.stderr}"
    return root


@pytest.mark.parametrize("settings", [OLD, PROPS_ONLY], ids=["root-dir", "user-dir"])
def test_a_run_killed_while_writing_a_users_file_leaves_no_temp_file(tmp_path: Path, settings: str) -> None:
    bundle = make_bundle(tmp_path / "bundle")
    root = user_app(fresh_root(tmp_path / "root"))
    pristine = listing(root)
    whole = install(bundle, root, settings)
    assert whole.returncode == 0, whole.stderr
    installed = listing(root)
    undone = run(bundle, "uninstall", "--root", str(root))
    assert undone.returncode == 0 and listing(root) == pristine, undone.stderr
    for verb, total in (("install", steps(whole)), ("uninstall", steps(undone))):
        # The step that journals the writes of the users' files; the kill then lands in the first write,
        # between making its temp file (empty, 0600, the directory controller's) and renaming it.
        k = next(k for k in range(1, total + 1) if writing(killed(bundle, settings, verb, k, tmp_path / "root")))
        for then in ("install", "uninstall"):
            root = killed(bundle, settings, verb, k, tmp_path / "root")
            real = writing(root)
            assert real is not None
            temp = real.with_name(TMP_PREFIX + real.name)
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            uid = real.parent.stat().st_uid
            os.chown(temp, uid, pwd.getpwuid(uid).pw_gid)
            if then == "install":
                again = install(bundle, root, settings)
                assert again.returncode == 0, again.stderr
                assert listing(root) == installed, f"{verb} killed writing {real}, then install"
            gone = run(bundle, "uninstall", "--root", str(root))
            assert gone.returncode == 0, gone.stderr
            assert listing(root) == pristine, f"{verb} killed writing {real}, then {then}: {temp.name} left?"
