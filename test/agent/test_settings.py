"""hostguard.conf parsing: the generated table's rules, errors naming file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard import settings
from hostguard.settings_table import DEFAULTS, RANGES


def test_defaults_when_the_file_is_missing(root: Path) -> None:
    loaded = settings.load()
    assert loaded.values == DEFAULTS
    assert (loaded.cpu_threshold, loaded.notify_budget, loaded.container_watch) == ("80", 40, [])


def test_values_are_typed() -> None:
    text = "# c\n\nCPU_THRESHOLD=85.5\nCONTAINER_WATCH= web , db\nALERT_REPEAT_INTERVAL=1h30m\nALERT_HOST_LABEL=true\n"
    loaded = settings.parse(text, "f.conf")
    assert loaded.cpu_threshold == "85.5"
    assert loaded.container_watch == ["web", "db"]
    assert loaded.alert_repeat_seconds == 5400
    assert loaded.alert_host_label is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FOO=1", "f.conf:2: unknown key FOO"),
        ("CPU_THRESHOLD=100.01", "f.conf:2: invalid value for CPU_THRESHOLD"),
        ("NOTIFY_BUDGET=56", "f.conf:2: invalid value for NOTIFY_BUDGET"),
        ("ALERT_REPEAT_INTERVAL=31d", "f.conf:2: invalid value for ALERT_REPEAT_INTERVAL"),
        ("CONTAINER_WATCH=a,,b", "f.conf:2: invalid value for CONTAINER_WATCH"),
        ("CONTAINER_WATCH=a,", "f.conf:2: invalid value for CONTAINER_WATCH"),
        ("SLACK_CHANNEL=#alerts", "f.conf:2: invalid value for SLACK_CHANNEL"),
        ("export CPU_THRESHOLD=1", "f.conf:2: expected KEY=VALUE"),
    ],
)
def test_refusals_name_file_line_and_key(text: str, message: str) -> None:
    with pytest.raises(settings.SettingsError) as caught:
        settings.parse("# first\n" + text + "\n", "f.conf")
    assert str(caught.value) == message


def test_an_unreadable_value_is_never_echoed() -> None:
    with pytest.raises(settings.SettingsError) as caught:
        settings.parse("SLACK_CHANNEL=hooks.example/T0/secret\n", "f.conf")
    assert "secret" not in str(caught.value)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(RANGES)))
def test_ranges_are_inclusive(value: int, key: str) -> None:
    low, high = RANGES[key]
    if key == "ALERT_REPEAT_INTERVAL" or DEFAULTS[key].isdigit():
        assert settings.value_ok(key, str(value)) == (low <= value <= high)


@given(st.lists(st.tuples(st.integers(0, 99), st.sampled_from("smhdw")), min_size=1, max_size=4))
def test_duration_units_add_up(parts: list[tuple[int, str]]) -> None:
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = "".join(f"{n}{u}" for n, u in parts)
    assert settings.duration_seconds(text) == sum(n * unit[u] for n, u in parts)


def test_a_file_over_the_limit_is_refused_not_cut(tmp_path: Path) -> None:
    """settings.load read the first MiB: a cut last line CPU_THRESHOLD=95 became 9."""
    path = tmp_path / "hostguard.conf"
    head = "#" * ((1 << 20) - len("CPU_THRESHOLD=95\n")) + "\n"
    path.write_text(head + "CPU_THRESHOLD=95\n")
    assert path.stat().st_size == (1 << 20) + 1
    with pytest.raises(settings.SettingsError) as caught:
        settings.load(str(path))
    assert str(caught.value) == f"{path}:0: larger than the settings file's limit of 1048576 bytes: refused"
    assert caught.value.code == 1
    path.write_text(head[1:] + "CPU_THRESHOLD=95\n")
    assert settings.load(str(path)).cpu_threshold == "95"
