# hostguard: the ban of the nginx-bad-request jail at nginx, for a server
# behind trusted proxies (stack config trustedProxies). Installed, and named
# in the jail, only when that setting is set.
#
# Behind a load balancer the firewall cannot stop a client (its packets come
# from the balancer); nginx can, since its realip drop-in gives it the
# client's address. This Python action (loaded into fail2ban's process)
# keeps nginx's ban list (/var/lib/hostguard/nginx-bans.map, read by the map
# of /etc/nginx/conf.d/hostguard-realip.conf) through hostguard/ban/nginxban.py,
# and nginx answers a listed client 403 (an IPv4 client listed also as
# ::ffff:a.b.c.d, as a dual-stack proxy forwards it). Reloads are at most one
# per 2 s, whatever bans; a failed write or `nginx -t` stays pending and is
# tried again until applied. Start, stop and flush empty the list, as the
# firewall actions empty their chain: fail2ban restores its current bans
# after a restart through ban, and a list left by a killed server does not
# outlive the bans it held.
#
# Options (the jail's `hostguard-nginx-ban.py[...]`): nginx_pid, nginx's pid
# file (a master running there is reloaded after a change); nginx_opts, extra
# arguments of `nginx -t` (-p, -c, -e) for an nginx not at its default paths.

import os
import sys

from fail2ban.server.actions import ActionBase

_LIB = os.environ.get("HOSTGUARD_ROOT", "") + "/usr/local/lib/hostguard"
if _LIB not in sys.path:
    sys.path.insert(0, _LIB)

from hostguard.ban.nginxban import BanList  # noqa: E402 (found on the path set above)


class Action(ActionBase):
    def __init__(self, jail, name, nginx_pid="/run/nginx.pid", nginx_opts=""):
        super().__init__(jail, name)
        self.bans = BanList(nginx_pid, nginx_opts.split(), self._logSys)

    # fail2ban (1.0, server/actions.py) keeps a Python action across
    # `fail2ban-client reload` (every deploy of the jail) only when it has
    # both methods below; without them the action is silently removed.
    def clearAllParams(self):
        pass

    def reload(self, nginx_pid="/run/nginx.pid", nginx_opts=""):
        self.bans.pid_file = nginx_pid
        self.bans.nginx_opts = nginx_opts.split()

    def start(self):
        self.bans.clear()

    def stop(self):
        self.bans.clear()

    def flush(self):
        self.bans.clear()
        return True

    def ban(self, aInfo):
        self.bans.ban(str(aInfo["ip"]))

    def unban(self, aInfo):
        self.bans.unban(str(aInfo["ip"]))
