# shellcheck shell=bash
# The heartbeat: after a monitor run that completed and left nothing in the
# spool, one HTTPS GET to the URL in heartbeat.curlrc (a dead man's switch
# such as a healthchecks-style ping). When pings stop, the service outside
# notices a host, a cron or a notifier that stopped, which no alert of the
# host itself can report. No file, no heartbeat (the default).
#
# Sourced after notify.sh (hg_curl_reason; HG_URL_LINE_RE is common.sh's) and
# hg_load_settings (NOTIFY_CA_FILE, NOTIFY_MAX_TIME). The URL is a secret
# like the webhook: the file is root's, 0600, one `url = "https://..."`
# line, read only by curl --config; it is never in argv, the environment or
# a log line.

# Refuses a heartbeat file that is not ours, that others can read, or that
# holds anything but one https URL line. Never prints the URL.
hg_heartbeat_check_file() {
  local file="${HG_HEARTBEAT_FILE}" owner_mode line urls=0
  owner_mode="$(stat -c '%u %a' -- "${file}")" || return 1
  if [[ "${owner_mode% *}" != "${EUID}" ]] || (((8#${owner_mode#* } & 8#077) != 0)); then
    hg_log ERROR "heartbeat file ${file} must be owned by uid ${EUID} and mode 600; no heartbeat sent"
    return 1
  fi
  while IFS= read -r line || [[ -n "${line}" ]]; do
    [[ "${line}" =~ ^[[:space:]]*(#.*)?$ ]] && continue
    if [[ ! "${line}" =~ ${HG_URL_LINE_RE} ]]; then
      hg_log ERROR "heartbeat file ${file} may hold only one url = \"https://...\" line; no heartbeat sent"
      return 1
    fi
    urls=$((urls + 1))
  done <"${file}"
  if ((urls != 1)); then
    hg_log ERROR "heartbeat file ${file} must hold exactly one url = \"https://...\" line; no heartbeat sent"
    return 1
  fi
}

# Seconds after which a monitor run still holding its lock is stuck: the
# longest a run can take (three runtime calls, each ended by its timeout,
# then a delivery run's budget) and a minute more.
hg_stuck_after() {
  local -n _stuck="$1"
  _stuck=$((3 * (HG_CONTAINER_RUNTIME_TIMEOUT + 5) + HG_NOTIFY_BUDGET + 60))
}

# Succeeds when the lock FILE is held by a run that started (it stamps the
# file's mtime when it takes it) longer ago than hg_stuck_after; sets
# HG_STUCK_SINCE to that start (epoch seconds). A lock this process holds
# must not be passed (flock on a second descriptor would see it held).
hg_lock_stuck() {
  local file="$1" fd since now stuck
  [[ -f "${file}" ]] || return 1
  { exec {fd}<"${file}"; } 2>/dev/null || return 1
  if flock --nonblock --shared "${fd}"; then
    exec {fd}>&-
    return 1
  fi
  exec {fd}>&-
  since="$(stat -c %Y -- "${file}" 2>/dev/null)" || return 1
  printf -v now '%(%s)T' -1
  hg_stuck_after stuck
  HG_STUCK_SINCE="${since}"
  ((now - since > stuck))
}

# Pings the heartbeat URL once; logs the outcome (never the URL). Returns 0
# whatever happened: a missed ping is what the service outside watches for.
# The ping says "the monitors complete their runs": none is sent while the
# other monitor's run is stuck (its lock held too long), so the service
# outside notices a hung container runtime too.
hg_heartbeat() {
  local who="$1" status="" rc=0 other
  [[ -e "${HG_HEARTBEAT_FILE}" ]] || return 0
  hg_heartbeat_check_file || return 0
  hg_notify_check_ca 2>&1 || return 0
  for other in host-monitor container-monitor; do
    [[ "${other}" != "${who}" ]] || continue
    if hg_lock_stuck "${HG_STATE_DIR}/${other}.lock"; then
      hg_log WARN "${who}: no heartbeat: a ${other} run started at $(printf '%(%Y-%m-%d %H:%M:%S)T' "${HG_STUCK_SINCE}") has not completed"
      return 0
    fi
  done
  local -a args=(
    --disable --silent --globoff --config "${HG_HEARTBEAT_FILE}"
    --proto "=https" --proto-redir "=https" --max-redirs 0
    --max-time "${HG_NOTIFY_MAX_TIME}" --connect-timeout "${HG_NOTIFY_MAX_TIME}"
    --output /dev/null --write-out '%{http_code}'
  )
  [[ -z "${HG_NOTIFY_CA_FILE}" ]] || args+=(--cacert "${HG_NOTIFY_CA_FILE}")
  status="$(curl "${args[@]}" </dev/null 2>/dev/null)" || rc=$?
  if ((rc != 0)); then
    hg_log WARN "${who}: heartbeat not sent: $(hg_curl_reason "${rc}") (curl ${rc})"
  elif [[ "${status}" =~ ^2[0-9][0-9]$ ]]; then
    hg_log INFO "${who}: heartbeat sent (HTTP ${status})"
  else
    hg_log WARN "${who}: heartbeat not accepted: HTTP ${status}"
  fi
  return 0
}
