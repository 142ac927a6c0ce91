# shellcheck shell=bash
# shellcheck disable=SC2034 # HG_NOTIFY_LAST is read by the scripts that source this
# The one way hostguard posts to the chat webhook: spool, then deliver.
# Sourced after common.sh and hg_load_settings (reads HG_NOTIFY_* settings).
# Reads the webhook only through curl --config from webhook.curlrc (0600),
# writes messages to the spool dir, one file each, and deletes each file
# right after the chat service answered it 200 ok.
#
# Exit codes of hg_notify_flush: 0 spool empty, 75 something left (delivery
# failed, budget spent, or another flush holds the lock), 78 bad webhook file.

readonly HG_EX_TEMPFAIL=75
readonly HG_EX_CONFIG=78
# How long a run waits for another run's flush before leaving its messages
# to that run or the next one.
readonly HG_NOTIFY_LOCK_WAIT=5
# The chat service allows about one message per second.
readonly HG_NOTIFY_PACE_MS=1050
# A curlrc line holding an https URL and nothing else curl would act on.
readonly HG_WEBHOOK_LINE_RE='^[[:space:]]*(--)?url[[:space:]]*[=:]?[[:space:]]*"?(https://[^"[:space:][:cntrl:]]+)"?[[:space:]]*$'

HG_NOTIFY_LAST=""
HG_NOTIFY_SEQ=0

hg_now_ms() {
  local us="${EPOCHREALTIME//[!0-9]/}"
  printf -v "$1" '%d' "$((10#${us} / 1000))"
}

# The JSON body of one message; CHANNEL (without #) only for start/stop.
# Every message passes here, so the host label (ALERT_HOST_LABEL) is added
# here once for the monitors, the ban tool and the connectivity test.
hg_notify_json() {
  local text channel="${2:-}" json
  hg_labelled_text text "$1"
  json="{\"text\":$(hg_json_string "${text}")"
  if [[ -n "${channel}" ]]; then
    json+=",\"channel\":$(hg_json_string "#${channel}")"
  fi
  printf '%s}' "${json}"
}

# Spools one message; sets HG_NOTIFY_LAST to its file. Names sort by time
# (16-digit microseconds), so a glob lists the oldest first.
hg_notify_enqueue() {
  local text="$1" channel="${2:-}" json us name
  json="$(hg_notify_json "${text}" "${channel}")"
  [[ -d "${HG_SPOOL_DIR}" ]] || (umask 077 && mkdir -p -- "${HG_SPOOL_DIR}")
  us="${EPOCHREALTIME//[!0-9]/}"
  HG_NOTIFY_SEQ=$((HG_NOTIFY_SEQ + 1))
  printf -v name 'msg-%s-%06d-%04d.json' "${us}" "$$" "${HG_NOTIFY_SEQ}"
  (umask 077 && printf '%s\n' "${json}" >"${HG_SPOOL_DIR}/.tmp-${name}")
  mv -f "${HG_SPOOL_DIR}/.tmp-${name}" "${HG_SPOOL_DIR}/${name}"
  HG_NOTIFY_LAST="${HG_SPOOL_DIR}/${name}"
}

# Sets HG_NOTIFY_PENDING to the spooled files, oldest first. Builtins only:
# a monitor run with nothing to send spawns nothing here.
hg_notify_pending() {
  local LC_COLLATE=C had_nullglob=0
  shopt -q nullglob && had_nullglob=1
  shopt -s nullglob
  HG_NOTIFY_PENDING=("${HG_SPOOL_DIR}"/msg-*.json)
  ((had_nullglob)) || shopt -u nullglob
}

# Refuses a webhook file that others can read, that is not ours, or whose URL
# is not https. Never prints the URL or the file's lines.
hg_notify_check_webhook() {
  local file="${HG_WEBHOOK_FILE}" owner_mode line urls=0
  if [[ ! -f "${file}" || ! -r "${file}" ]]; then
    hg_log ERROR "webhook file ${file} is missing or unreadable" >&2
    return "${HG_EX_CONFIG}"
  fi
  owner_mode="$(stat -c '%u %a' -- "${file}")"
  if [[ "${owner_mode% *}" != "${EUID}" ]]; then
    hg_log ERROR "webhook file ${file} must be owned by uid ${EUID}" >&2
    return "${HG_EX_CONFIG}"
  fi
  if (((8#${owner_mode#* } & 8#077) != 0)); then
    hg_log ERROR "webhook file ${file} is readable by group or others (mode ${owner_mode#* }); chmod 600 it" >&2
    return "${HG_EX_CONFIG}"
  fi
  while IFS= read -r line || [[ -n "${line}" ]]; do
    [[ "${line}" =~ ^[[:space:]]*(#.*)?$ ]] && continue
    if [[ "${line}" =~ ${HG_WEBHOOK_LINE_RE} ]]; then
      urls=$((urls + 1))
      continue
    fi
    if [[ "${line}" =~ ^[[:space:]]*(--)?url[[:space:]=:] ]]; then
      hg_log ERROR "webhook URL in ${file} is not https:// (refused; URL not shown)" >&2
    else
      hg_log ERROR "webhook file ${file} may hold only one url = \"https://...\" line" >&2
    fi
    return "${HG_EX_CONFIG}"
  done <"${file}"
  if ((urls != 1)); then
    hg_log ERROR "webhook file ${file} must hold exactly one url = \"https://...\" line" >&2
    return "${HG_EX_CONFIG}"
  fi
}

# Why curl failed, from its exit code alone: its own error text can name the
# host and path of the URL, so it is never shown.
hg_curl_reason() {
  case "$1" in
    6) echo "cannot resolve host" ;;
    7) echo "connection refused or unreachable" ;;
    28) echo "timed out" ;;
    35) echo "TLS handshake failed" ;;
    51 | 60) echo "server certificate not trusted" ;;
    52) echo "empty reply" ;;
    56) echo "connection reset" ;;
    77) echo "cannot read the CA file" ;;
    1) echo "protocol refused (https only)" ;;
    *) echo "curl error" ;;
  esac
}

# One POST of PAYLOAD with at most MAX_TIME seconds. Sets HG_POST_CURL (curl's
# exit code), HG_POST_STATUS, HG_POST_BODY and HG_POST_RETRY_AFTER (seconds).
hg_notify_post() {
  local payload="$1" max_time="$2" out rest headers line
  local -a args=(
    --disable --silent --config "${HG_WEBHOOK_FILE}"
    --proto "=https" --proto-redir "=https" --max-redirs 0
    --max-time "${max_time}" --connect-timeout "${max_time}"
    --header 'Expect:' --dump-header - --write-out '\n%{http_code}'
    --data-urlencode 'payload@-'
  )
  [[ -z "${HG_NOTIFY_CA_FILE}" ]] || args+=(--cacert "${HG_NOTIFY_CA_FILE}")
  HG_POST_CURL=0
  HG_POST_STATUS=000
  HG_POST_BODY=""
  HG_POST_RETRY_AFTER=""
  out="$(printf '%s' "${payload}" | curl "${args[@]}" 2>/dev/null)" || HG_POST_CURL=$?
  HG_POST_STATUS="${out##*$'\n'}"
  rest="${out%$'\n'*}"
  # Header blocks (a proxy's CONNECT reply included) come before the body.
  while [[ "${rest}" == HTTP/* && "${rest}" == *$'\r\n\r\n'* ]]; do
    headers="${rest%%$'\r\n\r\n'*}"
    rest="${rest#*$'\r\n\r\n'}"
  done
  HG_POST_BODY="${rest}"
  while IFS= read -r line; do
    line="${line%$'\r'}"
    if [[ "${line,,}" =~ ^retry-after:[[:space:]]*([0-9]{1,6})[[:space:]]*$ ]]; then
      HG_POST_RETRY_AFTER="${BASH_REMATCH[1]}"
    fi
  done <<<"${headers:-}"
}

# Sleeps until MS (epoch milliseconds), if that is in the future.
hg_sleep_until() {
  local until_ms="$1" now wait
  hg_now_ms now
  wait=$((until_ms - now))
  ((wait > 0)) || return 0
  printf -v wait '%d.%03d' "$((wait / 1000))" "$((wait % 1000))"
  sleep "${wait}"
}

# Delivers one spooled FILE before DEADLINE (epoch ms). 0 when the chat
# service answered 200 ok (the file is then removed), 1 otherwise.
hg_notify_deliver() {
  local file="$1" deadline="$2" name="${1##*/}" payload=""
  local attempt now left max_time wait_ms reason last_file
  IFS= read -r -d '' payload <"${file}" || true
  payload="${payload%$'\n'}"
  last_file="${HG_SPOOL_DIR}/.last-post"
  for ((attempt = 1; attempt <= HG_NOTIFY_ATTEMPTS; attempt++)); do
    hg_notify_pace "${last_file}"
    hg_now_ms now
    left=$(((deadline - now) / 1000))
    if ((left < 1)); then
      hg_log WARN "not delivered ${name}: run budget of ${HG_NOTIFY_BUDGET}s spent; left in spool" >&2
      return 1
    fi
    max_time=$((left < HG_NOTIFY_MAX_TIME ? left : HG_NOTIFY_MAX_TIME))
    (umask 077 && printf '%s\n' "${now}" >"${last_file}")
    hg_notify_post "${payload}" "${max_time}"
    if ((HG_POST_CURL == 0)) && [[ "${HG_POST_STATUS}" == 200 && "${HG_POST_BODY}" == ok ]]; then
      rm -f -- "${file}"
      hg_log INFO "delivered ${name} (attempt ${attempt})"
      return 0
    fi
    wait_ms=$((attempt * 1000))
    if ((HG_POST_CURL != 0)); then
      reason="$(hg_curl_reason "${HG_POST_CURL}") (curl ${HG_POST_CURL})"
    elif [[ "${HG_POST_STATUS}" == 429 ]]; then
      wait_ms=$((${HG_POST_RETRY_AFTER:-1} * 1000))
      reason="HTTP 429, retry after ${HG_POST_RETRY_AFTER:-1}s"
    elif [[ "${HG_POST_STATUS}" == 200 ]]; then
      reason="HTTP 200 without body ok"
    else
      reason="HTTP ${HG_POST_STATUS}"
    fi
    hg_log WARN "not delivered ${name}: ${reason} (attempt ${attempt}/${HG_NOTIFY_ATTEMPTS})" >&2
    ((attempt < HG_NOTIFY_ATTEMPTS)) || break
    hg_now_ms now
    if ((now + wait_ms + 1000 > deadline)); then
      hg_log WARN "not retrying ${name}: the wait would pass the run budget; left in spool" >&2
      return 1
    fi
    hg_sleep_until "$((now + wait_ms))"
  done
  return 1
}

# Keeps posts of all runs at least HG_NOTIFY_PACE_MS apart.
hg_notify_pace() {
  local last_file="$1" last=""
  [[ -f "${last_file}" ]] || return 0
  IFS= read -r last <"${last_file}" || true
  [[ "${last}" =~ ^[0-9]+$ ]] || return 0
  hg_sleep_until "$((last + HG_NOTIFY_PACE_MS))"
}

# Delivers the spool oldest first under a lock, within NOTIFY_BUDGET seconds.
# Stops at the first failure, so the order is kept for the next run.
hg_notify_flush() {
  local start deadline fd rc=0
  hg_notify_pending
  ((${#HG_NOTIFY_PENDING[@]} > 0)) || return 0
  hg_notify_check_webhook || return "${HG_EX_CONFIG}"
  hg_now_ms start
  deadline=$((start + HG_NOTIFY_BUDGET * 1000))
  exec {fd}>>"${HG_SPOOL_DIR}/.lock"
  if ! flock -w "${HG_NOTIFY_LOCK_WAIT}" "${fd}"; then
    exec {fd}>&-
    hg_log WARN "another delivery run holds the spool lock; ${#HG_NOTIFY_PENDING[@]} message(s) left to it or the next run" >&2
    return "${HG_EX_TEMPFAIL}"
  fi
  # Re-list after each message: a message spooled meanwhile by another run
  # that could not get the lock goes out in this one.
  while :; do
    hg_notify_pending
    ((${#HG_NOTIFY_PENDING[@]} > 0)) || break
    if ! hg_notify_deliver "${HG_NOTIFY_PENDING[0]}" "${deadline}"; then
      hg_notify_pending
      hg_log WARN "${#HG_NOTIFY_PENDING[@]} message(s) left in spool for the next run" >&2
      rc="${HG_EX_TEMPFAIL}"
      break
    fi
  done
  exec {fd}>&-
  return "${rc}"
}
