# shellcheck shell=bash
# shellcheck disable=SC2034 # the paths are used by the scripts that source this file
# Shared helpers for every hostguard script: paths, settings, logging, JSON.
# Sourced, never run. Reads HOSTGUARD_ROOT (tests only) and hostguard.conf.

readonly HG_ROOT="${HOSTGUARD_ROOT:-}"
readonly HG_CONF_DIR="${HG_ROOT}/etc/hostguard"
readonly HG_SETTINGS_FILE="${HG_CONF_DIR}/hostguard.conf"
readonly HG_WEBHOOK_FILE="${HG_CONF_DIR}/webhook.curlrc"
readonly HG_HEARTBEAT_FILE="${HG_CONF_DIR}/heartbeat.curlrc"
readonly HG_STATE_DIR="${HG_ROOT}/var/lib/hostguard"
readonly HG_SPOOL_DIR="${HG_ROOT}/var/spool/hostguard"

# BEGIN settings table (generated from components/settings.ts by `npm run settings:gen`; do not edit)
# Defaults of every setting; hg_load_settings refuses keys not listed here.
declare -A HG_DEFAULTS=(
  [CPU_THRESHOLD]='80'
  [MEMORY_THRESHOLD]='90'
  [DISK_THRESHOLD]='90'
  [CONTAINER_RUNTIME]='docker'
  [CONTAINER_WATCH]=''
  [NOTIFY_CA_FILE]=''
  [NOTIFY_MAX_TIME]='10'
  [NOTIFY_ATTEMPTS]='3'
  [NOTIFY_BUDGET]='40'
  [NOTIFY_SPOOL_MAX]='1000'
  [SLACK_CHANNEL]='alerts'
  [ALERT_HOST_LABEL]='false'
  [ALERT_REPEAT_INTERVAL]='0'
  [ALERT_SEND_RESOLVED]='false'
  [ALERT_AFTER_RUNS]='1'
  [NGINX_SERVER_CONF]=''
  [APP_PROPERTIES]=''
  [HOST_NAME]=''
)
readonly HG_DEFAULTS
# Which values each key accepts, as an extended regex (a list: each name, trimmed).
declare -A HG_PATTERNS=(
  [CPU_THRESHOLD]='^(0|[1-9][0-9]{0,2})(\.[0-9]{1,2})?$'
  [MEMORY_THRESHOLD]='^(0|[1-9][0-9]{0,2})(\.[0-9]{1,2})?$'
  [DISK_THRESHOLD]='^(0|[1-9][0-9]{0,2})(\.[0-9]{1,2})?$'
  [CONTAINER_RUNTIME]='^([A-Za-z0-9_][A-Za-z0-9._-]{0,63}|(/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)$'
  [CONTAINER_WATCH]='^[^[:cntrl:],]{1,128}$'
  [NOTIFY_CA_FILE]='^((/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$'
  [NOTIFY_MAX_TIME]='^(0|[1-9][0-9]{0,8})$'
  [NOTIFY_ATTEMPTS]='^(0|[1-9][0-9]{0,8})$'
  [NOTIFY_BUDGET]='^(0|[1-9][0-9]{0,8})$'
  [NOTIFY_SPOOL_MAX]='^(0|[1-9][0-9]{0,8})$'
  [SLACK_CHANNEL]='^[a-z0-9][a-z0-9._-]{0,79}$'
  [ALERT_HOST_LABEL]='^(true|false)$'
  [ALERT_REPEAT_INTERVAL]='^((0|[1-9][0-9]{0,8})|((0|[1-9][0-9]{0,8})[smhdw])+)$'
  [ALERT_SEND_RESOLVED]='^(true|false)$'
  [ALERT_AFTER_RUNS]='^(0|[1-9][0-9]{0,8})$'
  [NGINX_SERVER_CONF]='^((/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$'
  [APP_PROPERTIES]='^((/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$'
  [HOST_NAME]='^([a-z0-9][a-z0-9-]{0,39})?$'
)
readonly HG_PATTERNS
# Keys holding comma-separated lists of names.
declare -A HG_LISTS=(
  [CONTAINER_WATCH]=1
)
readonly HG_LISTS
# Inclusive "min max" of the numeric keys.
declare -A HG_RANGES=(
  [CPU_THRESHOLD]='0 100'
  [MEMORY_THRESHOLD]='0 100'
  [DISK_THRESHOLD]='0 100'
  [NOTIFY_MAX_TIME]='1 300'
  [NOTIFY_ATTEMPTS]='1 20'
  [NOTIFY_BUDGET]='1 55'
  [NOTIFY_SPOOL_MAX]='1 100000'
  [ALERT_REPEAT_INTERVAL]='0 2592000'
  [ALERT_AFTER_RUNS]='1 100'
)
readonly HG_RANGES
# The one URL rule of the webhook and the heartbeat URL (RULES.httpsUrl): the stack
# validator, install set-webhook/set-heartbeat, notify.sh and heartbeat.sh all use it.
readonly HG_URL_RE='^https://([A-Za-z0-9._~%!$&'\''()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'\''()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'\''()*+,;=:@/?-]*)?$'
# A curl config line holding one such URL (quoted or not) and nothing else curl would act on.
readonly HG_URL_LINE_RE='^[[:space:]]*(--)?url[[:space:]]*[=:]?[[:space:]]*("https://([A-Za-z0-9._~%!$&'\''()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'\''()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'\''()*+,;=:@/?-]*)?"|https://([A-Za-z0-9._~%!$&'\''()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'\''()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'\''()*+,;=:@/?-]*)?)[[:space:]]*$'
# END settings table
# BEGIN file table grammar (generated from components/fileTable.ts by `npm run settings:gen`; do not edit)
readonly HG_PARTS=(base monitors bantool web)
readonly HG_FILE_ROW_RE='^[[:blank:]]*(base|monitors|bantool|web)[[:blank:]]+(([A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*[[:blank:]]+/([A-Za-z0-9_.-]+/)*([A-Za-z0-9_.-]+)?|([A-Za-z0-9_][A-Za-z0-9_.-]*/)*([A-Za-z0-9_][A-Za-z0-9_.-]*)?[*][A-Za-z0-9_.*-]*[[:blank:]]+/([A-Za-z0-9_.-]+/)*)[[:blank:]]+0(755|644)[[:blank:]]*$'
readonly HG_FILE_SKIP_RE='^[[:blank:]]*(#.*)?$'
readonly HG_FILE_ROW_ALLOWED='a part of base, monitors, bantool, web; a relative source path (no segment starting with a dot), with * only in its last segment and then a destination folder; an absolute destination (ending in / for a folder); mode 0755 or 0644'
# END file table grammar

hg_die() {
  printf 'hostguard: %s\n' "$*" >&2
  exit 1
}

# A log line that cannot be written (the log's disk is full) never ends the
# script: what it was doing (delivering an alert) matters more.
hg_log() {
  local level="$1"
  shift
  { printf '%(%Y-%m-%d %H:%M:%S)T %s %s\n' -1 "${level}" "$*"; } 2>/dev/null || true
}

# Sets HG_<KEY> for every known key: the file's value, else the default.
# A value must match the key's pattern (each name of a list) and lie in its
# range: the rules of components/settings.ts, which generates the block above.
hg_load_settings() {
  local file="${1:-${HG_SETTINGS_FILE}}"
  local key value line number=0
  for key in "${!HG_DEFAULTS[@]}"; do
    printf -v "HG_${key}" '%s' "${HG_DEFAULTS[${key}]}"
  done
  [[ -e "${file}" ]] || return 0
  while IFS= read -r line || [[ -n "${line}" ]]; do
    number=$((number + 1))
    [[ "${line}" =~ ^[[:space:]]*(#.*)?$ ]] && continue
    [[ "${line}" =~ ^([A-Z_]+)=(.*)$ ]] \
      || hg_die "${file}:${number}: expected KEY=VALUE"
    key="${BASH_REMATCH[1]}"
    value="${BASH_REMATCH[2]}"
    [[ -v "HG_DEFAULTS[${key}]" ]] \
      || hg_die "${file}:${number}: unknown key ${key}"
    hg_setting_ok "${key}" "${value}" \
      || hg_die "${file}:${number}: invalid value for ${key}"
    printf -v "HG_${key}" '%s' "${value}"
  done <"${file}"
}

# Succeeds when VALUE is allowed for KEY. Byte-wise (C locale) matching, as
# JavaScript's RegExp matches the same patterns.
hg_setting_ok() {
  local key="$1" value="$2" name min max
  local LC_ALL=C
  local -a names=("${value}")
  if [[ -v "HG_LISTS[${key}]" ]]; then
    [[ -z "${value}" ]] && return 0
    [[ "${value}" != *, && "${value}" != ,* ]] || return 1
    IFS=, read -r -a names <<<"${value}"
  fi
  for name in "${names[@]}"; do
    if [[ -v "HG_LISTS[${key}]" ]]; then
      name="${name#"${name%%[![:space:]]*}"}"
      name="${name%"${name##*[![:space:]]}"}"
    fi
    [[ "${name}" =~ ${HG_PATTERNS[${key}]} ]] || return 1
  done
  [[ -v "HG_RANGES[${key}]" ]] || return 0
  read -r min max <<<"${HG_RANGES[${key}]}"
  # A duration's range is in seconds.
  if [[ "${value}" == *[smhdw] ]]; then
    hg_duration_seconds value "${value}" || return 1
  fi
  hg_hundredths value "${value}" || return 1
  ((value >= min * 100 && value <= max * 100))
}

# OUT <- the decimal TEXT (digits, at most 2 decimals) in hundredths.
hg_hundredths() {
  local -n _hg_out="$1"
  local text="$2" fraction
  [[ "${text}" =~ ^([0-9]{1,12})(\.([0-9]{1,2}))?$ ]] || return 1
  fraction="${BASH_REMATCH[3]}00"
  _hg_out=$((10#${BASH_REMATCH[1]} * 100 + 10#${fraction:0:2}))
}

# Slack cuts a message's text at 40,000 characters; a longer one is cut here,
# with a visible marker, so the reader knows.
readonly HG_TEXT_MAX=40000
readonly HG_TEXT_CUT_MARKER=$'\n''[... cut: the message was longer than 40,000 characters]'
# One well-formed UTF-8 character (no NUL: bash strings cannot hold one).
readonly HG_UTF8_CHAR=$'([\x01-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf][\x80-\xbf]|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf][\x80-\xbf]|[\xf1-\xf3][\x80-\xbf][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf][\x80-\xbf])'
readonly HG_UTF8_REPLACEMENT=$'\xef\xbf\xbd'
# Repairing invalid UTF-8 goes chunk by chunk and, inside a chunk, window by
# window: a bash substring copies the whole variable first, so slicing the
# full text per step would be quadratic.
readonly HG_UTF8_CHUNK=1024
readonly HG_UTF8_WINDOW=64

# VAR <- TEXT with every byte that is not part of well-formed UTF-8 replaced
# by U+FFFD. Linear: ASCII and valid UTF-8 take one match; a text with bad
# bytes is repaired chunk by chunk.
hg_utf8_repair() {
  local -n _repaired="$1"
  local LC_ALL=C _u_text="$2" _u_at _u_len _u_chunk _u_carry="" _u_off _u_clen _u_piece
  # Pieces in an array, joined once: appending to a string copies it.
  local -a _u_out=()
  if [[ "${_u_text}" != *[$'\x80'-$'\xff']* || "${_u_text}" =~ ^${HG_UTF8_CHAR}*$ ]]; then
    _repaired="${_u_text}"
    return 0
  fi
  _u_len="${#_u_text}"
  for ((_u_at = 0; _u_at < _u_len; _u_at += HG_UTF8_CHUNK)); do
    _u_chunk="${_u_carry}${_u_text:_u_at:HG_UTF8_CHUNK}"
    _u_carry=""
    _u_clen="${#_u_chunk}"
    for ((_u_off = 0; _u_off < _u_clen; )); do
      [[ "${_u_chunk:_u_off:HG_UTF8_WINDOW}" =~ ^${HG_UTF8_CHAR}* ]]
      _u_piece="${BASH_REMATCH[0]}"
      if [[ -n "${_u_piece}" ]]; then
        _u_out+=("${_u_piece}")
        _u_off=$((_u_off + ${#_u_piece}))
      elif ((_u_clen - _u_off < 4 && _u_at + HG_UTF8_CHUNK < _u_len)); then
        # Maybe a character cut by the chunk's end: retry with the next chunk.
        _u_carry="${_u_chunk:_u_off}"
        break
      else
        _u_out+=("${HG_UTF8_REPLACEMENT}")
        _u_off=$((_u_off + 1))
      fi
    done
  done
  printf -v _repaired '%s' "${_u_out[@]}"
}

# VAR <- TEXT cut to HG_TEXT_MAX characters, the marker included.
hg_text_cut() {
  local -n _cut="$1"
  local LC_ALL=C.UTF-8 _c_text="$2"
  ((${#_c_text} > HG_TEXT_MAX)) || { _cut="${_c_text}"; return 0; }
  _cut="${_c_text:0:HG_TEXT_MAX - ${#HG_TEXT_CUT_MARKER}}${HG_TEXT_CUT_MARKER}"
}

# The control characters other than \n \r \t, and their JSON escapes (built
# once, with builtins).
declare -a HG_JSON_CONTROLS=() HG_JSON_ESCAPES=()
hg_json_tables() {
  local code hex char escape
  for code in {1..8} 11 12 {14..31} 127; do
    printf -v hex '%02x' "${code}"
    printf -v char '%b' "\\x${hex}"
    printf -v escape '\\u%04x' "${code}"
    HG_JSON_CONTROLS+=("${char}")
    HG_JSON_ESCAPES+=("${escape}")
  done
}
hg_json_tables

# Prints TEXT as a JSON string literal: invalid UTF-8 repaired (U+FFFD), cut
# at HG_TEXT_MAX characters, then backslash first, the quote, and every
# control character escaped. Linear in the text's length: only whole-string
# substitutions, in the C locale (byte-wise).
hg_json_string() {
  local quoted
  hg_json_quote quoted "$1"
  printf '%s' "${quoted}"
}

# VAR <- TEXT as a JSON string literal (hg_json_string without a subshell).
hg_json_quote() {
  local -n _quoted="$1"
  local text="$2" i
  hg_utf8_repair text "${text}"
  if ((${#text} > HG_TEXT_MAX)); then
    hg_text_cut text "${text}"
    hg_utf8_repair text "${text}"
  fi
  local LC_ALL=C
  [[ "${text}" != *\\* ]] || text="${text//\\/\\\\}"
  [[ "${text}" != *\"* ]] || text="${text//\"/\\\"}"
  [[ "${text}" != *$'\n'* ]] || text="${text//$'\n'/\\n}"
  [[ "${text}" != *$'\r'* ]] || text="${text//$'\r'/\\r}"
  [[ "${text}" != *$'\t'* ]] || text="${text//$'\t'/\\t}"
  if [[ "${text}" == *[$'\x01'-$'\x1f'$'\x7f']* ]]; then
    for i in "${!HG_JSON_CONTROLS[@]}"; do
      [[ "${text}" == *"${HG_JSON_CONTROLS[i]}"* ]] || continue
      text="${text//"${HG_JSON_CONTROLS[i]}"/${HG_JSON_ESCAPES[i]}}"
    done
  fi
  _quoted="\"${text}\""
}

# OUT <- the seconds of a duration as the settings write it: plain seconds
# (`0`, `90`) or number-unit pairs (`30m`, `1h30m`; s m h d w).
hg_duration_seconds() {
  local -n _hg_secs="$1"
  local rest="$2" number unit total=0
  if [[ "${rest}" =~ ^[0-9]+$ ]]; then
    _hg_secs=$((10#${rest}))
    return 0
  fi
  while [[ "${rest}" =~ ^([0-9]+)([smhdw])(.*)$ ]]; do
    number=$((10#${BASH_REMATCH[1]}))
    unit="${BASH_REMATCH[2]}"
    rest="${BASH_REMATCH[3]}"
    case "${unit}" in
      s) total=$((total + number)) ;;
      m) total=$((total + number * 60)) ;;
      h) total=$((total + number * 3600)) ;;
      d) total=$((total + number * 86400)) ;;
      w) total=$((total + number * 604800)) ;;
    esac
  done
  [[ -z "${rest}" ]] || return 1
  _hg_secs="${total}"
}

# OUT <- TEXT as posted: with ALERT_HOST_LABEL=true it starts with
# "[HOST] ", HOST being HOST_NAME (the stack's name for the host) or else the
# kernel's host name, so a fleet's alerts say where they come from in every
# chat client (plain text, no markup). Otherwise TEXT unchanged (the SPEC).
hg_labelled_text() {
  local -n _hg_labelled="$1"
  local _hg_host="${HG_HOST_NAME:-}"
  if [[ "${HG_ALERT_HOST_LABEL:-false}" == true ]]; then
    [[ -n "${_hg_host}" ]] || _hg_host="${HOSTNAME:-unknown}"
    _hg_labelled="[${_hg_host}] $2"
  else
    _hg_labelled="$2"
  fi
}
