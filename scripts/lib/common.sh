# shellcheck shell=bash
# shellcheck disable=SC2034 # the paths are used by the scripts that source this file
# Shared helpers of the bash that stays (install and its libraries): paths,
# settings, logging with redaction. The host agent (notifier, monitors) is
# Python: scripts/hostguard/.
# Sourced, never run. Reads HOSTGUARD_ROOT (tests only) and hostguard.conf.

readonly HG_ROOT="${HOSTGUARD_ROOT:-}"
# hostguard's own places, each spelled once. *_PATH: the path as on the host
# (what install records in its manifests and checks with safe_root_dir);
# *_DIR and *_FILE: the same under HG_ROOT (a test's --root), what the
# scripts open.
readonly HG_LIB_PATH=/usr/local/lib/hostguard
readonly HG_CONF_PATH=/etc/hostguard
readonly HG_SETTINGS_PATH="${HG_CONF_PATH}/hostguard.conf"
readonly HG_WEBHOOK_PATH="${HG_CONF_PATH}/webhook.curlrc"
readonly HG_HEARTBEAT_PATH="${HG_CONF_PATH}/heartbeat.curlrc"
readonly HG_STATE_PATH=/var/lib/hostguard
readonly HG_SPOOL_PATH=/var/spool/hostguard
readonly HG_LOG_PATH=/var/log/hostguard
readonly HG_CONF_DIR="${HG_ROOT}${HG_CONF_PATH}"
readonly HG_SETTINGS_FILE="${HG_ROOT}${HG_SETTINGS_PATH}"
readonly HG_WEBHOOK_FILE="${HG_ROOT}${HG_WEBHOOK_PATH}"
readonly HG_HEARTBEAT_FILE="${HG_ROOT}${HG_HEARTBEAT_PATH}"
readonly HG_STATE_DIR="${HG_ROOT}${HG_STATE_PATH}"
readonly HG_SPOOL_DIR="${HG_ROOT}${HG_SPOOL_PATH}"

# BEGIN settings table (generated from components/settings.ts by `npm run settings:gen`; do not edit)
# Defaults of every setting; hg_load_settings refuses keys not listed here.
declare -A HG_DEFAULTS=(
  [CPU_THRESHOLD]='80'
  [MEMORY_THRESHOLD]='90'
  [DISK_THRESHOLD]='90'
  [CONTAINER_MONITOR]='true'
  [CONTAINER_RUNTIME]='docker'
  [CONTAINER_RUNTIME_TIMEOUT]='60'
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
  [CONTAINER_MONITOR]='^(true|false)$'
  [CONTAINER_RUNTIME]='^([A-Za-z0-9_][A-Za-z0-9._-]{0,63}|(/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)$'
  [CONTAINER_RUNTIME_TIMEOUT]='^(0|[1-9][0-9]{0,8})$'
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
  [CONTAINER_RUNTIME_TIMEOUT]='1 300'
  [NOTIFY_MAX_TIME]='1 300'
  [NOTIFY_ATTEMPTS]='1 20'
  [NOTIFY_BUDGET]='1 55'
  [NOTIFY_SPOOL_MAX]='1 100000'
  [ALERT_REPEAT_INTERVAL]='0 2592000'
  [ALERT_AFTER_RUNS]='1 100'
)
readonly HG_RANGES
# The one URL rule of the webhook and the heartbeat URL (RULES.httpsUrl): the stack
# validator, install set-webhook/set-heartbeat and the host agent (urlfile.py) all use it.
readonly HG_URL_RE='^https://([A-Za-z0-9._~%!$&'\''()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'\''()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'\''()*+,;=:@/?-]*)?$'
# A curl config line holding one such URL (quoted or not) and nothing else curl would act on.
readonly HG_URL_LINE_RE='^[[:space:]]*(--)?url[[:space:]]*[=:]?[[:space:]]*("https://([A-Za-z0-9._~%!$&'\''()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'\''()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'\''()*+,;=:@/?-]*)?"|https://([A-Za-z0-9._~%!$&'\''()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'\''()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'\''()*+,;=:@/?-]*)?)[[:space:]]*$'
# END settings table
# BEGIN file table grammar (generated from components/fileTable.ts by `npm run settings:gen`; do not edit)
readonly HG_PARTS=(base monitors bantool web)
readonly HG_FILE_ROW_RE='^[[:blank:]]*(base|monitors|bantool|web)[[:blank:]]+([A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*[[:blank:]]+/((([A-Za-z0-9_-]|[.][A-Za-z0-9_-]|[.][.][A-Za-z0-9_.-])[A-Za-z0-9_.-]*)/)*(([A-Za-z0-9_-]|[.][A-Za-z0-9_-]|[.][.][A-Za-z0-9_.-])[A-Za-z0-9_.-]*)[[:blank:]]+0(755|644)[[:blank:]]*$'
readonly HG_FILE_SKIP_RE='^[[:blank:]]*(#.*)?$'
readonly HG_FILE_ROW_ALLOWED='a part of base, monitors, bantool, web; a relative source path (no segment starting with a dot, no *); an absolute destination file (no trailing /); mode 0755 or 0644'
# END file table grammar

hg_die() {
  local text
  hg_redact text "$*"
  printf 'hostguard: %s\n' "${text}" >&2
  exit 1
}

# A log line that cannot be written (the log's disk is full) never ends the
# script: what it was doing (delivering an alert) matters more.
hg_log() {
  local level="$1" text
  shift
  hg_redact text "$*"
  { printf '%(%Y-%m-%d %H:%M:%S)T %s %s\n' -1 "${level}" "${text}"; } 2>/dev/null || true
}

# ---- redaction of the secret URLs ---------------------------------------------
# (The host agent redacts the same forms with scripts/hostguard/redact.py.)
# A chat service (or a proxy) may echo the request in an error ("Cannot POST
# /services/T000/B000/..."): every text that leaves the host (a log line, an
# error, a state file `status` prints, a dead letter's reason, the output of
# `hostguard-notify --test`) passes hg_redact first. It replaces every form
# of the webhook and heartbeat URLs: the whole URL, host and path, the path
# (and query) alone, its secret segments (the last one, and any of 16
# characters or more), each percent-encoded (either case) and JSON-escaped.
readonly HG_REDACTED='[secret URL redacted]'
# Pieces shorter than this are not secrets of their own (/, /services).
readonly HG_REDACT_MIN=8
HG_REDACT_LOADED=0
declare -a HG_REDACT_PIECES=()

# VAR <- TEXT percent-encoded as a URL's reserved characters are: each of
# % ! $ & ' ( ) * + , ; = : @ / ? [ ] as %XX (upper case hex; with a second
# argument "lower", lower case). A URL set-webhook accepts holds no other
# character that needs it. Builtins only (the text is a secret: no argv).
readonly HG_URL_RESERVED=('%' '!' '$' '&' "'" '(' ')' '*' '+' ',' ';' '=' ':' '@' '/' '?' '[' ']')
readonly HG_URL_ESCAPES=(25 21 24 26 27 28 29 2A 2B 2C 3B 3D 3A 40 2F 3F 5B 5D)
hg_percent_encode() {
  local -n _pct="$1"
  local text="$2" case="${3:-upper}" i hex
  for i in "${!HG_URL_RESERVED[@]}"; do
    [[ "${text}" == *"${HG_URL_RESERVED[i]}"* ]] || continue
    hex="${HG_URL_ESCAPES[i]}"
    [[ "${case}" != lower ]] || hex="${hex,,}"
    text="${text//"${HG_URL_RESERVED[i]}"/%${hex}}"
  done
  _pct="${text}"
}

# Adds PIECE and its encoded forms to HG_REDACT_PIECES (long enough ones).
hg_redact_add() {
  local piece="$1" encoded lower
  ((${#piece} >= HG_REDACT_MIN)) || return 0
  HG_REDACT_PIECES+=("${piece}" "${piece//\//\\/}")
  hg_percent_encode encoded "${piece}"
  hg_percent_encode lower "${piece}" lower
  [[ "${encoded}" == "${piece}" ]] || HG_REDACT_PIECES+=("${encoded}" "${lower}")
}

# Loads the pieces of the URLs in the webhook and heartbeat files once per
# process (root's files; read with builtins only).
hg_redact_load() {
  local file line url rest path segment piece
  local -a segments=()
  HG_REDACT_LOADED=1
  HG_REDACT_PIECES=()
  for file in "${HG_WEBHOOK_FILE}" "${HG_HEARTBEAT_FILE}"; do
    [[ -f "${file}" && -r "${file}" ]] || continue
    while IFS= read -r line || [[ -n "${line}" ]]; do
      [[ "${line}" =~ [\"[:space:]=:]?([A-Za-z][A-Za-z0-9+.-]*://[^\"[:space:]]+) ]] || continue
      url="${BASH_REMATCH[1]}"
      rest="${url#*://}"
      path=""
      [[ "${rest}" != */* ]] || path="/${rest#*/}"
      [[ -n "${path}" || "${rest}" != *\?* ]] || path="?${rest#*\?}"
      hg_redact_add "${url}"
      hg_redact_add "${rest}"
      hg_redact_add "${path}"
      hg_redact_add "${path#/}"
      [[ "${path}" != *\?* ]] || hg_redact_add "${path#*\?}"
      IFS=/ read -r -a segments <<<"${path%%\?*}"
      for segment in "${segments[@]}"; do
        ((${#segment} < 16)) || hg_redact_add "${segment}"
      done
      ((${#segments[@]} == 0)) || hg_redact_add "${segments[-1]}"
    done <"${file}" 2>/dev/null || true
  done
  # Longest first, so that a URL is replaced whole, not in parts.
  local -a sorted=()
  local len max=0
  for piece in "${HG_REDACT_PIECES[@]}"; do
    ((${#piece} <= max)) || max="${#piece}"
  done
  for ((len = max; len >= HG_REDACT_MIN; len--)); do
    for piece in "${HG_REDACT_PIECES[@]}"; do
      ((${#piece} != len)) || sorted+=("${piece}")
    done
  done
  HG_REDACT_PIECES=("${sorted[@]}")
}

# VAR <- TEXT with every form of the secret URLs replaced by HG_REDACTED.
hg_redact() {
  local -n _redacted="$1"
  local _r_text="$2" _r_piece
  ((HG_REDACT_LOADED)) || hg_redact_load
  for _r_piece in "${HG_REDACT_PIECES[@]}"; do
    [[ "${_r_text}" != *"${_r_piece}"* ]] || _r_text="${_r_text//"${_r_piece}"/${HG_REDACTED}}"
  done
  _redacted="${_r_text}"
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

# Prints TEXT without its leading and trailing white space.
trim() {
  local text="$1"
  text="${text#"${text%%[![:space:]]*}"}"
  text="${text%"${text##*[![:space:]]}"}"
  printf '%s' "${text}"
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
