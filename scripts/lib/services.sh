# shellcheck shell=bash
# Service tests and reloads of install: only when the root is / and the tool
# is installed; nginx -t / fail2ban-client -t always before a reload, and a
# failed test fails the part (install rolls it back). Sourced by install,
# never run; reads CHANGED (lib/txn.sh).

live_root() {
  [[ -z "${HG_ROOT}" ]]
}

# True when service operations may run; logs why not otherwise.
service_allowed() {
  local tool="$1"
  if ! live_root; then
    hg_log INFO "root is ${HG_ROOT}, not /: ${tool} not tested or reloaded"
    return 1
  fi
  if ! command -v "${tool}" >/dev/null 2>&1; then
    hg_log WARN "${tool} is not installed: not tested or reloaded"
    return 1
  fi
  return 0
}

systemd_booted() {
  [[ -d /run/systemd/system ]]
}

svc_nginx_test() {
  nginx -t -q
}

svc_nginx_running() {
  local pid
  [[ -s /run/nginx.pid ]] || return 1
  pid="$(<"/run/nginx.pid")"
  [[ "${pid}" =~ ^[0-9]+$ ]] && kill -0 "${pid}" 2>/dev/null
}

svc_nginx_reload() {
  if systemd_booted && systemctl is-active --quiet nginx; then
    systemctl reload nginx
  elif svc_nginx_running; then
    nginx -s reload
  else
    hg_log INFO "nginx is not running: not reloaded"
  fi
}

svc_fail2ban_test() {
  fail2ban-client -t >/dev/null
}

svc_fail2ban_running() {
  fail2ban-client ping >/dev/null 2>&1
}

svc_fail2ban_reload() {
  if svc_fail2ban_running; then
    fail2ban-client reload >/dev/null
  elif systemd_booted; then
    systemctl start fail2ban
  else
    # The server it starts lives on: it must not hold the install lock.
    fail2ban-client start >/dev/null {TXN_LOCK_FD}<&-
  fi
}

nginx_apply() {
  ((CHANGED)) || return 0
  service_allowed nginx || return 0
  svc_nginx_test || hg_die "nginx -t failed"
  svc_nginx_reload
  hg_log INFO "nginx configuration tested and reloaded"
}

fail2ban_apply() {
  ((CHANGED)) || return 0
  service_allowed fail2ban-client || return 0
  svc_fail2ban_test || hg_die "fail2ban-client -t failed"
  svc_fail2ban_reload
  hg_log INFO "fail2ban configuration tested and reloaded"
}
