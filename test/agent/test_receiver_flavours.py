"""formats.py's requests against the test receiver's flavours (test/helpers/receiver_flavours.py), over real
HTTPS on loopback: each service's checks accept what hostguard sends, record what the service would show, and
its answers (the misleading ones included) are sorted by answers.py into the right kinds.

The flavours stand in for the services at the HTTP level only: Teams' flow runs, Discord's hidden per-channel
limit and Google's real quotas are not theirs to show (docs/configuration.md, Alert destinations: one
manual smoke test each).
"""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from hostguard.format_table import FACTS
from hostguard.notify import answers, formats, message
from hostguard.notify.answers import CHANNEL, DELIVERED, MESSAGE, TRANSIENT, WEBHOOK, Answer
from hostguard.notify.chat import Reply
from hostguard.notify.message import BANTOOL, FIRING, NOTICE, RESOLVED, Identity, Message

HELPERS = Path(__file__).resolve().parents[2] / "test" / "helpers"
PATHS = {
    "mattermost": "/hooks/SENTINELsecret0123456789ab",
    "rocketchat": "/hooks/abc123/SENTINELsecret",
    "teams": "/powerautomate/automations/direct/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke"
    "?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=SENTINELsecret",
    "googlechat": "/v1/spaces/AAAA1234/messages?key=KEY0123&token=SENTINELsecret",
    "discord": "/api/webhooks/123456789012345678/SENTINELsecret",
    "pagerduty": "/v2/enqueue",
    "webhook": "/alertmanager/SENTINELsecret",
}
ROUTING_KEY = "SENTINELsecret0123456789abcdef01"
FIRE = Identity("web-1", "cpu", "over", 1767225600, FIRING)


class Receiver:
    def __init__(self, directory: Path, ca: Path, flavour: str) -> None:
        self.directory, self.flavour = directory, flavour
        directory.mkdir()
        self.messages, self.mode_file = directory / "messages.jsonl", directory / "mode"
        self.set_mode("ok")
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(HELPERS / "webhook-receiver.py"),
                *("--cert", str(ca / "server.pem"), "--key", str(ca / "server.key"), "--flavour", flavour),
                *("--messages", str(self.messages), "--requests", str(directory / "requests.jsonl")),
                *("--mode-file", str(self.mode_file), "--bind", "127.0.0.1", "--port", "0"),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.context = ssl.create_default_context(cafile=str(ca / "ca.pem"))
        self.url = f"https://127.0.0.1:{self.port}{PATHS[flavour]}"

    def set_mode(self, mode: str) -> None:
        temp = self.mode_file.with_suffix(".tmp")
        temp.write_text(mode + "\n")
        temp.replace(self.mode_file)

    def records(self) -> list[dict[str, object]]:
        if not self.messages.exists():
            return []
        return [json.loads(line) for line in self.messages.read_text(encoding="utf-8").splitlines()]

    def send(self, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(url)
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10, context=self.context)
        try:
            connection.request("POST", parts.path + ("?" + parts.query if parts.query else ""), body, dict(headers))
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def post(self, message: Message) -> Answer:
        """MESSAGE as formats.py builds it for this flavour, sent, and its answer classified."""
        req = formats.request(self.flavour, self.url, ROUTING_KEY, message)
        return answers.classify(
            self.flavour, reply(*self.send(req.url, req.headers, req.body)), message.channel is not None
        )

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ca")
    subprocess.run(["bash", str(HELPERS / "test-ca.sh"), str(directory)], check=True, timeout=60)
    return directory


@pytest.fixture
def start(tmp_path: Path, ca: Path) -> Iterator[object]:
    started: list[Receiver] = []

    def run(flavour: str) -> Receiver:
        receiver = Receiver(tmp_path / f"receiver-{flavour}", ca, flavour)
        started.append(receiver)
        return receiver

    yield run
    for receiver in started:
        receiver.stop()


def reply(status: int, headers: dict[str, str], body: bytes) -> Reply:
    """The answer as chat.exchange gives it: its Retry-After (any case) and its body decoded."""
    retry_after = next((value for name, value in headers.items() if name.lower() == "retry-after"), None)
    return Reply(status, retry_after, body.decode("utf-8", "replace"))


def msg(text: str, ident: Identity = FIRE, channel: str | None = None) -> Message:
    return Message(text, channel, ident, ident.episode + 600)


@pytest.mark.parametrize("flavour", list(PATHS))
def test_an_alert_its_repeat_resolution_and_a_notice_arrive_once_each(start: object, flavour: str) -> None:
    receiver = start(flavour)  # type: ignore[operator]
    sequence = [msg("[web-1] CPU 93%"), msg("[web-1] CPU 95%"), msg("[web-1] resolved", FIRE._replace(state=RESOLVED))]
    sequence.append(msg("[web-1] banned 192.0.2.7", Identity("web-1", BANTOOL, "ban", 0, NOTICE), "alerts"))
    sent = [m for m in sequence if message.sends(flavour, m.identity)]
    assert [receiver.post(m).kind for m in sent] == [DELIVERED] * len(sent)
    records = receiver.records()
    assert len(records) == len(sent) and all(r["flavour"] == flavour for r in records)
    if flavour == "pagerduty":
        assert [r["incident"] for r in records] == ["opened", "deduplicated", "resolved"]
        assert len({r["dedup_key"] for r in records}) == 1
        assert "SENTINEL" not in (receiver.directory / "requests.jsonl").read_text()
    else:
        assert [r["text"] for r in records] == [m.text for m in sent]
    if flavour == "googlechat":
        threads = [r["thread"] for r in records]
        assert threads[0] == threads[1] == threads[2] != threads[3]
        receiver.post(msg("[web-1] CPU 99%", FIRE._replace(episode=FIRE.episode + 7200)))
        assert receiver.records()[-1]["thread"] not in threads, "a new episode, a new thread"


@pytest.mark.parametrize(
    ("flavour", "mode", "kind", "wait"),
    [
        ("mattermost", "refused", WEBHOOK, None),
        ("mattermost", "disabled", WEBHOOK, None),
        ("rocketchat", "refused", WEBHOOK, None),
        ("rocketchat", "disabled", TRANSIENT, None),
        ("rocketchat", "ratelimit 30", TRANSIENT, 60.0),
        ("teams", "refused", WEBHOOK, None),
        ("teams", "disabled", WEBHOOK, None),
        ("teams", "ratelimit 30", TRANSIENT, 30.0),
        ("googlechat", "refused", WEBHOOK, None),
        ("googlechat", "disabled", WEBHOOK, None),
        ("googlechat", "ratelimit 30", TRANSIENT, 5.0),
        ("discord", "refused", WEBHOOK, None),
        ("discord", "disabled", WEBHOOK, None),
        ("discord", "ratelimit 30", TRANSIENT, 30.0),
        ("pagerduty", "refused", WEBHOOK, None),
        ("pagerduty", "ratelimit 30", TRANSIENT, 30.0),
        ("webhook", "refused", WEBHOOK, None),
        ("webhook", "disabled", WEBHOOK, None),
        ("webhook", "ratelimit 30", TRANSIENT, 30.0),
        ("mattermost", "status500", TRANSIENT, None),
    ],
)
def test_the_services_refusals_and_limits_get_their_kinds(
    start: object, flavour: str, mode: str, kind: str, wait: float | None
) -> None:
    receiver = start(flavour)  # type: ignore[operator]
    receiver.set_mode(mode)
    answer = receiver.post(msg("[web-1] CPU 93%"))
    assert (answer.kind, answer.retry_after) == (kind, wait), answer.reason
    assert receiver.records() == []


@pytest.mark.parametrize(("flavour", "status"), [("mattermost", 403), ("rocketchat", 400)])
def test_a_locked_channel_is_retried_without_it(start: object, flavour: str, status: int) -> None:
    receiver = start(flavour)  # type: ignore[operator]
    receiver.set_mode("locked")
    started = Identity("web-1", BANTOOL, "start", 0, NOTICE)
    answer = receiver.post(msg("[web-1] hostguard started", started, "alerts"))
    assert (answer.kind, answer.status) == (CHANNEL, status)
    assert receiver.post(msg("[web-1] hostguard started", started)).kind == DELIVERED


def test_the_misleading_answers(start: object) -> None:
    teams = start("teams")  # type: ignore[operator]
    teams.set_mode("runfailed")
    assert teams.post(msg("x")).kind == DELIVERED and teams.records() == [], "Teams' 202 is only the trigger's receipt"
    teams.set_mode("ok")
    form = formats.request("slack", teams.url, "", msg("x"))
    status, headers, body = teams.send(form.url, form.headers, form.body)
    assert answers.classify("teams", reply(status, headers, body), False).kind == MESSAGE and status == 400
    discord = start("discord")  # type: ignore[operator]
    req = formats.request("discord", discord.url, "", msg("no wait"))
    status, _headers, body = discord.send(req.url.replace("wait=true", "wait=false"), req.headers, req.body)
    assert (status, body) == (204, b""), "without wait Discord says nothing"
    status, _headers, body = discord.send(req.url, {"Content-Type": "application/json"}, b'{"text":"slack body"}')
    assert status == 400 and json.loads(body)["code"] == 50006
    discord.set_mode("refused")
    assert discord.post(msg("x")).kind == WEBHOOK
    assert formats.FORMATS["discord"].never_probe
    google = start("googlechat")  # type: ignore[operator]
    req = formats.request("googlechat", google.url, "", msg("x"))
    status, _headers, body = google.send(
        req.url.replace("&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD", ""), req.headers, req.body
    )
    assert status == 400, "a threadKey without messageReplyOption would not thread"


@pytest.mark.parametrize("flavour", ["mattermost", "teams", "googlechat", "discord", "pagerduty"])
def test_a_text_over_the_limit_is_cut_so_the_service_takes_it(start: object, flavour: str) -> None:
    receiver = start(flavour)  # type: ignore[operator]
    text = "\u00e9\U0001f600" * FACTS[flavour][1]
    assert receiver.post(msg(text)).kind == DELIVERED
    (record,) = receiver.records()
    assert "[... cut: the message was longer than" in str(record["text"])
