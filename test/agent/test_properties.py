"""hostguard.properties: the one-pass edit and its exact undo by position (issue 23)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard import properties as p
from hostguard.errors import HostguardError

KEY = p.KEY


def round_trip(data: bytes) -> bytes | None:
    result = p.edit(data, "/app.properties")
    if result is None:
        return None
    new, record = result
    back, warnings = p.restore(new, p.Edit.decode(record.encode()), "/app.properties")
    assert warnings == []
    assert back == data
    return new


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (b"a=1\n", f"a=1\n{KEY}=false\n"),
        (b"a=1", f"a=1\n{KEY}=false\n"),
        (b"", f"{KEY}=false\n"),
        (f"{KEY} = true\n".encode(), f"{KEY} = false\n"),
        (f"  {KEY} : true  \nz=1".encode(), f"  {KEY} : false\nz=1"),
        (f"{KEY} true\n".encode(), f"{KEY} false\n"),
        (f"{KEY}\n".encode(), f"{KEY}=false\n"),
        (f"# {KEY}=true\n!{KEY}=x\n{KEY}-x=true\nl=a,\\\n  {KEY}=true\n".encode(), None),
    ],
)
def test_edit_forms(data: bytes, want: str | None) -> None:
    new = round_trip(data)
    if want is None:
        assert new is not None
        assert new.endswith(f"\n{KEY}=false\n".encode())
    else:
        assert new == want.encode()


def test_already_false_changes_nothing() -> None:
    assert p.edit(f"x=1\n{KEY} = false\n".encode(), "/a") is None


def test_identical_lines_come_back_each_as_it_was() -> None:
    data = f"{KEY}=true\nx=1\n{KEY}=on\n".encode()
    assert round_trip(data) == f"{KEY}=false\nx=1\n{KEY}=false\n".encode()


def test_changed_line_is_left_and_warned() -> None:
    new, record = p.edit(f"{KEY}=true\n{KEY}=on\n".encode(), "/a") or (b"", p.Edit())
    changed = new.replace(b"=false\n", b"=maybe\n", 1)
    back, warnings = p.restore(changed, record, "/a")
    assert back == f"{KEY}=maybe\n{KEY}=on\n".encode()
    assert warnings == ["/a: line 1, which install set, was changed since: left as it is"]


def test_multi_line_value_refused() -> None:
    with pytest.raises(HostguardError, match="multi-line value"):
        p.edit(f"{KEY}=true\\\n  more\n".encode(), "/a")


def test_yaml_refused() -> None:
    with pytest.raises(HostguardError, match="is a YAML file: refused"):
        p.refuse_yaml("/srv/application.YML")


def test_legacy_records_restore() -> None:
    import base64

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    back, _ = p.restore_legacy(f"a=1\n{KEY}=false\n".encode(), "propadd", b64(f"{KEY}=false"), "0", "/a")
    assert back == b"a=1"
    back, _ = p.restore_legacy(f"{KEY}=false\n".encode(), "prop", b64(f"{KEY}=yes"), b64(f"{KEY}=false"), "/a")
    assert back == f"{KEY}=yes\n".encode()


def test_linear_record_is_small() -> None:
    data = f"{KEY}=true\n".encode() * 100_000
    result = p.edit(data, "/a")
    assert result is not None
    # One record, compressed: a small part of the 3.9 MB file it describes.
    assert len(result[1].encode()) < 400_000


LINE = st.one_of(
    st.sampled_from([f"{KEY}=true", f"{KEY}: on", f"  {KEY}", f"{KEY}=false", "# c", "x=1\\", "", "a=b"]),
    st.text(alphabet="ab =:#!\\\t\r", max_size=12),
)


@given(st.lists(LINE, max_size=30), st.booleans())
def test_any_file_round_trips(lines: list[str], eol: bool) -> None:
    data = ("\n".join(lines) + ("\n" if eol and lines else "")).encode()
    # A multi-line value is refused (HostguardError): nothing changed.
    with contextlib.suppress(HostguardError):
        round_trip(data)
