"""The monitors' figures (monitor/host_monitor.py) against the tools the SPEC names and exact reference formulas."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard.monitor import alert_state, host_monitor

# uptime -p of procps-ng 4.0.2 for each /proc/uptime, recorded with the real
# tool (`mount --bind` of the fixture over /proc/uptime in a private mount
# namespace); test_uptime_matches_the_tool re-checks them where it can.
UPTIME_P = [
    ("0.00", "up 0 minutes"),
    ("0.50", "up 0 minutes"),
    ("59.99", "up 0 minutes"),
    ("60.00", "up "),
    ("60.01", "up 1 minute"),
    ("61.00", "up 1 minute"),
    ("3599.00", "up 59 minutes"),
    ("3600.00", "up 60 minutes"),
    ("3600.01", "up 1 hour, 0 minutes"),
    ("3661.00", "up 1 hour, 1 minute"),
    ("86399.00", "up 23 hours, 59 minutes"),
    ("86400.00", "up 24 hours, 0 minutes"),
    ("86400.50", "up 1 day, 0 minutes"),
    ("90061.00", "up 1 day, 1 hour, 1 minute"),
    ("604800.00", "up 7 days, 0 minutes"),
    ("604801.00", "up 1 week, 0 minutes"),
    ("694861.00", "up 1 week, 1 day, 1 hour, 1 minute"),
    ("1234567.89", "up 2 weeks, 6 hours, 56 minutes"),
    ("31449600.00", "up 52 weeks, 0 minutes"),
    ("31536000.00", "up 52 weeks, 24 hours, 0 minutes"),
    ("31536001.00", "up 1 year, 0 minutes"),
    ("31622400.50", "up 1 year, 1 day, 0 minutes"),
    ("315360000.00", "up 10 years, 0 minutes"),
    ("315360001.00", "up 1 decade, 0 minutes"),
    ("400000000.00", "up 1 decade, 2 years, 35 weeks, 4 days, 15 hours, 6 minutes"),
    ("999999999.99", "up 3 decades, 1 year, 37 weeks, 1 hour, 46 minutes"),
]

# free -m's used/total x 100 (awk "%.2f") for (MemTotal, MemFree, MemAvailable) kB.
FREE_M = [
    ((24684084, 21849076, 24126356), "2.26"),
    ((2098175, 1000, 1049599), "50.00"),
    ((1048576, 0, 0), "100.00"),
    ((1049599, 500000, 2000000), "52.34"),
    ((16383999, 1023, 1023), "100.00"),
    ((8000000, 100, 7999999), "0.00"),
    ((2097152, 100000, 190000), "90.92"),
    ((4194303, 4000000, 0), "4.62"),
    ((65536000, 5, 6), "100.00"),
]


def meminfo(total: int, free: int, avail: int) -> str:
    return f"MemTotal: {total} kB\nMemFree: {free} kB\nMemAvailable: {avail} kB\nBuffers: 7 kB\nCached: 9 kB\n"


def in_private_mount(fixture: Path, target: str, command: str) -> str:
    """COMMAND's output with FIXTURE bound over TARGET in a private mount namespace (root only)."""
    script = 'mount --bind "$1" "$2" && exec sh -c "$3"'
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "_", str(fixture), target, command]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout


can_mount = os.geteuid() == 0 and shutil.which("unshare") is not None


@pytest.mark.parametrize(("seconds", "expected"), UPTIME_P)
def test_uptime_pretty_is_uptime_p(seconds: str, expected: str) -> None:
    assert host_monitor.uptime_pretty(f"{seconds} 1.00\n") == expected


@pytest.mark.skipif(not can_mount or shutil.which("uptime") is None, reason="needs root, unshare and uptime")
def test_uptime_matches_the_tool(tmp_path: Path) -> None:
    fixture = tmp_path / "uptime"
    for seconds, _ in UPTIME_P[::5]:
        fixture.write_text(f"{seconds} 1.00\n")
        assert (
            host_monitor.uptime_pretty(fixture.read_text())
            == in_private_mount(fixture, "/proc/uptime", "uptime -p").strip()
        )


@pytest.mark.parametrize(("values", "expected"), FREE_M)
def test_memory_is_free_m(values: tuple[int, int, int], expected: str) -> None:
    assert host_monitor.mem_percent(meminfo(*values)) == expected


@pytest.mark.skipif(not can_mount or shutil.which("free") is None, reason="needs root, unshare and free")
def test_memory_matches_the_tool(tmp_path: Path) -> None:
    fixture = tmp_path / "meminfo"
    for values, _ in FREE_M:
        fixture.write_text(meminfo(*values))
        out = in_private_mount(fixture, "/proc/meminfo", "free -m")
        fields = next(line for line in out.splitlines() if line.startswith("Mem:")).split()
        # The tool's own figures, in exact hundredths, half up (what "%.2f" shows on a non-tie).
        reference = math.floor(Fraction(int(fields[2]) * 10000, int(fields[1])) + Fraction(1, 2))
        assert host_monitor.mem_percent(fixture.read_text()) == f"{reference // 100}.{reference % 100:02d}"


def test_memory_edge_cases() -> None:
    # No MemAvailable (old kernels, some containers): MemFree.
    assert host_monitor.mem_percent("MemTotal: 2097152 kB\nMemFree: 1048576 kB\n") == "50.00"
    assert host_monitor.mem_percent("MemFree: 5 kB\n") is None
    assert host_monitor.mem_percent("") is None
    assert host_monitor.mem_percent("MemTotal: 1023 kB\nMemFree: 0 kB\n") is None


@given(
    total=st.integers(1024, 10**13),
    free=st.integers(0, 10**13),
    avail=st.integers(0, 10**13),
)
def test_memory_against_the_formula(total: int, free: int, avail: int) -> None:
    used_avail = avail if 0 < avail <= total else free
    used_m = max(total - used_avail, 0) // 1024
    total_m = total // 1024
    hundredths = math.floor(Fraction(used_m * 10000, total_m) + Fraction(1, 2))
    assert host_monitor.mem_percent(meminfo(total, free, avail)) == f"{hundredths // 100}.{hundredths % 100:02d}"


def test_cpu_sample_and_percent() -> None:
    stat = "cpu  1534 50 700 16966 500 100 100 50 300 0\ncpu0 1534 50 700 16966 500 100 100 50 300 0\n"
    assert host_monitor.cpu_sample(stat) == (2234, 20000)
    assert host_monitor.cpu_percent((1000, 10000), (2234, 20000)) == "12.3"
    assert host_monitor.cpu_percent((0, 0), (1, 3)) == "33.3"
    assert host_monitor.cpu_percent((0, 0), (2, 3)) == "66.7"
    assert host_monitor.cpu_percent((0, 0), (5, 5)) == "100.0"
    assert host_monitor.cpu_percent((0, 0), (0, 7)) == "0.0"
    # No time passed, or a reboot reset the counters: no figure.
    assert host_monitor.cpu_percent((5, 10), (5, 10)) is None
    assert host_monitor.cpu_percent((500, 1000), (5, 10)) is None


def test_cpu_sample_refuses_what_the_kernel_never_writes() -> None:
    # steal is optional (old kernels), the fields before it are not.
    assert host_monitor.cpu_sample("cpu 1 2 3 4 5 6 7\n") == (4, 28)
    assert host_monitor.cpu_sample("cpu 1 2 3 4 5 6\n") is None
    assert host_monitor.cpu_sample("cpu0 1 2 3 4 5 6 7 8\n") is None
    assert host_monitor.cpu_sample("cpu 1 2 x 4 5 6 7 8\n") is None
    assert host_monitor.cpu_sample("cpu 1 2 3 4 5 6 7 1234567890123456789\n") is None
    assert host_monitor.cpu_sample("") is None
    assert host_monitor.parse_sample("12 34") == (12, 34)
    for saved in ("12", "12 34 56", "-1 3", "a b", ""):
        assert host_monitor.parse_sample(saved) is None


@given(st.integers(0, 10**15), st.integers(0, 10**15), st.integers(0, 10**15), st.integers(0, 10**15))
def test_cpu_percent_against_the_formula(busy0: int, total0: int, busy1: int, total1: int) -> None:
    busy, total = busy1 - busy0, total1 - total0
    got = host_monitor.cpu_percent((busy0, total0), (busy1, total1))
    if total <= 0 or busy < 0 or busy > total:
        assert got is None
        return
    tenths = math.floor(Fraction(busy * 1000, total) + Fraction(1, 2))
    assert got == f"{tenths // 10}.{tenths % 10}"


def test_load_average_is_uptimes() -> None:
    assert host_monitor.load_average("0.52 0.58 0.59 1/123 4567\n") == "0.52, 0.58, 0.59"
    assert host_monitor.load_average("12.00 0.58\n") is None
    assert host_monitor.load_average("1.5 0.58 0.59 1/1 1\n") is None


@pytest.mark.skipif(shutil.which("uptime") is None, reason="needs uptime")
def test_load_average_matches_the_tool_on_this_machine() -> None:
    for _ in range(3):
        real = subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
        mine = host_monitor.load_average(Path("/proc/loadavg").read_text())
        if real.endswith("load average: " + str(mine)):
            return
    raise AssertionError(f"{mine} not in {real}")


def test_process_count_is_ps_aux_lines(tmp_path: Path) -> None:
    for name in ("1", "2", "42", "self", "sys", ".9"):
        (tmp_path / name).mkdir()
    assert host_monitor.process_count(str(tmp_path)) == 4
    assert host_monitor.process_count(str(tmp_path / "sys")) is None
    assert host_monitor.process_count(str(tmp_path / "missing")) is None


@pytest.mark.skipif(shutil.which("ps") is None, reason="needs ps")
def test_process_count_near_ps_on_this_machine() -> None:
    real = len(subprocess.run(["ps", "aux"], capture_output=True, text=True, check=True).stdout.splitlines())
    mine = host_monitor.process_count("/proc")
    assert mine is not None and abs(mine - real) <= 10


def test_disk_percent_is_dfs() -> None:
    assert host_monitor.disk_percent(100, 50, 40) == 56  # 50 / 90, rounded up
    assert host_monitor.disk_percent(100, 100, 100) == 0
    assert host_monitor.disk_percent(100, 0, 0) == 100
    assert host_monitor.disk_percent(0, 0, 0) is None


@pytest.mark.skipif(shutil.which("df") is None, reason="needs df")
def test_disk_percent_matches_df_on_this_machine() -> None:
    for _ in range(3):
        info = os.statvfs("/")
        out = subprocess.run(["df", "--output=pcent", "/"], capture_output=True, text=True, check=True).stdout
        if host_monitor.disk_percent(info.f_blocks, info.f_bfree, info.f_bavail) == int(out.split()[-1].rstrip("%")):
            return
    raise AssertionError(out)


@given(st.integers(0, 10**15), st.integers(0, 10**15), st.integers(0, 10**15))
def test_disk_percent_against_the_formula(blocks: int, bfree: int, bavail: int) -> None:
    used = blocks - bfree
    got = host_monitor.disk_percent(blocks, bfree, bavail)
    if used < 0 or used + bavail <= 0:
        assert got is None
    else:
        assert got == math.ceil(Fraction(used * 100, used + bavail))


def test_decimal_comparison_is_exact() -> None:
    assert alert_state.decimal_gt("80.001", "80")
    assert not alert_state.decimal_gt("80.000", "80")
    assert not alert_state.decimal_gt("80", "80")
    assert alert_state.decimal_gt("100.5", "100")
    assert not alert_state.decimal_gt("79.99", "80")
    assert alert_state.decimal_gt("90.92", "90.9")
    assert not alert_state.decimal_gt("012.30", "12.3")
    for bad in ("", "1e3", "-1", ".5", "5.", "1,5", "١٢"):
        with pytest.raises(ValueError):
            alert_state.decimal_gt(bad, "80")


decimals = st.from_regex(re.compile(r"[0-9]{1,15}(\.[0-9]{1,20})?"), fullmatch=True)


@given(decimals, decimals)
def test_decimal_comparison_against_fractions(value: str, threshold: str) -> None:
    assert alert_state.decimal_gt(value, threshold) == (Fraction(value) > Fraction(threshold))
