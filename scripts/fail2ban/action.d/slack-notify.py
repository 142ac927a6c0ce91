# hostguard: chat notification for the ban tool (SPEC, action definition
# slack-notify): the start, stop, ban and unban messages.
#
# A fail2ban Python action (fail2ban loads action.d/<name>.py into its own
# process; the jail names it `slack-notify.py`, so its name is slack-notify).
# fail2ban runs a jail's actions one ban after another; this one starts no
# process per ban: each message is one short transaction in hostguard's
# spool (hostguard/notify/events.py), delivered by one detached flush. The webhook
# is never here: this file is world-readable; the notifier reads it from the
# root-only /etc/hostguard/webhook.conf. The texts are built in
# hostguard/notify/events.py from the values fail2ban hands over (no shell, no
# quoting: a value is refused there when it is not what it should be).
#
# Option (the jail's `slack-notify.py[...]`): slack_channel, the channel of
# the start and stop messages, without the #. The code is hostguard's
# package, imported from /usr/local/lib/hostguard (under HOSTGUARD_ROOT,
# which only tests set).

import os
import sys

from fail2ban.server.actions import ActionBase

_LIB = os.environ.get("HOSTGUARD_ROOT", "") + "/usr/local/lib/hostguard"
if _LIB not in sys.path:
    sys.path.insert(0, _LIB)

from hostguard.notify.events import BanNotices  # noqa: E402 (found on the path set above)


class Action(ActionBase):
    # Bans restored from fail2ban's database after a restart were announced already.
    norestored = True

    def __init__(self, jail, name, slack_channel="alerts"):
        super().__init__(jail, name)
        # fail2ban's logger: a message LOST (the disk full) is said in fail2ban's log.
        self.notices = BanNotices(slack_channel, self._logSys)

    # fail2ban (1.0, server/actions.py) keeps a Python action across
    # `fail2ban-client reload` (every deploy of the jail) only when it has
    # both methods below; without them the action is silently removed.
    def clearAllParams(self):
        pass

    def reload(self, slack_channel="alerts"):
        self.notices.channel = slack_channel

    def start(self):
        self.notices.start(self._jail.name)

    def stop(self):
        self.notices.stop(self._jail.name)

    def flush(self):
        # Stop (and unban --all) clears the whole ban list at once; the stop
        # message already says so, so no "Unbanned" message per address (a
        # restart restores those bans silently, see norestored).
        return True

    def ban(self, aInfo):
        self.notices.ban(self._jail.name, str(aInfo["ip"]), str(aInfo["failures"]), str(aInfo["time"]))

    def unban(self, aInfo):
        self.notices.unban(self._jail.name, str(aInfo["ip"]))
