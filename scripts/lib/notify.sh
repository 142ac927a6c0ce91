# shellcheck shell=bash
# shellcheck disable=SC2034 # HG_NOTIFY_LAST and friends are read by the scripts that source this
# The one way hostguard posts to the chat webhook: spool, then deliver.
# Sourced after common.sh and hg_load_settings (reads HG_NOTIFY_* settings).
# Reads the webhook only through curl --config from webhook.curlrc (0600).
#
# Spool dir (HG_SPOOL_DIR), all 0600/0700, root's:
#   msg-<P>-<us>-<pid>-<seq>.json  one message each; P is the queue: 0 the
#                              monitors' alerts (and `text`), 1 the ban tool's
#                              events. One glob lists the alerts first, then
#                              the events, each oldest first: a flood of bans
#                              can neither push out nor delay an alert.
#   .sending-<name>            the one message being posted (claimed by rename,
#                              so that no writer trims it meanwhile)
#   dead-<name> + .reason      messages the chat service refused for good
#   .lock                      held by the one run that delivers
#   .bound.lock                held by a writer while it bounds its queue
#   .last-post                 monotonic ms of the last post (pacing)
#   .notify-webhook            "refused <id> <since> <next-probe> <interval> <why>"
#   .notify-dropped            alerts dropped on overflow, not yet announced
#   .notify-last-delivery, .notify-last-error, .notify-flush.pid, .notify-flush.log
#
# Every answer is classified (hg_notify_classify): any 2xx is delivered;
# connection errors, timeouts, 429, 408 and 5xx are transient (retried,
# Retry-After honoured within the run's budget); the webhook's own refusals
# (403 invalid_token, ...) keep every message and back off; any other 4xx
# moves that one message to the dead letters and the next goes on.
#
# Exit codes of hg_notify_flush: 0 spool empty, 75 something left (transient
# failure, budget spent, or another run delivers), 77 left because the
# webhook is refused for good (rotate it), 78 bad webhook file.

readonly HG_EX_IOERR=74
readonly HG_EX_TEMPFAIL=75
readonly HG_EX_NOPERM=77
readonly HG_EX_CONFIG=78
# How long a foreground run waits for another run's flush before leaving its
# messages to that run (which re-lists the spool) or the next one.
readonly HG_NOTIFY_LOCK_WAIT=5
# The chat service allows about one message per second.
readonly HG_NOTIFY_PACE_MS=1050
# A refused webhook is probed once per run, at most this often (doubling).
readonly HG_NOTIFY_PROBE_FIRST=600
readonly HG_NOTIFY_PROBE_MAX=3600
# The error text of the chat service is shown cut to this many bytes.
readonly HG_NOTIFY_ERROR_MAX=200
# The channel override at the end of a message as hg_notify_json_to writes it.
readonly HG_NOTIFY_CHANNEL_RE=',"channel":"#[a-z0-9._-]{1,80}"\}$'
# The webhook's own refusals (Slack's answers): the webhook, not the
# message, is at fault, so every message stays spooled.
readonly HG_NOTIFY_WEBHOOK_REFUSALS=" 403:invalid_token 403:action_prohibited 404:no_service 404:no_active_hooks 410:channel_is_archived "

# What the notifier writes in the spool, as on the host (globs), as lines of
# hostguard-notify --runtime-files (the spool's owner): "message" the
# undelivered messages (uninstall says how many it drops), "state" the rest
# of the layout above, temp files included.
hg_notify_runtime_files() {
  printf 'message %s\n' "${HG_SPOOL_PATH}/msg-*.json" "${HG_SPOOL_PATH}/.sending-msg-*"
  printf 'state %s\n' "${HG_SPOOL_PATH}/.tmp-msg-*" "${HG_SPOOL_PATH}/dead-msg-*" "${HG_SPOOL_PATH}/.lock" \
    "${HG_SPOOL_PATH}/.bound.lock" "${HG_SPOOL_PATH}/.last-post" "${HG_SPOOL_PATH}/.notify-*"
}

HG_NOTIFY_LAST=""
HG_NOTIFY_SEQ=0
HG_NOTIFY_STATE="${HG_SPOOL_DIR}/.notify"
# Dead letters sit beside the spool (dead-msg-*.json), out of its glob.
HG_NOTIFY_DEAD="${HG_SPOOL_DIR}/dead-"
# Set by hg_notify_enqueue when the spool could not be written: the outcome of
# the direct delivery it tried instead (0 delivered, else not).
HG_NOTIFY_DIRECT_RC=""
# 1 when this run only tries the lock (a detached flush after a ban event).
HG_NOTIFY_NOWAIT=0
# The two queues (see the spool layout above).
readonly HG_NOTIFY_ALERTS=0
readonly HG_NOTIFY_EVENTS=1
# A burst: at least this many ban-tool messages waiting are posted merged,
# at most HG_NOTIFY_MERGE_MAX to a message (the chat service takes about one
# message a second; a thousand bans must not take a thousand seconds).
readonly HG_NOTIFY_BURST=10
readonly HG_NOTIFY_MERGE_MAX=50
# A merged message stays this far below the chat service's text limit.
readonly HG_NOTIFY_MERGE_CHARS=30000

hg_now_ms() {
  local us="${EPOCHREALTIME//[!0-9]/}"
  printf -v "$1" '%d' "$((10#${us} / 1000))"
}

# VAR <- milliseconds on the monotonic boot clock (/proc/uptime): deadlines and
# pacing do not move when the wall clock is stepped. Falls back to the wall
# clock where /proc is not mounted.
hg_mono_ms() {
  local up="" rest
  if [[ -r /proc/uptime ]] && read -r up rest </proc/uptime \
    && [[ "${up}" =~ ^([0-9]+)\.([0-9]{2})$ ]]; then
    printf -v "$1" '%d' "$((10#${BASH_REMATCH[1]} * 1000 + 10#${BASH_REMATCH[2]} * 10))"
    return 0
  fi
  hg_now_ms "$1"
}

# Writes TEXT (redacted: `status` prints these files) to FILE; a failed
# write (disk full) is logged, never fatal.
hg_notify_write_state() {
  local file="$1" text
  hg_redact text "$2"
  if ! { printf '%s\n' "${text}" >"${file}"; } 2>/dev/null; then
    hg_log WARN "cannot write ${file##*/} (disk full?)" >&2
    return 1
  fi
}

# VAR <- the JSON body of one message; CHANNEL (without #) only for start/stop.
# Every message passes here, so the host label (ALERT_HOST_LABEL) is added
# here once for the monitors, the ban tool and the connectivity test.
hg_notify_json_to() {
  local -n _json="$1"
  local text channel="${3:-}" quoted
  hg_labelled_text text "$2"
  hg_json_quote quoted "${text}"
  _json="{\"text\":${quoted}"
  if [[ -n "${channel}" ]]; then
    hg_json_quote quoted "#${channel}"
    _json+=",\"channel\":${quoted}"
  fi
  _json+="}"
}

# Spools one message in QUEUE (HG_NOTIFY_ALERTS, the default, or
# HG_NOTIFY_EVENTS); sets HG_NOTIFY_LAST to its file. Names sort by queue,
# then time (16-digit microseconds), so a glob lists the alerts first, each
# queue oldest first. When the spool cannot be written (disk full, ...) an
# alert is delivered directly instead (HG_NOTIFY_LAST empty,
# HG_NOTIFY_DIRECT_RC its outcome): an alert is never dropped for want of a
# spool file. An event is not (a ban never waits for the chat service):
# HG_NOTIFY_DIRECT_RC is then HG_EX_IOERR. Returns 0 either way.
hg_notify_enqueue() {
  local text="$1" channel="${2:-}" queue="${3:-${HG_NOTIFY_ALERTS}}" json name
  hg_notify_json_to json "${text}" "${channel}"
  HG_NOTIFY_LAST=""
  HG_NOTIFY_DIRECT_RC=""
  HG_NOTIFY_SEQ=$((HG_NOTIFY_SEQ + 1))
  printf -v name 'msg-%d-%s-%06d-%04d.json' "${queue}" "${EPOCHREALTIME//[!0-9]/}" "$$" "${HG_NOTIFY_SEQ}"
  if hg_notify_spool_write "${name}" "${json}" || hg_notify_use_reserve "${name}" "${json}"; then
    HG_NOTIFY_LAST="${HG_SPOOL_DIR}/${name}"
    hg_notify_bound_spool "${queue}"
    return 0
  fi
  if ((queue == HG_NOTIFY_EVENTS)); then
    hg_log ERROR "cannot write the spool in ${HG_SPOOL_DIR} (disk full?): this ban-tool message is LOST (not kept, not sent: a ban never waits for the chat service)" >&2
    HG_NOTIFY_DIRECT_RC="${HG_EX_IOERR}"
    return 0
  fi
  hg_log ERROR "cannot write the spool in ${HG_SPOOL_DIR} (disk full?): delivering this alert directly" >&2
  HG_NOTIFY_DIRECT_RC=0
  hg_notify_direct "${json}" || HG_NOTIFY_DIRECT_RC=$?
  return 0
}

# 0 when the message of the last hg_notify_enqueue is kept (spooled) or was
# delivered directly; 1 when it is lost (the caller must not count it as
# posted: its alert state posts it again next run).
hg_notify_kept() {
  [[ -n "${HG_NOTIFY_LAST}" || "${HG_NOTIFY_DIRECT_RC}" == 0 ]]
}

# Writes JSON as spool file NAME (temp file, rename); 1 when it cannot.
hg_notify_spool_write() {
  local name="$1" json="$2" tmp="${HG_SPOOL_DIR}/.tmp-$1"
  if { [[ -d "${HG_SPOOL_DIR}" ]] || (umask 077 && mkdir -p -- "${HG_SPOOL_DIR}"); } 2>/dev/null \
    && { (umask 077 && printf '%s\n' "${json}" >"${tmp}"); } 2>/dev/null \
    && mv -f -- "${tmp}" "${HG_SPOOL_DIR}/${name}" 2>/dev/null; then
    return 0
  fi
  rm -f -- "${tmp}" 2>/dev/null || true
  return 1
}

# The spool's reserve: a file of HG_NOTIFY_RESERVE_BYTES that a full disk
# gives back, so that the messages of that moment are still kept. Made again
# (once there is room) by the next delivery run.
readonly HG_NOTIFY_RESERVE_BYTES=65536
hg_notify_use_reserve() {
  local name="$1" json="$2" reserve="${HG_SPOOL_DIR}/.notify-reserve"
  [[ -f "${reserve}" ]] || return 1
  rm -f -- "${reserve}" 2>/dev/null || return 1
  hg_log ERROR "the disk of ${HG_SPOOL_DIR} is full: used the spool's reserve to keep this message; free some space" >&2
  hg_notify_spool_write "${name}" "${json}"
}

# Makes the reserve when it is missing (not when the disk is full).
hg_notify_make_reserve() {
  local reserve="${HG_SPOOL_DIR}/.notify-reserve"
  [[ ! -f "${reserve}" ]] || return 0
  if ! { head -c "${HG_NOTIFY_RESERVE_BYTES}" /dev/zero >"${reserve}.tmp" \
    && mv -f -- "${reserve}.tmp" "${reserve}"; } 2>/dev/null; then
    rm -f -- "${reserve}.tmp" 2>/dev/null || true
  fi
  return 0
}

# One post of JSON without the spool (a full disk); 0 delivered, else the
# flush's codes. Logs what became of it.
hg_notify_direct() {
  local json="$1" max_time="${HG_NOTIFY_MAX_TIME}" stamp
  hg_notify_check_webhook || return "${HG_EX_CONFIG}"
  hg_notify_post "${json}" "${max_time}"
  hg_notify_classify "${json}"
  case "${HG_CLASS}" in
    delivered)
      hg_log INFO "delivered an alert directly (not spooled): ${HG_REASON}"
      printf -v stamp '%(%Y-%m-%d %H:%M:%S)T' -1
      hg_notify_write_state "${HG_NOTIFY_STATE}-last-delivery" "${stamp} (direct, not spooled)" || true
      return 0
      ;;
    transient)
      hg_log ERROR "alert lost: not spooled (disk full) and not delivered: ${HG_REASON}" >&2
      return "${HG_EX_TEMPFAIL}"
      ;;
    *)
      hg_log ERROR "alert lost: not spooled (disk full) and refused: ${HG_REASON}" >&2
      return "${HG_EX_NOPERM}"
      ;;
  esac
}

# Sets HG_NOTIFY_PENDING to the spooled files, alerts first, each queue
# oldest first (the names sort so). Builtins only: a monitor run with
# nothing to send spawns nothing here.
hg_notify_pending() {
  local LC_COLLATE=C had_nullglob=0
  shopt -q nullglob && had_nullglob=1
  shopt -s nullglob
  HG_NOTIFY_PENDING=("${HG_SPOOL_DIR}"/msg-*.json)
  ((had_nullglob)) || shopt -u nullglob
}

# VAR <- the spooled files of QUEUE, oldest first.
hg_notify_queue() {
  local -n _queue="$1"
  local LC_COLLATE=C had_nullglob=0
  shopt -q nullglob && had_nullglob=1
  shopt -s nullglob
  _queue=("${HG_SPOOL_DIR}/msg-$2-"*.json)
  ((had_nullglob)) || shopt -u nullglob
}

# After a message was spooled in QUEUE: at most NOTIFY_SPOOL_MAX stay in it,
# enforced by every writer (under .bound.lock, held only while bounding; the
# delivery lock may be held for a whole run). Events beyond it go, oldest
# first, counted in .notify-dropped. Alerts are never dropped: the oldest are
# merged into one message. The message being posted was claimed by rename
# (.sending-*), so it is never dropped or merged while it goes out.
hg_notify_bound_spool() {
  local queue="$1" fd
  local -a files=()
  hg_notify_queue files "${queue}"
  ((${#files[@]} > HG_NOTIFY_SPOOL_MAX)) || return 0
  { exec {fd}>>"${HG_SPOOL_DIR}/.bound.lock"; } 2>/dev/null || return 0
  if flock --wait 5 "${fd}"; then
    hg_notify_trim "${queue}"
  else
    hg_log WARN "could not bound the spool (${HG_SPOOL_DIR}/.bound.lock held for 5 s)" >&2
  fi
  exec {fd}>&-
}

# Brings QUEUE back to NOTIFY_SPOOL_MAX (caller holds .bound.lock).
hg_notify_trim() {
  local queue="$1" over dropped=0
  local -a files=()
  hg_notify_queue files "${queue}"
  over=$((${#files[@]} - HG_NOTIFY_SPOOL_MAX))
  ((over > 0)) || return 0
  if ((queue == HG_NOTIFY_ALERTS)); then
    hg_notify_merge "${files[@]:0:over+1}"
    hg_log WARN "spool over NOTIFY_SPOOL_MAX=${HG_NOTIFY_SPOOL_MAX}: merged the $((over + 1)) oldest alerts into one message (alerts are never dropped)" >&2
    return 0
  fi
  rm -f -- "${files[@]:0:over}"
  hg_notify_read_dropped dropped
  hg_notify_write_state "${HG_NOTIFY_STATE}-dropped" "$((dropped + over))" || true
  hg_log WARN "ban-tool messages over NOTIFY_SPOOL_MAX=${HG_NOTIFY_SPOOL_MAX}: dropped the ${over} oldest; $((dropped + over)) dropped since the last delivery" >&2
}

# Both queues bounded (the delivery run, before each message).
hg_notify_trim_all() {
  local fd queue
  { exec {fd}>>"${HG_SPOOL_DIR}/.bound.lock"; } 2>/dev/null || return 0
  if flock --wait 5 "${fd}"; then
    for queue in "${HG_NOTIFY_ALERTS}" "${HG_NOTIFY_EVENTS}"; do
      hg_notify_trim "${queue}"
    done
  fi
  exec {fd}>&-
}

# Merges the spooled FILE... (oldest first, no channel override) into one
# message in the first one's place: their texts, one after the other, a
# blank line apart, as long as they fit in HG_NOTIFY_MERGE_CHARS; the files
# merged are removed. A crash in between sends some twice, never none.
# Prints nothing; sets HG_NOTIFY_MERGED to the number merged.
hg_notify_merge() {
  local LC_ALL=C first="$1" file payload text="" tmp
  local -a merged=()
  HG_NOTIFY_MERGED=0
  for file in "$@"; do
    payload=""
    IFS= read -r -d '' payload <"${file}" 2>/dev/null || true
    payload="${payload%$'\n'}"
    if ! hg_notify_valid "${payload}" || [[ -n "${HG_MSG_CHANNEL}" ]]; then
      break
    fi
    ((${#text} + ${#HG_MSG_TEXT} + 4 <= HG_NOTIFY_MERGE_CHARS || ${#merged[@]} == 0)) || break
    [[ -z "${text}" ]] || text+='\n\n'
    text+="${HG_MSG_TEXT}"
    merged+=("${file}")
  done
  ((${#merged[@]} > 1)) || return 0
  tmp="${first%/*}/.tmp-${first##*/}"
  if ! { printf '{"text":"%s"}\n' "${text}" >"${tmp}" && mv -f -- "${tmp}" "${first}"; } 2>/dev/null; then
    rm -f -- "${tmp}" 2>/dev/null || true
    return 0
  fi
  rm -f -- "${merged[@]:1}"
  HG_NOTIFY_MERGED="${#merged[@]}"
}

hg_notify_read_dropped() {
  local -n _dropped="$1"
  local line=""
  _dropped=0
  [[ -f "${HG_NOTIFY_STATE}-dropped" ]] || return 0
  IFS= read -r line <"${HG_NOTIFY_STATE}-dropped" || true
  [[ "${line}" =~ ^[0-9]{1,9}$ ]] && _dropped=$((10#${line}))
  return 0
}

# VAR <- the webhook file's identity (inode, mtime, size): set-webhook writes
# a new file, so a refused webhook counts as rotated once this changes.
# Refuses a webhook file that others can read, that is not ours, or whose
# URL breaks the one URL rule (HG_URL_LINE_RE: https, RFC 3986 characters, no
# glob braces or brackets, the rule install set-webhook applies). Never
# prints the URL or the file's lines.
hg_notify_check_webhook() {
  local file="${HG_WEBHOOK_FILE}" stat_line owner mode line urls=0
  if [[ ! -f "${file}" || ! -r "${file}" ]]; then
    hg_log ERROR "webhook file ${file} is missing or unreadable" >&2
    return "${HG_EX_CONFIG}"
  fi
  stat_line="$(stat -c '%u %a %i:%.9Y:%s' -- "${file}")"
  [[ "${stat_line}" =~ ^([0-9]+)\ ([0-7]+)\ ([0-9:.]+)$ ]] || {
    hg_log ERROR "cannot stat the webhook file ${file}" >&2
    return "${HG_EX_CONFIG}"
  }
  owner="${BASH_REMATCH[1]}"
  mode="${BASH_REMATCH[2]}"
  HG_WEBHOOK_ID="${BASH_REMATCH[3]}"
  if [[ "${owner}" != "${EUID}" ]]; then
    hg_log ERROR "webhook file ${file} must be owned by uid ${EUID}" >&2
    return "${HG_EX_CONFIG}"
  fi
  if (((8#${mode} & 8#077) != 0)); then
    hg_log ERROR "webhook file ${file} is readable by group or others (mode ${mode}); chmod 600 it" >&2
    return "${HG_EX_CONFIG}"
  fi
  while IFS= read -r line || [[ -n "${line}" ]]; do
    [[ "${line}" =~ ^[[:space:]]*(#.*)?$ ]] && continue
    if [[ "${line}" =~ ${HG_URL_LINE_RE} ]]; then
      urls=$((urls + 1))
      continue
    fi
    if [[ "${line}" =~ ^[[:space:]]*(--)?url[[:space:]=:] ]]; then
      hg_log ERROR "webhook URL in ${file} is refused: not one https:// URL of the characters install set-webhook allows (URL not shown)" >&2
    else
      hg_log ERROR "webhook file ${file} may hold only one url = \"https://...\" line" >&2
    fi
    return "${HG_EX_CONFIG}"
  done <"${file}"
  if ((urls != 1)); then
    hg_log ERROR "webhook file ${file} must hold exactly one url = \"https://...\" line" >&2
    return "${HG_EX_CONFIG}"
  fi
  hg_notify_check_ca
}

# Refuses a CA bundle (NOTIFY_CA_FILE) that anyone but root could change:
# whoever writes it decides which server the webhook (a secret) is sent to.
# The file, and every directory above it, as given and with its links
# resolved, must be root's and writable by root only (a directory writable by
# all is allowed when sticky, as /tmp: nobody else can replace root's entry
# there). Names the file and the offending path; never fatal by itself.
hg_notify_check_ca() {
  local ca="${HG_NOTIFY_CA_FILE}" real cur comp line uid mode type path
  local -a paths=() parts=() lines=()
  [[ -n "${ca}" ]] || return 0
  real="$(realpath -e -- "${ca}" 2>/dev/null)" || {
    hg_log ERROR "NOTIFY_CA_FILE ${ca} does not exist" >&2
    return "${HG_EX_CONFIG}"
  }
  for path in "${ca}" "${real}"; do
    IFS=/ read -r -a parts <<<"${path#/}"
    cur=""
    paths+=(/)
    for comp in "${parts[@]}"; do
      [[ -n "${comp}" ]] || continue
      cur+="/${comp}"
      paths+=("${cur}")
    done
  done
  mapfile -t lines < <(stat -c '%u %a %F' -- "${paths[@]}" 2>/dev/null || true)
  if ((${#lines[@]} != ${#paths[@]})); then
    hg_log ERROR "NOTIFY_CA_FILE ${ca}: cannot check who may write it: refused" >&2
    return "${HG_EX_CONFIG}"
  fi
  for ((line = 0; line < ${#paths[@]}; line++)); do
    read -r uid mode type <<<"${lines[line]}"
    path="${paths[line]}"
    if ((uid != 0)); then
      hg_log ERROR "NOTIFY_CA_FILE ${ca}: ${path} belongs to uid ${uid}, not root: refused (only root may be able to change the CA bundle)" >&2
      return "${HG_EX_CONFIG}"
    fi
    [[ "${type}" != "symbolic link" ]] || continue
    if (((8#${mode} & 8#022) != 0)) && ! [[ "${type}" == directory && $((8#${mode} & 8#1000)) -ne 0 ]]; then
      hg_log ERROR "NOTIFY_CA_FILE ${ca}: ${path} is writable by a group or by all users: refused (only root may be able to change the CA bundle)" >&2
      return "${HG_EX_CONFIG}"
    fi
  done
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
    55 | 56) echo "connection reset" ;;
    77) echo "cannot read the CA file" ;;
    1) echo "protocol refused (https only)" ;;
    *) echo "curl error" ;;
  esac
}

# VAR <- the chat service's error text fit for a log line: the secret URL
# redacted (a service may echo the request's path), then at most
# HG_NOTIFY_ERROR_MAX bytes (cut after redaction, so that no part of a
# secret survives a cut), printable ASCII only (anything else becomes ?).
hg_notify_error_text() {
  local -n _text="$1"
  local LC_ALL=C body
  hg_redact body "$2"
  body="${body:0:HG_NOTIFY_ERROR_MAX}"
  body="${body//[![:print:]]/?}"
  _text="${body}"
}

# One POST of PAYLOAD with at most MAX_TIME seconds. Sets HG_POST_CURL (curl's
# exit code), HG_POST_STATUS, HG_POST_BODY and HG_POST_RETRY_AFTER (the raw
# header value). The URL is taken literally (--globoff: no {a,b} or [1-2]).
hg_notify_post() {
  local payload="$1" max_time="$2" out rest headers="" line
  local -a args=(
    --disable --silent --globoff --config "${HG_WEBHOOK_FILE}"
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
  [[ "${HG_POST_STATUS}" =~ ^[0-9]{3}$ ]] || HG_POST_STATUS=000
  rest="${out%$'\n'*}"
  [[ "${out}" == *$'\n'* ]] || rest=""
  # Header blocks (a proxy's CONNECT reply included) come before the body.
  while [[ "${rest}" == HTTP/* && "${rest}" == *$'\r\n\r\n'* ]]; do
    headers="${rest%%$'\r\n\r\n'*}"
    rest="${rest#*$'\r\n\r\n'}"
  done
  HG_POST_BODY="${rest}"
  while IFS= read -r line; do
    line="${line%$'\r'}"
    if [[ "${line,,}" =~ ^retry-after:[[:space:]]*(.*[^[:space:]])[[:space:]]*$ ]]; then
      HG_POST_RETRY_AFTER="${BASH_REMATCH[1]}"
    fi
  done <<<"${headers}"
}

# VAR <- milliseconds asked by a Retry-After VALUE: decimal seconds (09 is
# nine, not octal) or an HTTP date; empty when it is neither.
hg_retry_after_ms() {
  local -n _ms="$1"
  local value="$2" when now
  _ms=""
  if [[ "${value}" =~ ^[0-9]{1,9}$ ]]; then
    _ms=$((10#${value} * 1000))
  elif [[ "${value}" =~ ^[A-Za-z]{3},\ [0-9]{2}\ [A-Za-z]{3}\ [0-9]{4}\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ GMT$ ]] \
    && when="$(date -u -d "${value}" '+%s' 2>/dev/null)" && [[ "${when}" =~ ^[0-9]+$ ]]; then
    printf -v now '%(%s)T' -1
    _ms=$(((when > now ? when - now : 0) * 1000))
  fi
}

# Classifies the last post (HG_POST_*) of PAYLOAD. Sets HG_CLASS to
# delivered | transient | message (refused for good: dead letter) | channel
# (404 channel_not_found with a channel override: re-send without it) |
# webhook (the webhook is refused: keep everything), and HG_REASON.
hg_notify_classify() {
  local payload="$1" status="${HG_POST_STATUS}" error
  hg_notify_error_text error "${HG_POST_BODY}"
  HG_REASON="HTTP ${status} ${error}"
  if [[ "${status}" == 2[0-9][0-9] ]]; then
    # Delivered whatever curl said after the status line (a reset while the
    # body came): sending it again would make a duplicate.
    HG_CLASS=delivered
    return 0
  fi
  if ((HG_POST_CURL != 0)) || [[ "${status}" == 000 ]]; then
    HG_CLASS=transient
    HG_REASON="$(hg_curl_reason "${HG_POST_CURL}") (curl ${HG_POST_CURL})"
    return 0
  fi
  case "${status}" in
    408 | 429 | 5[0-9][0-9]) HG_CLASS=transient ;;
    4[0-9][0-9])
      if [[ "${HG_NOTIFY_WEBHOOK_REFUSALS}" == *" ${status}:${error} "* ]]; then
        HG_CLASS=webhook
      elif [[ "${status}:${error}" == 404:channel_not_found ]] && hg_notify_split "${payload}" \
        && [[ -n "${HG_MSG_CHANNEL}" ]]; then
        HG_CLASS=channel
      else
        HG_CLASS=message
      fi
      ;;
    *) HG_CLASS=transient ;;
  esac
}

# Splits PAYLOAD as hg_notify_json_to writes it: HG_MSG_TEXT <- the text as
# escaped in the JSON, HG_MSG_CHANNEL <- ',"channel":"#x"' or empty. 1 when
# PAYLOAD is not of that shape. (A text cannot hold ,"channel": with a bare
# quote: its quotes are escaped.)
hg_notify_split() {
  local LC_ALL=C rest="$1"
  HG_MSG_TEXT=""
  HG_MSG_CHANNEL=""
  [[ "${rest}" == '{"text":"'* ]] || return 1
  if [[ "${rest}" =~ ${HG_NOTIFY_CHANNEL_RE} ]]; then
    HG_MSG_CHANNEL="${BASH_REMATCH[0]%\}}"
    rest="${rest%"${BASH_REMATCH[0]}"}"
  else
    [[ "${rest}" == *'"}' ]] || return 1
    rest="${rest%\}}"
  fi
  rest="${rest#'{"text":"'}"
  [[ "${rest}" == *\" ]] || return 1
  HG_MSG_TEXT="${rest%\"}"
}

# Checks a spooled PAYLOAD is what hg_notify_json_to writes: one JSON object
# with a well-escaped text and an optional channel. Sets HG_REASON if not.
hg_notify_valid() {
  local LC_ALL=C payload="$1" text
  if [[ -z "${payload}" ]]; then
    HG_REASON="empty file"
    return 1
  fi
  if ! hg_notify_split "${payload}"; then
    HG_REASON="not a hostguard message (truncated or not JSON)"
    return 1
  fi
  text="${HG_MSG_TEXT//\\\\/}"
  text="${text//\\\"/}"
  if [[ "${text}" == *\"* || "${text}" == *[$'\x01'-$'\x1f']* || "${text}" == *\\ \
    || "${text}" == *\\[!nrtbfu/]* ]]; then
    HG_REASON="not valid JSON"
    return 1
  fi
}

# Moves FILE to the dead letters with WHY (one line beside it); NAME is its
# spool name (FILE may be its claimed .sending- copy).
hg_notify_bury() {
  local file="$1" why="$2" name="${3:-${1##*/}}" stamp
  if ! mv -f -- "${file}" "${HG_NOTIFY_DEAD}${name}" 2>/dev/null; then
    # Never sent again, whatever: a message that blocks all others is worse.
    rm -f -- "${file}"
    hg_log ERROR "dropped ${name}: ${why}; could not keep it as a dead letter" >&2
    return 0
  fi
  printf -v stamp '%(%Y-%m-%d %H:%M:%S)T' -1
  hg_notify_write_state "${HG_NOTIFY_DEAD}${name}.reason" "${stamp} ${why}" || true
  hg_log WARN "dead letter ${name}: ${why}; kept as ${HG_NOTIFY_DEAD}${name}, the next message goes on" >&2
  hg_notify_trim_dead
}

# Keeps at most NOTIFY_SPOOL_MAX dead letters (the oldest go, logged).
hg_notify_trim_dead() {
  local LC_COLLATE=C over file
  local -a dead=()
  shopt -s nullglob
  dead=("${HG_NOTIFY_DEAD}"msg-*.json)
  shopt -u nullglob
  over=$((${#dead[@]} - HG_NOTIFY_SPOOL_MAX))
  ((over > 0)) || return 0
  for file in "${dead[@]:0:over}"; do
    rm -f -- "${file}" "${file}.reason"
  done
  hg_log WARN "dead letters over NOTIFY_SPOOL_MAX=${HG_NOTIFY_SPOOL_MAX}: removed the ${over} oldest" >&2
}

hg_notify_note_error() {
  local stamp
  printf -v stamp '%(%Y-%m-%d %H:%M:%S)T' -1
  hg_notify_write_state "${HG_NOTIFY_STATE}-last-error" "${stamp} $1" || true
}

# Sleeps until MONO (monotonic ms), if that is in the future.
hg_sleep_until() {
  local until_ms="$1" now wait
  hg_mono_ms now
  wait=$((until_ms - now))
  ((wait > 0)) || return 0
  printf -v wait '%d.%03d' "$((wait / 1000))" "$((wait % 1000))"
  sleep "${wait}"
}

# Keeps posts of all runs at least HG_NOTIFY_PACE_MS apart, waiting never more
# than that and never past DEADLINE: a last-post time in the future (clock or
# reboot) costs at most one pace, and one far in the past none.
hg_notify_pace() {
  local deadline="$1" last="" now until
  [[ -f "${HG_SPOOL_DIR}/.last-post" ]] || return 0
  IFS= read -r last <"${HG_SPOOL_DIR}/.last-post" || true
  [[ "${last}" =~ ^[0-9]{1,15}$ ]] || return 0
  hg_mono_ms now
  until=$((10#${last} + HG_NOTIFY_PACE_MS))
  ((until <= now + HG_NOTIFY_PACE_MS)) || until=$((now + HG_NOTIFY_PACE_MS))
  ((until <= deadline)) || until="${deadline}"
  hg_sleep_until "${until}"
}

# Appends the count of dropped alerts to PAYLOAD's text (VAR <- new payload).
hg_notify_add_dropped() {
  local -n _payload="$1"
  local dropped="$2" note
  ((dropped > 0)) || return 0
  hg_notify_split "${_payload}" || return 0
  note="\\n(${dropped} ban-tool message(s) dropped while the chat service was unreachable)"
  _payload="{\"text\":\"${HG_MSG_TEXT}${note}\"${HG_MSG_CHANNEL}}"
}

# Delivers one spooled FILE before DEADLINE (monotonic ms). Returns
# 0 delivered (the file is removed) or gone meanwhile, 2 dead-lettered, 3 the
# webhook is refused for good (file kept), 1 transient failure (file kept).
# The file is claimed first (renamed to .sending-NAME) and put back when it
# stays: no writer bounding the spool drops or merges it while it goes out.
hg_notify_deliver() {
  local spooled="$1" deadline="$2" name="${1##*/}" rc=0
  local file="${HG_SPOOL_DIR}/.sending-${name}"
  mv -f -- "${spooled}" "${file}" 2>/dev/null || return 0
  hg_notify_deliver_claimed "${file}" "${deadline}" "${name}" || rc=$?
  if ((rc == 1 || rc == 3)) && [[ -e "${file}" ]]; then
    mv -f -- "${file}" "${spooled}"
    # Writers did not count it while it was out: bound its queue again.
    [[ "${name}" != msg-[0-9]-* ]] || hg_notify_bound_spool "${name:4:1}"
  fi
  return "${rc}"
}

# Puts back a message a killed run had claimed (caller holds the lock).
hg_notify_unclaim() {
  local file
  for file in "${HG_SPOOL_DIR}"/.sending-msg-*.json; do
    [[ -e "${file}" ]] || continue
    mv -f -- "${file}" "${HG_SPOOL_DIR}/${file##*/.sending-}"
  done
}

# hg_notify_deliver on the claimed FILE of spool name NAME.
hg_notify_deliver_claimed() {
  local file="$1" deadline="$2" name="$3" payload="" sent dropped=0
  local attempt now left max_time wait_ms channel_retry=0
  if ! IFS= read -r -d '' payload <"${file}"; then
    # read fails at end of file without a NUL: the normal case.
    [[ -e "${file}" ]] || return 0
  fi
  # Written whole (temp file, rename) and newline-terminated: anything else
  # is a crash's leftover or not ours, and would block every later message.
  if [[ -z "${payload}" ]]; then
    hg_notify_bury "${file}" "empty file" "${name}"
    return 2
  fi
  if [[ "${payload}" != *$'\n' ]]; then
    hg_notify_bury "${file}" "truncated (no final newline)" "${name}"
    return 2
  fi
  if ! hg_notify_valid "${payload%$'\n'}"; then
    hg_notify_bury "${file}" "${HG_REASON}" "${name}"
    return 2
  fi
  payload="${payload%$'\n'}"
  for ((attempt = 1; attempt <= HG_NOTIFY_ATTEMPTS; attempt++)); do
    hg_notify_pace "${deadline}"
    hg_mono_ms now
    left=$(((deadline - now) / 1000))
    if ((left < 1)); then
      hg_log WARN "not delivered ${name}: run budget of ${HG_NOTIFY_BUDGET}s spent; left in spool" >&2
      return 1
    fi
    max_time=$((left < HG_NOTIFY_MAX_TIME ? left : HG_NOTIFY_MAX_TIME))
    hg_notify_write_state "${HG_SPOOL_DIR}/.last-post" "${now}" || true
    hg_notify_read_dropped dropped
    sent="${payload}"
    hg_notify_add_dropped sent "${dropped}"
    hg_notify_post "${sent}" "${max_time}"
    hg_notify_classify "${payload}"
    case "${HG_CLASS}" in
      delivered)
        rm -f -- "${file}"
        ((dropped == 0)) || hg_notify_write_state "${HG_NOTIFY_STATE}-dropped" 0 || true
        hg_notify_write_state "${HG_NOTIFY_STATE}-last-delivery" "$(printf '%(%Y-%m-%d %H:%M:%S)T' -1) ${name}" || true
        if [[ "${HG_POST_BODY}" != ok ]]; then
          hg_log WARN "delivered ${name} (attempt ${attempt}), but the answer was ${HG_REASON}, not 200 ok" >&2
        else
          hg_log INFO "delivered ${name} (attempt ${attempt})"
        fi
        return 0
        ;;
      channel)
        if ((channel_retry == 0)) && hg_notify_split "${payload}"; then
          channel_retry=1
          payload="{\"text\":\"${HG_MSG_TEXT}\"}"
          # Kept without the override, so a crash now does not repeat the 404.
          { printf '%s\n' "${payload}" >"${file}"; } 2>/dev/null || true
          hg_log WARN "${name}: ${HG_REASON} for its channel override; re-sending it once to the webhook's own channel" >&2
          attempt=$((attempt - 1))
          continue
        fi
        hg_notify_note_error "${name}: ${HG_REASON}"
        hg_notify_bury "${file}" "${HG_REASON}" "${name}"
        return 2
        ;;
      message)
        hg_notify_note_error "${name}: ${HG_REASON}"
        hg_notify_bury "${file}" "${HG_REASON}" "${name}"
        return 2
        ;;
      webhook)
        hg_notify_note_error "${name}: ${HG_REASON}"
        hg_notify_refuse_webhook "${HG_REASON}"
        return 3
        ;;
    esac
    hg_notify_note_error "${name}: ${HG_REASON}"
    hg_log WARN "not delivered ${name}: ${HG_REASON} (attempt ${attempt}/${HG_NOTIFY_ATTEMPTS})" >&2
    ((attempt < HG_NOTIFY_ATTEMPTS)) || break
    wait_ms=$((attempt * 1000))
    if [[ -n "${HG_POST_RETRY_AFTER}" ]]; then
      hg_retry_after_ms wait_ms "${HG_POST_RETRY_AFTER}"
      [[ -n "${wait_ms}" ]] || wait_ms=$((attempt * 1000))
    fi
    hg_mono_ms now
    if ((now + wait_ms + 1000 > deadline)); then
      hg_log WARN "not retrying ${name}: the wait of ${wait_ms} ms would pass the run budget; left in spool" >&2
      return 1
    fi
    hg_sleep_until "$((now + wait_ms))"
  done
  return 1
}

# When the next message is the ban tool's and a burst of them waits (at
# least HG_NOTIFY_BURST), the oldest (up to HG_NOTIFY_MERGE_MAX) become one
# message (HG_NOTIFY_PENDING listed again).
hg_notify_merge_burst() {
  local -a events=()
  [[ "${HG_NOTIFY_PENDING[0]##*/}" == "msg-${HG_NOTIFY_EVENTS}-"* ]] || return 0
  hg_notify_queue events "${HG_NOTIFY_EVENTS}"
  ((${#events[@]} >= HG_NOTIFY_BURST)) || return 0
  hg_notify_merge "${events[@]:0:HG_NOTIFY_MERGE_MAX}"
  ((HG_NOTIFY_MERGED < 2)) || hg_log INFO "a burst of ${#events[@]} ban-tool messages: the oldest ${HG_NOTIFY_MERGED} go as one"
  hg_notify_pending
}

# Reads the refused-webhook state into HG_HOOK_* (HG_HOOK_STATE empty: fine).
hg_notify_read_webhook_state() {
  HG_HOOK_STATE="" HG_HOOK_ID="" HG_HOOK_SINCE=0 HG_HOOK_NEXT=0 HG_HOOK_INTERVAL=0 HG_HOOK_WHY=""
  [[ -f "${HG_NOTIFY_STATE}-webhook" ]] || return 0
  local line=""
  IFS= read -r line <"${HG_NOTIFY_STATE}-webhook" || true
  [[ "${line}" =~ ^refused\ ([0-9:.]+)\ ([0-9]+)\ ([0-9]+)\ ([0-9]+)\ (.*)$ ]] || return 0
  HG_HOOK_STATE=refused
  HG_HOOK_ID="${BASH_REMATCH[1]}"
  HG_HOOK_SINCE="${BASH_REMATCH[2]}"
  HG_HOOK_NEXT="${BASH_REMATCH[3]}"
  HG_HOOK_INTERVAL="${BASH_REMATCH[4]}"
  HG_HOOK_WHY="${BASH_REMATCH[5]}"
}

# Records that the chat service refused the webhook itself (WHY); the next
# probe waits, doubling from HG_NOTIFY_PROBE_FIRST to HG_NOTIFY_PROBE_MAX.
hg_notify_refuse_webhook() {
  local why="$1" now since interval="${HG_NOTIFY_PROBE_FIRST}"
  printf -v now '%(%s)T' -1
  since="${now}"
  hg_notify_read_webhook_state
  if [[ "${HG_HOOK_STATE}" == refused && "${HG_HOOK_ID}" == "${HG_WEBHOOK_ID}" ]]; then
    since="${HG_HOOK_SINCE}"
    interval=$((HG_HOOK_INTERVAL * 2))
    ((interval <= HG_NOTIFY_PROBE_MAX)) || interval="${HG_NOTIFY_PROBE_MAX}"
  fi
  hg_notify_write_state "${HG_NOTIFY_STATE}-webhook" \
    "refused ${HG_WEBHOOK_ID} ${since} $((now + interval)) ${interval} ${why}" || true
  hg_notify_pending
  hg_log ERROR "the chat service refuses the webhook itself (${why}): ${#HG_NOTIFY_PENDING[@]} message(s) kept in the spool; next probe in ${interval}s; rotate it with: install set-webhook" >&2
}

# 0 when a refused webhook should not be tried in this run (the same file,
# and its next probe not yet due); logs why once.
hg_notify_webhook_waits() {
  local now
  hg_notify_read_webhook_state
  [[ "${HG_HOOK_STATE}" == refused ]] || return 1
  if [[ "${HG_HOOK_ID}" != "${HG_WEBHOOK_ID}" ]]; then
    hg_log INFO "the webhook file changed since the chat service refused it (${HG_HOOK_WHY}): delivering again"
    rm -f -- "${HG_NOTIFY_STATE}-webhook"
    return 1
  fi
  printf -v now '%(%s)T' -1
  # A next-probe time further away than one interval means the clock went
  # back: probe now rather than wait for it.
  if ((now >= HG_HOOK_NEXT || HG_HOOK_NEXT - now > HG_HOOK_INTERVAL)); then
    hg_log INFO "probing the refused webhook (${HG_HOOK_WHY}) with the oldest message"
    HG_NOTIFY_PROBE=1
    return 1
  fi
  hg_notify_pending
  hg_log ERROR "the chat service refuses the webhook (${HG_HOOK_WHY}): ${#HG_NOTIFY_PENDING[@]} message(s) kept; next probe in $((HG_HOOK_NEXT - now))s; rotate it with: install set-webhook" >&2
  return 0
}

# The pid file of the run holding the spool lock: "pid start-time" (the
# start time tells a reused pid apart).
hg_notify_proc_start() {
  local -n _start="$1"
  local stat="" rest
  _start=""
  [[ -r "/proc/$2/stat" ]] || return 1
  IFS= read -r stat <"/proc/$2/stat" || return 1
  rest="${stat##*) }"
  read -r -a stat <<<"${rest}"
  _start="${stat[19]:-}"
}

# 0 when a run that delivers holds the lock now: a message spooled now is
# sent by it (it re-lists the spool after each message and once more after
# releasing the lock), so a ban event need not start another.
hg_notify_flush_running() {
  local pid="" started="" now_start
  [[ -f "${HG_NOTIFY_STATE}-flush.pid" ]] || return 1
  read -r pid started <"${HG_NOTIFY_STATE}-flush.pid" 2>/dev/null || return 1
  [[ "${pid}" =~ ^[0-9]+$ && -n "${started}" ]] || return 1
  hg_notify_proc_start now_start "${pid}" || return 1
  [[ "${now_start}" == "${started}" ]]
}

# Delivers the spool oldest first under a lock, within NOTIFY_BUDGET seconds.
# A transient failure stops the run (order kept for the next one); a message
# refused for good goes to the dead letters and the next goes on; a refused webhook keeps
# everything. After releasing the lock the spool is listed once more: a
# message spooled by a run that found the lock taken is never stranded.
hg_notify_flush() {
  local began deadline fd rc=0 my_start
  local -a lock_opts=(--wait "${HG_NOTIFY_LOCK_WAIT}")
  hg_notify_pending
  ((${#HG_NOTIFY_PENDING[@]} > 0)) || return 0
  hg_notify_check_webhook || return "${HG_EX_CONFIG}"
  hg_mono_ms began
  deadline=$((began + HG_NOTIFY_BUDGET * 1000))
  ((HG_NOTIFY_NOWAIT == 0)) || lock_opts=(--nonblock)
  HG_NOTIFY_PROBE=0
  local again=0
  while :; do
    exec {fd}>>"${HG_SPOOL_DIR}/.lock"
    if ! flock "${lock_opts[@]}" "${fd}"; then
      exec {fd}>&-
      # After a pass of our own, the run that took the lock over sends the rest.
      ((again == 0)) || return 0
      hg_notify_pending
      hg_log WARN "another delivery run holds the spool lock; ${#HG_NOTIFY_PENDING[@]} message(s) left to it or the next run" >&2
      return "${HG_EX_TEMPFAIL}"
    fi
    hg_notify_proc_start my_start "${BASHPID}" || my_start=""
    hg_notify_write_state "${HG_NOTIFY_STATE}-flush.pid" "${BASHPID} ${my_start}" || true
    hg_notify_flush_locked "${deadline}" || rc=$?
    rm -f -- "${HG_NOTIFY_STATE}-flush.pid"
    exec {fd}>&-
    ((rc == 0)) || return "${rc}"
    hg_notify_pending
    ((${#HG_NOTIFY_PENDING[@]} > 0)) || return 0
    # Spooled after the last listing by a run that found the lock taken:
    # deliver it now, unless another run already took the lock over.
    lock_opts=(--nonblock)
    again=1
  done
}

# The body of hg_notify_flush, lock held.
hg_notify_flush_locked() {
  local deadline="$1" result
  hg_notify_unclaim
  if hg_notify_webhook_waits; then
    return "${HG_EX_NOPERM}"
  fi
  while :; do
    hg_notify_trim_all
    hg_notify_pending
    if ((${#HG_NOTIFY_PENDING[@]} == 0)); then
      hg_notify_make_reserve
      return 0
    fi
    hg_notify_merge_burst
    result=0
    hg_notify_deliver "${HG_NOTIFY_PENDING[0]}" "${deadline}" || result=$?
    case "${result}" in
      0 | 2)
        if ((HG_NOTIFY_PROBE)); then
          rm -f -- "${HG_NOTIFY_STATE}-webhook"
          hg_log INFO "the webhook answers again: delivering the spool"
          HG_NOTIFY_PROBE=0
        fi
        ;;
      3)
        return "${HG_EX_NOPERM}"
        ;;
      *)
        hg_notify_pending
        hg_log WARN "${#HG_NOTIFY_PENDING[@]} message(s) left in spool for the next run" >&2
        return "${HG_EX_TEMPFAIL}"
        ;;
    esac
  done
}
