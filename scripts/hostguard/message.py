"""The text of a chat message and its body on the wire.

The SPEC's texts are built by the programs; here they become what is posted:
the host label (ALERT_HOST_LABEL), invalid UTF-8 repaired to U+FFFD, a text
over the chat service's 40,000 characters cut with a visible marker, and the
body `payload=<JSON>` form-encoded (json and urllib.parse: no hand-made
escaping).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .settings import Settings

TEXT_MAX = 40000
CUT_MARKER = "\n[... cut: the message was longer than 40,000 characters]"


def clean(text: str) -> str:
    """TEXT as valid Unicode (argv's undecodable bytes become U+FFFD), cut to TEXT_MAX."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - len(CUT_MARKER)] + CUT_MARKER
    return text


def labelled(text: str, label: bool, host_name: str) -> str:
    """TEXT as posted: `[HOST] TEXT` with ALERT_HOST_LABEL (HOST_NAME, else the kernel's name)."""
    if not label:
        return text
    if not host_name:
        import socket

        host_name = socket.gethostname() or "unknown"
    return f"[{host_name}] {text}"


def as_posted(settings: "Settings", text: str) -> str:
    """TEXT as it will be posted: cleaned, with the host label when ALERT_HOST_LABEL is on."""
    return labelled(clean(text), settings.alert_host_label, settings.host_name)


def payload(text: str, channel: "str | None") -> str:
    """The JSON object of one message: `{"text":...}` plus `"channel":"#x"` for the ban tool's start/stop."""
    import json

    body: dict[str, str] = {"text": text}
    if channel:
        body["channel"] = "#" + channel.lstrip("#")
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def form_body(payload_json: str) -> bytes:
    """The request body: the one form field `payload`, URL-encoded (SPEC, Endpoints)."""
    from urllib.parse import urlencode

    return urlencode({"payload": payload_json}).encode("ascii")
