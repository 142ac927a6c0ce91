"""hostguard.install.txnstore: one transaction per step, records in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hostguard.install.txnstore import Rec, Store


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


def test_records_are_named_tuples_of_the_store(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "install.db"))
    store.step("monitors", add=[("runtime", "/var/lib/hostguard/cpu.sample", "state", "")])
    (rec,) = store.records("monitors")
    assert isinstance(rec, Rec)
    assert (rec.kind, rec.path, rec.a, rec.b) == ("runtime", "/var/lib/hostguard/cpu.sample", "state", "")
    assert store.parts() == {"monitors"}
