"""hostguard.txnstore: one transaction per step, records in place, the bash installer's manifests imported once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hostguard.txnstore import Rec, Store


def test_a_step_is_all_or_nothing_and_the_connection_stays_usable(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "install.db"))
    store.step("base", add=[("file", "/a", "h1", "")], undo=[("f", "/a", "", "")])
    # The second record breaks a NOT NULL column: nothing of the step is kept, not even its journal entry.
    with pytest.raises(sqlite3.IntegrityError):
        store.step("base", add=[("file", "/b", "h2", ""), ("file", None, "", "")], undo=[("f", "/b", "", "")])  # type: ignore[list-item]
    assert [(r.kind, r.path) for r in store.records("base")] == [("file", "/a")]
    assert [e.path for e in store.journal()] == ["/a"]
    store.step("base", add=[("file", "/c", "h3", "")])
    assert [r.path for r in store.records("base")] == ["/a", "/c"]


def test_a_record_replaced_keeps_its_position_and_a_restore_gives_back_the_ids(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "install.db"))
    store.step("web", add=[("props", "/p", "r1", ""), ("include", "/s", "t1", ""), ("reload", "pending", "", "")])
    found = store.records("web")
    first = found[0]
    store.step("web", put=[first._replace(a="r2")], drop=[found[2].id], add=[("file", "/x", "h", "")])
    assert [(r.kind, r.a) for r in store.records("web")] == [("props", "r2"), ("include", "t1"), ("file", "h")]
    # A failed part's rollback: the manifest exactly as the part found it, ids (so order) included.
    store.restore("web", found)
    assert store.records("web") == found
    assert store.journal() == []
    # Other parts are not touched.
    store.step("base", add=[("dir", "/usr/local/lib/hostguard", "", "")])
    store.restore("web", [])
    assert [r.path for r in store.records("base")] == ["/usr/local/lib/hostguard"]
    assert store.records("web") == []


def test_the_journal_is_cleared_by_a_step_that_asks(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "install.db"))
    store.step("base", undo=[("d", "/x", "", ""), ("m", "/y", "755", "0:0")])
    assert [(e.kind, e.path) for e in store.journal()] == [("d", "/x"), ("m", "/y")]
    store.step("base", clear_journal=True)
    assert store.journal() == []


LEGACY_BASE = (
    "dir\t/var\ndir\t/var/lib\ndir\t/var/lib/hostguard\ndir\t/usr/local/lib/hostguard\n"
    "mode\t/etc/hostguard\t755\t0:0\nfile\t/etc/hostguard/webhook.curlrc\t-\n"
    "backup\t/etc/logrotate.d/hostguard\t/var/lib/hostguard/backup/ab\th1,h0\n"
)
LEGACY_WEB = "include\t/etc/nginx/site\t0123456789abcdef\nprop\t/opt/app/a.properties\t3\ttrue\nreload\tpending\n"


def test_import_of_the_bash_manifests_keeps_every_record_in_order(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "install-base.manifest").write_text(LEGACY_BASE)
    (state / "install-web.manifest").write_text(LEGACY_WEB)
    store = Store(str(state / "install.db"))
    assert store.import_legacy(str(state), "/var/lib/hostguard") == ["install-base.manifest", "install-web.manifest"]
    assert not list(state.glob("*.manifest"))
    # The state directory's own chain is the store's (it goes when no part is left).
    assert [r.path for r in store.records("")] == ["/var", "/var/lib", "/var/lib/hostguard"]
    assert [r[1:] for r in store.records("base")] == [
        ("dir", "/usr/local/lib/hostguard", "", ""),
        ("mode", "/etc/hostguard", "755", "0:0"),
        ("file", "/etc/hostguard/webhook.curlrc", "-", ""),
        ("backup", "/etc/logrotate.d/hostguard", "/var/lib/hostguard/backup/ab", "h1,h0"),
    ]
    assert [r[1:] for r in store.records("web")] == [
        ("include", "/etc/nginx/site", "0123456789abcdef", ""),
        ("prop", "/opt/app/a.properties", "3", "true"),
        ("reload", "pending", "", ""),
    ]


def test_a_run_killed_after_the_import_and_before_the_removal_does_not_import_twice(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "install-web.manifest").write_text(LEGACY_WEB)
    store = Store(str(state / "install.db"))
    store.import_legacy(str(state), "/var/lib/hostguard")
    # As if killed between the commit and the unlink: the text file is still there.
    (state / "install-web.manifest").write_text(LEGACY_WEB)
    store.import_legacy(str(state), "/var/lib/hostguard")
    assert len(store.records("web")) == 3
    assert not (state / "install-web.manifest").exists()


def test_records_are_named_tuples_of_the_store(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "install.db"))
    store.step("monitors", add=[("runtime", "/var/lib/hostguard/cpu.sample", "state", "")])
    (rec,) = store.records("monitors")
    assert isinstance(rec, Rec)
    assert (rec.kind, rec.path, rec.a, rec.b) == ("runtime", "/var/lib/hostguard/cpu.sample", "state", "")
    assert store.parts() == {"monitors"}
