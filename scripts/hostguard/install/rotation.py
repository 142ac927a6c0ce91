"""`install set-webhook --verify`: a new webhook takes the old one's place only once the service accepted it.

`post_test` sends the connectivity test to the candidate (paths.WEBHOOK_CANDIDATE_PATH, the installer's
temp file beside the webhook) through `hostguard-notify --test --candidate`; `accepted` says whether to
rename it in place: delivered: yes; refused (any exit but 0 and 75): no; a "try later" answer (75): no
when the host has a webhook, yes on the first set, with TRANSIENT_LINE on stdout (the deploy turns it into a warning).
"""

from __future__ import annotations

import os
import subprocess
import sys

from ..errors import EX_NOPERM, EX_OK, EX_TEMPFAIL, HostguardError

# components/remoteCommands.ts WEBHOOK_CHECK_TRANSIENT: the deploy warns when it sees it.
TRANSIENT_LINE = "hostguard: connectivity test not delivered (transient failure)"
DELIVERED_LINE = "hostguard: connectivity test delivered"
# The notifier bounds its own run (NOTIFY_BUDGET); this only stops one that hangs.
TEST_TIMEOUT = 300
KEPT = "the host keeps the webhook it had"


def post_test(notifier: str, root: str) -> int:
    """The exit status of NOTIFIER's connectivity test of the candidate under ROOT ("" for /); its lines go
    to this run's stdout and stderr. A run past TEST_TIMEOUT counts as a transient failure."""
    env = {**os.environ, "HOSTGUARD_ROOT": root}
    try:
        run = subprocess.run(
            [notifier, "--test", "--candidate"], stdin=subprocess.DEVNULL, env=env, timeout=TEST_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        sys.stderr.write(f"hostguard: the connectivity test took over {TEST_TIMEOUT} s: stopped\n")
        return EX_TEMPFAIL
    except OSError as exc:
        raise HostguardError(f"set-webhook: cannot run {notifier}: {exc.strerror}; {KEPT}") from None
    return run.returncode


def accepted(status: int, has_old: bool) -> bool:
    """Whether the candidate goes in place after the test's exit STATUS (HAS_OLD: the host has a webhook);
    HostguardError (the test's status, never the URL) when it must not."""
    if status == EX_OK:
        print(DELIVERED_LINE, flush=True)
        return True
    if status == EX_TEMPFAIL and not has_old:
        print(TRANSIENT_LINE, flush=True)
        return True
    if status == EX_TEMPFAIL:
        raise HostguardError(
            "set-webhook: the connectivity test of the new webhook was not delivered (a transient failure: the"
            f" service is down, slow or rate-limiting; its answer above); {KEPT}; run the deploy again later",
            EX_TEMPFAIL,
        )
    raise HostguardError(
        f"set-webhook: the new webhook was refused (hostguard-notify --test exit {status}; the service's answer"
        f" above); {KEPT}; set a working hostguard:webhookUrl",
        status if status > 0 else EX_NOPERM,
    )
