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

# Pings the heartbeat URL once; logs the outcome (never the URL). Returns 0
# whatever happened: a missed ping is what the service outside watches for.
hg_heartbeat() {
  local who="$1" status="" rc=0
  [[ -e "${HG_HEARTBEAT_FILE}" ]] || return 0
  hg_heartbeat_check_file || return 0
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
