"""hostguard.install.properties: the final document install appends and its byte-exact removal (issue 32).

Whether Spring Boot reads it as meant is test/payload/spring-boot.bats's
question, asked of Spring Boot itself; here the bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard.install import properties as p

KEY = p.KEY
DOC = f"#---\n{KEY}=false\n"


def round_trip(data: bytes, path: str = "/app/application.properties") -> bytes:
    added = p.edit(data, path)
    assert added is not None
    new = data + added.encode("latin-1")
    assert new.startswith(data)
    assert p.edit(new, path) is None  # a second install changes nothing
    back, warnings = p.restore(new, p.decode(p.encode(added)), path)
    assert (back, warnings) == (data, [])
    return new


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (b"a=1\n", f"a=1\n{DOC}"),
        (b"a=1", f"a=1\n{DOC}"),
        (b"", DOC),
        (f"{KEY}=true\n".encode(), f"{KEY}=true\n{DOC}"),
        # After a # comment `#---` would not separate documents; after a continued value it would be the value.
        (b"a=1\n# end\n", f"a=1\n# end\n\n{DOC}"),
        (b"a=1\n  ! end", f"a=1\n  ! end\n\n{DOC}"),
        (b"list=a,\\\n", f"list=a,\\\n\n{DOC}"),
        (b"even=a\\\\\n", f"even=a\\\\\n{DOC}"),
        (b"a=1\r\n", f"a=1\r\n#---\r\n{KEY}=false\r\n"),
    ],
)
def test_properties_document(data: bytes, want: str) -> None:
    assert round_trip(data) == want.encode()


@pytest.mark.parametrize("name", ["application.yml", "app.YAML"])
def test_yaml_document(name: str) -> None:
    data = b"spring:\n  web:\n    resources:\n      add-mappings: true"
    assert round_trip(data, f"/srv/{name}") == data + f"\n---\n{KEY}: false\n".encode()
    # No blank line after a YAML comment: `---` is a document marker whatever precedes it.
    assert round_trip(b"# c\n", f"/srv/{name}") == f"# c\n---\n{KEY}: false\n".encode()


def test_changed_end_is_left_and_warned() -> None:
    data = b"a=1\n" + DOC.encode() + b"b=2\n"
    back, warnings = p.restore(data, DOC, "/a.properties")
    assert back is None
    assert warnings == [
        "/a.properties: the document install appended (spring.web.resources.add-mappings=false after a document"
        " separator) is no longer the end of the file: left as it is (remove it by hand)"
    ]


def test_siblings_that_outrank() -> None:
    names = ["application.properties", "application-dev.properties", "application-prod.yml", "application.yml",
             "application-.yml", "other-dev.properties", "application-dev.txt", "applicationx-dev.yml"]  # fmt: skip
    assert p.siblings("application.properties", names) == ["application-dev.properties", "application-prod.yml"]
    # In one location .properties outranks YAML.
    assert p.siblings("application.yml", names) == [
        "application-dev.properties",
        "application-prod.yml",
        "application.properties",
    ]


@pytest.mark.parametrize(
    ("data", "sets"),
    [
        (f"{KEY}=true".encode(), True),
        (b"spring.web.resources.add\\-mappings=true", True),
        (b"spring.web.resources.addMappings=true", True),
        (b"SPRING_WEB_RESOURCES_ADD_MAPPINGS=true", True),
        (b"spring:\n  web:\n    resources:\n      add-mappings: true\n", True),
        (b"server.port=1\n", False),
    ],
)
def test_sets_key(data: bytes, sets: bool) -> None:
    assert p.sets_key(data) is sets


LINE = st.one_of(
    st.sampled_from([f"{KEY}=true", "# c", "! c", "x=1\\", "x=1\\\\", "", "a=b", "#---", "---"]),
    st.text(alphabet="ab =:#!\\\t\r-", max_size=12),
)


@given(st.lists(LINE, max_size=30), st.booleans(), st.sampled_from(["/a.properties", "/a.yml"]))
def test_any_file_round_trips(lines: list[str], eol: bool, path: str) -> None:
    data = ("\n".join(lines) + ("\n" if eol and lines else "")).encode()
    if p.edit(data, path) is None:
        assert data.endswith(p.document(path).encode()) or data.endswith(p.document(path, "\r\n").encode())
    else:
        round_trip(data, path)
