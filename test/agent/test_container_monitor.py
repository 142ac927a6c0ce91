"""The container monitor's units (hostguard/monitor/container_monitor.py, runtime.py): decoding the runtime's
answers, bounded runtime calls, and runs in-process against test/helpers/fake-docker.

The black-box runs against the real HTTPS receiver are test/payload/container-monitor.bats.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Posts
from hostguard import settings
from hostguard.monitor import alert_state, container_monitor
from hostguard.monitor.runtime import (
    KILL_AFTER,
    OUTPUT_MAX,
    Answer,
    Container,
    RuntimeFailed,
    call,
    json_string,
    quoted,
)
from hostguard.notify import formats
from hostguard.notify.message import Message

P = "[Container Alert] \n"
HOSTILE = [
    "plain",
    'q"uo\\te/d',
    "nl\nt\tr\rb\bf\f",
    "\u2028\u2029 <&>",
    "ünï 名前 🐳",
    "\x01\x1f\x7f",
    "\\u0041 literal",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_json_strings_decode_as_a_json_encoder_wrote_them(text: str) -> None:
    for encoded in (json.dumps(text), json.dumps(text, ensure_ascii=False)):
        assert json_string(encoded, 0) == (text, len(encoded))


def test_nul_and_lone_surrogates_become_replacement_characters() -> None:
    literal = r'"\/ \ud83d\udc33 \u00e9 \u0000 \uD83D\uDE00 \ud800"'
    assert json_string(literal, 0)[0] == "/ 🐳 é \ufffd 😀 \ufffd"


@pytest.mark.parametrize("bad", ['"open', '"raw\ttab"', '"bad \\x escape"', "42", "null", '["a"]', ""])
def test_malformed_strings_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        json_string(bad, 0)


@given(st.text())
def test_any_text_round_trips_through_the_log_form(text: str) -> None:
    shown = quoted(text)
    assert "\n" not in shown and "\x7f" not in shown
    decoded = json_string(shown, 0)[0]
    assert decoded == "".join("\ufffd" if c == "\0" or 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def check() -> container_monitor.Check:
    loaded = settings.parse("", "test.conf")
    return container_monitor.Check(loaded, alert_state.Run("container-monitor", "", "/nonexistent", loaded))


ID = "a" * 64


def ps_line(**fields: object) -> str:
    return json.dumps({"ID": ID, "State": "running", "Names": "web", **fields})


def inspect_line(**fields: object) -> str:
    return json.dumps({"ID": ID, "Name": "/web", "Status": "exited", "ExitCode": 3, "Error": "", **fields})


def test_list_lines_and_inspect_entries_with_hostile_names() -> None:
    found = check()
    name = 'we"b \\ $(x) `id`\t,legacy'
    found.list_line(ps_line(Names=name))
    assert found.list_ids == [ID] and found.list_state[ID] == "running"
    assert found.name_id == {name: ID, 'we"b \\ $(x) `id`\t': ID, "legacy": ID}
    error = 'OOM "x" \\ y \u0000'
    assert found.inspected(inspect_line(ExitCode=-1, Error=error, Name="/" + name))
    assert found.info[ID] == Container("exited", "-1", name, 'OOM "x" \\ y \ufffd')
    # podman: the name without a leading /; .Names as a list (its {{json .}} form) is read too.
    assert found.inspected(inspect_line(Name="db")) and found.info[ID].name == "db"
    found.list_line(ps_line(ID="b" * 64, Names=["db", "legacy2"]))
    assert found.name_id["db,legacy2"] == found.name_id["legacy2"] == "b" * 64


@pytest.mark.parametrize(
    "line",
    [
        ps_line(ID=ID[:11]),
        ps_line(State=None),
        ps_line(Names=[1]),
        ps_line(Names=[]),
        json.dumps([json.loads(ps_line())]),
        ps_line()[:-1],
        f'{ID}\t"running"\t"a"',
    ],
)
def test_unparsable_list_lines_are_skipped(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = check()
    found.list_line(line)
    assert found.list_ids == []
    assert "unparsable list line" in capsys.readouterr().err


@pytest.mark.parametrize(
    "line",
    [
        inspect_line(ExitCode="0"),
        inspect_line(ExitCode=True),
        inspect_line(Status=None),
        inspect_line(ID="web"),
        json.dumps({"Id": ID, "Name": "/web", "State": {"Status": "exited", "ExitCode": 3, "Error": ""}}),
        json.dumps(ID),
    ],
)
def test_unparsable_inspect_lines_are_skipped(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = check()
    assert not found.inspected(line)
    assert found.info == {}
    assert "unparsable inspect line" in capsys.readouterr().err


SECRET = "POSTGRES_PASSWORD=hunter2-SECRET"


@pytest.mark.parametrize(
    ("what", "line", "field"),
    [
        ("inspect line", inspect_line(ExitCode="1", Error=SECRET, Config={"Env": [SECRET]}), "ExitCode"),
        ("inspect line", inspect_line(Status={"Env": [SECRET]}), "Status"),
        ("list line", ps_line(State=None, Names=SECRET), "State"),
        ("list line", ps_line(Names={"Env": [SECRET]}), "Names"),
    ],
)
def test_an_unparsable_line_logs_its_id_and_field_never_its_text(
    what: str, line: str, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever the container's owner put in its line (environment, labels, names) stays out of the log."""
    found = check()
    (found.inspected if what == "inspect line" else found.list_line)(line)
    err = capsys.readouterr().err
    assert f"unparsable {what} (container {ID}): {field}: " in err
    assert "hunter2" not in err and len(err) < 200


def runtime_settings(root: Path, runtime: str, timeout: int = 60, *more: str) -> settings.Settings:
    return settings.parse(f"CONTAINER_RUNTIME={runtime}\nCONTAINER_RUNTIME_TIMEOUT={timeout}\n" + "".join(more), "t")


def test_a_hung_runtime_and_its_children_end_at_the_timeout(tmp_path: Path) -> None:
    runtime = tmp_path / "hung"
    runtime.write_text(f"#!/bin/sh\nsleep 60 &\necho $! >{tmp_path}/child\nexec sleep 60\n")
    runtime.chmod(0o755)
    start = time.monotonic()
    with pytest.raises(RuntimeFailed, match=r"^runtime unavailable: .*/hung ps did not answer within 1 s$"):
        call(runtime_settings(tmp_path, str(runtime), 1), "ps")
    # The timeout, then SIGTERM to its process group: well before the kill's 4 s.
    assert time.monotonic() - start < 4
    child = int((tmp_path / "child").read_text())
    for _ in range(50):
        if not os.path.exists(f"/proc/{child}") or " Z" in Path(f"/proc/{child}/stat").read_text().split(")")[1][:2]:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the runtime's child outlived the call")


def test_a_runtime_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    runtime = tmp_path / "stubborn"
    runtime.write_text("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.1; done\n")
    runtime.chmod(0o755)
    start = time.monotonic()
    with pytest.raises(RuntimeFailed):
        call(runtime_settings(tmp_path, str(runtime), 1), "stats")
    # CONTAINER_RUNTIME_TIMEOUT, then at most KILL_AFTER and one second: what stuck_after counts.
    assert time.monotonic() - start < 1 + KILL_AFTER + 1.5


def test_stdout_and_stderr_together_over_the_bound_fail_the_call_at_once(tmp_path: Path) -> None:
    half = OUTPUT_MAX // 2
    runtime = tmp_path / "floods"
    runtime.write_text(f"#!/bin/sh\nhead -c {half} /dev/zero\nhead -c {half + 1} /dev/zero >&2\nexec sleep 60\n")
    runtime.chmod(0o755)
    start = time.monotonic()
    with pytest.raises(RuntimeFailed, match=r"^runtime unavailable: .*/floods ps printed over 4 MiB, the most read"):
        call(runtime_settings(tmp_path, str(runtime), 10), "ps")
    # Not read to its end nor waited for until the timeout: ended as a hung one is.
    assert time.monotonic() - start < 4


def test_an_answer_within_the_bound_is_read_whole(tmp_path: Path) -> None:
    runtime = tmp_path / "big"
    size = OUTPUT_MAX - 10
    runtime.write_text(f"#!/bin/sh\nhead -c {size} /dev/zero | tr '\\0' x\necho oops >&2\nexit 3\n")
    runtime.chmod(0o755)
    answer = call(runtime_settings(tmp_path, str(runtime), 30), "ps")
    assert answer == Answer(3, "x" * size, "oops\n")


def test_a_missing_runtime(tmp_path: Path) -> None:
    with pytest.raises(RuntimeFailed, match="^the runtime /nonexistent/docker is not found$"):
        call(runtime_settings(tmp_path, "/nonexistent/docker"), "ps")
    answer = call(runtime_settings(tmp_path, "false"), "ps")
    assert answer == Answer(1, "", "")


# ---- runs in-process against the fake runtime ----------------------------------


def containers(state: Path, *entries: tuple[str, str, str, str]) -> None:
    found = [
        {"name": n, "state": s, "cpu": c, "mem": m, "exit_code": 3 if s != "running" else 0} for n, s, c, m in entries
    ]
    state.write_text(json.dumps({"containers": found}))


def calls(root: Path) -> list[str]:
    path = root / "calls.jsonl"
    done = [json.loads(line)[0] for line in path.read_text().splitlines()] if path.exists() else []
    path.unlink(missing_ok=True)
    return done


def test_a_run_stops_watches_and_measures(
    root: Path, docker: Path, posts: Posts, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "etc/hostguard/hostguard.conf").write_text("CONTAINER_WATCH=ghost\n")
    containers(docker, ("web", "running", "1.00%", "1.00%"), ("hot", "running", "80.01%", "90.00%"))
    assert container_monitor.main([]) == 0
    assert calls(root) == ["ps", "inspect", "stats"]
    gone = "Exit Code: unknown\nError: No such container"
    assert posts.take() == [
        f"{P}Container stopped: ghost (Status: not found)\n{gone}",
        f"{P}High CPU usage detected: hot - 80.01%",
    ]
    containers(docker, ("web", "exited", "0.00%", "0.00%"))
    assert container_monitor.main([]) == 0
    assert posts.take() == [
        f"{P}Container stopped: web (Status: exited)\nExit Code: 3\nError: No specific error",
        f"{P}Container stopped: hot (Status: removed)\n{gone}",
        f"{P}Container stopped: ghost (Status: not found)\n{gone}",
    ]
    assert calls(root) == ["ps", "inspect"]
    out = capsys.readouterr().out
    assert "containers=1 running=0 previously_running=2 alerts=3" in out
    assert (root / "var/lib/hostguard/containers.running").read_text() == ""


def test_a_failing_runtime_alerts_once_and_keeps_the_list(
    root: Path, docker: Path, posts: Posts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    containers(docker, ("web", "running", "1.00%", "1.00%"))
    assert container_monitor.main([]) == 0
    before = (root / "var/lib/hostguard/containers.running").read_text()
    monkeypatch.setenv("FAKE_DOCKER_FAIL", "inspect")
    assert [container_monitor.main([]) for _ in range(2)] == [1, 1]
    assert posts.take() == [
        f"{P}Container check failed: runtime unavailable: docker inspect failed (exit 1);"
        " containers are not checked until it works again"
    ]
    assert "Cannot connect to the Docker daemon" in capsys.readouterr().err
    assert (root / "var/lib/hostguard/containers.running").read_text() == before
    monkeypatch.delenv("FAKE_DOCKER_FAIL")
    (root / "etc/hostguard/hostguard.conf").write_text("ALERT_SEND_RESOLVED=true\n")
    assert container_monitor.main([]) == 0
    assert posts.take() == [f"{P}Container check works again: docker answers"]


def test_old_state_files_only_forget(root: Path, docker: Path, posts: Posts) -> None:
    state_dir = root / "var/lib/hostguard"
    state_dir.mkdir(parents=True)
    (state_dir / "containers.running").write_bytes(b"garbage\n\xff\xfe\n" + f"{ID}\tnot-json\n".encode())
    (state_dir / "container-monitor.alerts").write_bytes(b"1\t0\t1\tstopped not-json\n\x00\n")
    containers(docker, ("web", "running", "1.00%", "1.00%"))
    assert container_monitor.main([]) == 0
    assert posts.take() == []
    assert not (state_dir / "container-monitor.alerts").exists()


def test_a_containers_own_error_text_reaches_slack_escaped(root: Path, docker: Path, posts: Posts) -> None:
    """Issue 43 item 9: the image's .State.Error is its author's text; in Slack's body it is inert."""
    error = "<!channel> boom <https://evil.example|runbook> & @here"
    found = [{"name": "web", "state": "exited", "cpu": "0%", "mem": "0%", "exit_code": 1, "error": error}]
    docker.write_text(json.dumps({"containers": found}))
    (root / "etc/hostguard/hostguard.conf").write_text("CONTAINER_WATCH=web\n")
    assert container_monitor.main([]) == 0
    (text,) = posts.take()
    assert text == f"{P}Container stopped: web (Status: exited)\nExit Code: 1\nError: {error}"
    message = Message(text, None, posts.identities[-1], 1000)
    body = formats.request("slack", "https://hooks.slack.com/services/T/B/x", "", message).body
    shown = json.loads(parse_qs(body.decode("ascii"))["payload"][0])["text"]
    assert "<!channel>" not in shown and "<https://" not in shown
    assert "&lt;!channel&gt; boom &lt;https://evil.example|runbook&gt; &amp; @here" in shown


@pytest.mark.parametrize(
    ("verb", "ps", "inspect"),
    [
        ("inspect", ps_line(), '[{"Id": 1}]'),
        ("ps", '[\n     {\n          "Id": "' + ID + '",\n          "Names": ["web"]\n     }\n]', ""),
    ],
)
def test_lines_printed_and_none_readable_conclude_nothing(
    root: Path, tmp_path: Path, posts: Posts, capsys: pytest.CaptureFixture[str], verb: str, ps: str, inspect: str
) -> None:
    """A runtime answering in another form (podman's array for {{json .}}) fails the check, never 'no containers'."""
    runtime = tmp_path / "odd"
    runtime.write_text(f"#!/bin/sh\ncase $1 in ps) echo '{ps}';; inspect) echo '{inspect}';; esac\n")
    runtime.chmod(0o755)
    (root / "etc/hostguard").mkdir(parents=True)
    (root / "etc/hostguard/hostguard.conf").write_text(f"CONTAINER_RUNTIME={runtime}\nCONTAINER_WATCH=web\n")
    assert container_monitor.main([]) == 1
    count = len((ps if verb == "ps" else inspect).splitlines())
    why = f"runtime unavailable: {runtime} {verb} printed {count} lines, none readable"
    assert posts.take() == [f"{P}Container check failed: {why}; containers are not checked until it works again"]
    assert f"{why}; nothing checked, previous state kept" in capsys.readouterr().err


def test_podman_is_read_as_docker_is(
    root: Path, docker: Path, posts: Posts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """fake-docker as podman: `{{json .}}` would be one array (not read); the named fields are read alike."""
    monkeypatch.setenv("FAKE_DOCKER_FLAVOR", "podman")
    (root / "etc/hostguard/hostguard.conf").write_text("CONTAINER_WATCH=db\n")
    containers(docker, ("web", "running", "1.00%", "1.00%"), ("hot", "running", "80.01%", "90.00%"))
    assert container_monitor.main([]) == 0
    assert posts.take() == [
        f"{P}Container stopped: db (Status: not found)\nExit Code: unknown\nError: No such container",
        f"{P}High CPU usage detected: hot - 80.01%",
    ]
    assert "containers=2 running=2 previously_running=0 alerts=2" in capsys.readouterr().out
    containers(
        docker, ("web", "exited", "0.00%", "0.00%"), ("hot", "running", "1.00%", "1.00%"), ("db", "dead", "", "")
    )
    assert container_monitor.main([]) == 0
    assert posts.take() == [
        f"{P}Container stopped: web (Status: exited)\nExit Code: 3\nError: No specific error",
        f"{P}Container stopped: db (Status: dead)\nExit Code: 3\nError: No specific error",
    ]
    assert calls(root) == ["ps", "inspect", "stats", "ps", "inspect", "stats"]


@pytest.mark.parametrize("flavor", ["docker", "podman"])
def test_a_container_removed_since_the_list_is_gone_not_a_failure(
    docker: Path, monkeypatch: pytest.MonkeyPatch, flavor: str
) -> None:
    """inspect of a known and a removed ID: each runtime's 'no such object' lines mean gone."""
    monkeypatch.setenv("FAKE_DOCKER_FLAVOR", flavor)
    containers(docker, ("web", "exited", "0.00%", "0.00%"))
    found = check()
    found.list_containers()
    found.inspect([*found.list_ids, "f" * 64, "e" * 64])
    assert [c.name for c in found.info.values()] == ["web"]


def test_docker_is_not_asked_for_every_containers_size(
    root: Path, docker: Path, posts: Posts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docker computes each container's size for a ps whose template reads .Size ({{json .}} does):
    fake-docker then sleeps past CONTAINER_RUNTIME_TIMEOUT, as a daemon with big layers takes 30+ s."""
    (root / "etc/hostguard/hostguard.conf").write_text("CONTAINER_RUNTIME_TIMEOUT=2\n")
    monkeypatch.setenv("FAKE_DOCKER_SIZE_SLEEP", "30")
    containers(docker, ("web", "running", "1.00%", "1.00%"))
    started = time.monotonic()
    assert container_monitor.main([]) == 0
    assert time.monotonic() - started < 2
    assert posts.take() == []


def test_one_images_huge_label_or_environment_does_not_stop_the_checks(
    root: Path, docker: Path, posts: Posts, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect prints only the fields read: a 5 MiB label (anyone's image) and 5 MiB of environment
    stay in the daemon, not over the 4 MiB bound of a call, for every container of the host."""
    huge = "x" * (5 << 20)
    found = [
        {"name": "big", "state": "exited", "exit_code": 2, "labels": {"blob": huge}, "env": [f"{SECRET}{huge}"]},
        {"name": "web", "state": "running"},
    ]
    docker.write_text(json.dumps({"containers": found}))
    (root / "etc/hostguard/hostguard.conf").write_text("CONTAINER_WATCH=big\n")
    assert container_monitor.main([]) == 0
    assert posts.take() == [f"{P}Container stopped: big (Status: exited)\nExit Code: 2\nError: No specific error"]
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out + captured.err
