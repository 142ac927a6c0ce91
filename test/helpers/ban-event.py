#!/usr/bin/env python3
"""Test helper: one ban-tool message spooled as the ban tool's action spools it
(hostguard/notify/events.py, the repository's code; HOSTGUARD_ROOT as for the
programs), from a command line, so that tests outside fail2ban drive the ban path.

    ban-event.py start|stop --jail NAME [--channel CHANNEL]
    ban-event.py ban --jail NAME --ip IP --failures N --time UNIX
    ban-event.py unban --jail NAME --ip IP

Exit 0 kept (a detached flush started when the delivery lock was free), 64 a
value refused, 74 not kept (disk full: logged as LOST, the action would fail).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "scripts"))

from hostguard import log
from hostguard.errors import EX_USAGE, HostguardError
from hostguard.notify import events
from hostguard.notify.spool import Spool, SpoolFull
from hostguard.settings import load

OPTIONS = ("--jail", "--ip", "--failures", "--time", "--channel")


def main(argv):
    if not argv or len(argv) % 2 == 0 or any(name not in OPTIONS for name in argv[1::2]):
        sys.stderr.write(__doc__)
        return EX_USAGE
    found = {name[2:]: value for name, value in zip(argv[1::2], argv[2::2])}
    settings = load()
    spool = Spool(settings.notify_spool_max, busy=events.BAN_BUSY_SECONDS)
    try:
        if events.spool_event(settings, spool, argv[0], found):
            events.start_flush()
    except SpoolFull:
        return 74  # EX_IOERR: not kept
    except HostguardError as error:
        sys.stderr.write(log.die_line(str(error)) + "\n")
        return error.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
