"""The step State Manager runs on each instance of a fleet (hostguard:delivery ssm), as root:
`python3 -I - BUCKET BUNDLES PARAMETER VERSION` (components/ssmDocument.ts carries this text).

Each part whose sha256 differs from the one last applied (FLEET_APPLIED) is fetched from the
stack's bucket (IMDSv2 credentials, SigV4) and checked against the sha256 in its key, then
installed in order (base, the webhook when its version changed, monitors, bantool, web) with the
bundle's own `install`. The webhook goes from Parameter Store to `install set-webhook` on its
stdin, never to argv, the environment, a log or the output. A failure keeps what the host has, is
posted to chat through the installed notifier, and is the step's exit code.

Test hooks: HOSTGUARD_IMDS, HOSTGUARD_AWS_ENDPOINT (moto on loopback), HOSTGUARD_ROOT.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from typing import BinaryIO, NamedTuple

PARTS = ("base", "monitors", "bantool", "web")
BUNDLES_RE = re.compile(r"(base|monitors|bantool|web):([0-9a-f]{64})")
INSTALL_DIR = "/usr/local/lib/hostguard"
# What this step applied last: `part sha256` lines and `webhook VERSION` (root-only state).
FLEET_APPLIED = "/var/lib/hostguard/fleet.applied"
TIMEOUT = 20
# A bundle larger than this is refused as it streams in (the bundles are well under 1 MiB); an answer
# of the metadata or Parameter Store larger than ANSWER_MAX likewise.
BUNDLE_MAX = 64 << 20
ANSWER_MAX = 1 << 20
CHUNK = 1 << 16


class StepError(Exception):
    """A failure of the step: its text is posted and printed (never a secret)."""


class Creds(NamedTuple):
    key: str
    secret: str
    token: str
    region: str


def _root() -> str:
    return os.environ.get("HOSTGUARD_ROOT", "")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: a 3xx is an error of its own, so the signed headers (Authorization, the
    session token) never reach another URL."""

    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def _stream(req: urllib.request.Request, what: str, into: BinaryIO, limit: int) -> str:
    """Streams the answer's body into INTO (at most LIMIT bytes, else StepError); its sha256."""
    digest, size = hashlib.sha256(), 0
    try:
        with _OPENER.open(req, timeout=TIMEOUT) as answer:
            while chunk := answer.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise StepError(f"{what}: larger than {limit:,} bytes, refused")
                digest.update(chunk)
                into.write(chunk)
    except urllib.error.HTTPError as exc:
        raise StepError(f"{what}: HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise StepError(f"{what}: {type(exc).__name__}") from None
    return digest.hexdigest()


def _request(req: urllib.request.Request, what: str) -> bytes:
    """The answer's body (at most ANSWER_MAX bytes)."""
    body = io.BytesIO()
    _stream(req, what, body, ANSWER_MAX)
    return body.getvalue()


def credentials() -> Creds:
    """The instance role's credentials and the region, from IMDSv2."""
    base = os.environ.get("HOSTGUARD_IMDS", "http://169.254.169.254")
    put = urllib.request.Request(  # noqa: S310 - http(s) URLs built here
        f"{base}/latest/api/token", method="PUT", headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"}
    )
    token = _request(put, "instance metadata token").decode()

    def get(path: str) -> str:
        req = urllib.request.Request(f"{base}/latest/meta-data/{path}", headers={"X-aws-ec2-metadata-token": token})  # noqa: S310 - http(s) URLs built here
        return _request(req, f"instance metadata {path}").decode().strip()

    roles = get("iam/security-credentials/").splitlines()
    role = roles[0] if roles else ""
    if not role:
        raise StepError("the instance has no role: attach the stack's instance profile (docs/fleets.md)")
    try:
        doc = json.loads(get(f"iam/security-credentials/{role}"))
        creds = Creds(doc["AccessKeyId"], doc["SecretAccessKey"], doc.get("Token", ""), "")
    except (ValueError, TypeError, KeyError, AttributeError):
        raise StepError(f"instance metadata iam/security-credentials/{role}: not the expected JSON") from None
    return creds._replace(region=get("placement/region"))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signed(
    method: str, url: str, service: str, creds: Creds, body: bytes = b"", headers: dict[str, str] | None = None
) -> urllib.request.Request:
    """A SigV4-signed request (the headers signed: host, x-amz-*, and the ones given)."""
    parts = urllib.parse.urlsplit(url)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    payload = hashlib.sha256(body).hexdigest()
    hdrs = {"host": parts.netloc, "x-amz-date": now, "x-amz-content-sha256": payload}
    if creds.token:
        hdrs["x-amz-security-token"] = creds.token
    hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
    names = sorted(hdrs)
    query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
        for k, v in sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    )
    canonical = "\n".join(
        [
            method,
            urllib.parse.quote(parts.path or "/", safe="/-_.~"),
            query,
            "".join(f"{n}:{hdrs[n].strip()}\n" for n in names),
            ";".join(names),
            payload,
        ]
    )
    scope = f"{now[:8]}/{creds.region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", now, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{creds.secret}".encode(), now[:8]), creds.region), service), "aws4_request")
    hdrs["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={creds.key}/{scope}, SignedHeaders={';'.join(names)}, "
        f"Signature={hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()}"
    )
    del hdrs["host"]
    return urllib.request.Request(url, data=body or None, method=method, headers=hdrs)  # noqa: S310 - http(s) URLs built here


def endpoint(service: str, region: str) -> str:
    return os.environ.get("HOSTGUARD_AWS_ENDPOINT") or f"https://{service}.{region}.amazonaws.com"


def fetch_bundle(creds: Creds, bucket: str, part: str, sha: str, path: str) -> None:
    """bundles/PART/SHA.tar streamed into the new file PATH (0600), refused unless its sha256 is SHA."""
    key = f"bundles/{part}/{sha}.tar"
    req = signed("GET", f"{endpoint('s3', creds.region)}/{bucket}/{key}", "s3", creds)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
        got = _stream(req, f"s3://{bucket}/{key}", f, BUNDLE_MAX)
    if got != sha:
        raise StepError(f"s3://{bucket}/{key}: sha256 mismatch (got {got}), nothing installed")


def webhook_text(creds: Creds, name: str, version: str) -> bytes:
    """The webhook file's text: VERSION of the SecureString NAME, decrypted (only ever on a pipe)."""
    body = json.dumps({"Name": f"{name}:{version}", "WithDecryption": True}).encode()
    headers = {"content-type": "application/x-amz-json-1.1", "x-amz-target": "AmazonSSM.GetParameter"}
    answer = _request(
        signed("POST", f"{endpoint('ssm', creds.region)}/", "ssm", creds, body, headers),
        f"parameter {name} version {version}",
    )
    try:
        value = json.loads(answer)["Parameter"]["Value"]
    except (ValueError, TypeError, KeyError):
        raise StepError(f"parameter {name} version {version}: not the expected JSON") from None
    if not isinstance(value, str):
        raise StepError(f"parameter {name} version {version}: not a text value")
    return value.encode()


def read_applied(root: str) -> dict[str, str]:
    try:
        with open(root + FLEET_APPLIED, encoding="utf-8") as f:
            return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)
    except FileNotFoundError:
        return {}


def write_applied(root: str, applied: dict[str, str]) -> None:
    path = root + FLEET_APPLIED
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(f"{k} {v}\n" for k, v in sorted(applied.items())))
    os.replace(tmp, path)


def _run(argv: list[str], what: str, stdin: bytes = b"") -> None:
    try:
        done = subprocess.run(
            argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise StepError(f"{what}: {type(exc).__name__}") from None
    sys.stdout.write(done.stdout.decode("utf-8", "replace"))
    if done.returncode != 0:
        raise StepError(f"{what} failed (exit {done.returncode})")


def install_part(part: str, tar_path: str, root: str) -> None:
    """Unpacks the bundle TAR_PATH in a private temp folder and runs its own `install install --part PART`."""
    with tempfile.TemporaryDirectory(prefix="hostguard-step.") as work:
        folder = os.path.join(work, "bundle")
        os.mkdir(folder, 0o700)
        with tarfile.open(tar_path) as archive:
            for member in archive.getmembers():
                if not member.isfile() or member.name.startswith("/") or ".." in member.name.split("/"):
                    raise StepError(f"bundle {part}: refused member {member.name!r}")
            archive.extractall(folder)  # noqa: S202 - every member checked above
        _run(
            [os.path.join(folder, "install"), "install", "--part", part, *(["--root", root] if root else [])],
            f"install --part {part}",
        )


def set_webhook(text: bytes, root: str) -> None:
    _run(
        [root + INSTALL_DIR + "/install", "set-webhook", *(["--root", root] if root else [])],
        "install set-webhook",
        text,
    )


def notify(text: str, root: str) -> None:
    """Posts TEXT through the installed notifier, when there is one (a new host may have none yet)."""
    notifier = root + INSTALL_DIR + "/hostguard-notify"
    if os.access(notifier, os.X_OK):
        subprocess.run(
            [notifier, "text", text], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=60, check=False
        )


def apply(bucket: str, bundles: list[tuple[str, str]], parameter: str, version: str, root: str) -> list[str]:
    """Fetches and checks every changed part, then installs in order; returns what was done."""
    applied = read_applied(root)
    creds = credentials()
    with tempfile.TemporaryDirectory(prefix="hostguard-fetch.") as work:
        tars = {part: os.path.join(work, f"{part}.tar") for part, sha in bundles if applied.get(part) != sha}
        for part, sha in bundles:
            if part in tars:
                fetch_bundle(creds, bucket, part, sha, tars[part])
        webhook = webhook_text(creds, parameter, version) if applied.get("webhook") != version else None
        return install_all(bundles, tars, webhook, version, root, applied)


def install_all(
    bundles: list[tuple[str, str]],
    tars: dict[str, str],
    webhook: bytes | None,
    version: str,
    root: str,
    applied: dict[str, str],
) -> list[str]:
    """Installs the fetched parts TARS in order, the webhook after base; returns what was done."""
    done: list[str] = []
    for part, sha in bundles:
        if part in tars:
            install_part(part, tars[part], root)
            applied[part] = sha
            write_applied(root, applied)
            done.append(f"{part} {sha[:12]}")
        if part == "base" and webhook is not None:
            set_webhook(webhook, root)
            applied["webhook"] = version
            write_applied(root, applied)
            done.append(f"webhook version {version}")
    return done


def parse_bundles(text: str) -> list[tuple[str, str]]:
    """`part:sha ...` in PARTS order, base first, each part once."""
    pairs = [(m.group(1), m.group(2)) for m in (BUNDLES_RE.fullmatch(w) for w in text.split()) if m]
    if (
        not pairs
        or len(pairs) != len(text.split())
        or pairs[0][0] != "base"
        or [p for p, _ in pairs] != [p for p in PARTS if p in dict(pairs)]
    ):
        raise StepError(f"Bundles must be base:SHA256 then the other parts in order ({' '.join(PARTS)}), got {text!r}")
    return pairs


def failed(why: str, root: str) -> int:
    """The "could not apply" line and chat alert of a failed run; its exit code."""
    print(f"hostguard: {why}", file=sys.stderr)
    notify(f"[Server Alert] hostguard could not apply the stack's payload: {why}; the host keeps what it had", root)
    return 1


def main(argv: list[str]) -> int:
    root = _root()
    try:
        if len(argv) != 4 or not re.fullmatch(r"[0-9]{1,10}", argv[3]):
            raise StepError("usage: ssmstep BUCKET BUNDLES PARAMETER VERSION")
        bucket, bundles, parameter, version = argv[0], parse_bundles(argv[1]), argv[2], argv[3]
        done = apply(bucket, bundles, parameter, version, root)
    except StepError as exc:
        return failed(str(exc), root)
    except Exception as exc:  # any failure (MemoryError, a bug): its line and chat alert, no traceback alone
        return failed(f"unexpected {type(exc).__name__}", root)
    print(f"hostguard: {'; '.join(done) if done else 'nothing changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
