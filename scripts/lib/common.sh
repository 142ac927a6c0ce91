# shellcheck shell=bash
# shellcheck disable=SC2034 # the paths are used by the scripts that source this file
# Shared helpers for every hostguard script: paths, settings, logging, JSON.
# Sourced, never run. Reads HOSTGUARD_ROOT (tests only) and hostguard.conf.

readonly HG_ROOT="${HOSTGUARD_ROOT:-}"
readonly HG_CONF_DIR="${HG_ROOT}/etc/hostguard"
readonly HG_SETTINGS_FILE="${HG_CONF_DIR}/hostguard.conf"
readonly HG_WEBHOOK_FILE="${HG_CONF_DIR}/webhook.curlrc"
readonly HG_STATE_DIR="${HG_ROOT}/var/lib/hostguard"
readonly HG_SPOOL_DIR="${HG_ROOT}/var/spool/hostguard"

# Defaults of every setting; hg_load_settings refuses keys not listed here.
declare -A HG_DEFAULTS=(
  [CPU_THRESHOLD]=80
  [MEMORY_THRESHOLD]=90
  [DISK_THRESHOLD]=90
  [CONTAINER_RUNTIME]=docker
  [CONTAINER_WATCH]=""
  [NOTIFY_CA_FILE]=""
  [NOTIFY_MAX_TIME]=10
  [NOTIFY_ATTEMPTS]=3
  [NOTIFY_BUDGET]=40
  [SLACK_CHANNEL]=alerts
  [BAN_MAXRETRY]=10
  [BAN_FINDTIME]=1m
  [BAN_BANTIME]=10m
  [BAN_ACTION]=""
  [NGINX_ACCESS_LOG]=/var/log/nginx/access.log
  [NGINX_SERVER_CONF]=""
  [APP_PROPERTIES]=""
  [CRON_MINUTE]=0
  [HOST_NAME]=""
  [ALERT_HOST_LABEL]=false
  [ALERT_REPEAT_INTERVAL]=0
  [ALERT_SEND_RESOLVED]=false
  [ALERT_AFTER_RUNS]=1
)
readonly HG_DEFAULTS

# Which values each key accepts, as an extended regex.
declare -A HG_PATTERNS=(
  [CPU_THRESHOLD]='^(100|[0-9]{1,2})$'
  [MEMORY_THRESHOLD]='^(100|[0-9]{1,2})$'
  [DISK_THRESHOLD]='^(100|[0-9]{1,2})$'
  [CONTAINER_RUNTIME]='^[A-Za-z0-9_./-]+$'
  [CONTAINER_WATCH]='^[^[:cntrl:]]*$'
  [NOTIFY_CA_FILE]='^(/[^[:cntrl:]]*)?$'
  [NOTIFY_MAX_TIME]='^[1-9][0-9]{0,2}$'
  [NOTIFY_ATTEMPTS]='^[1-9]$'
  [NOTIFY_BUDGET]='^[1-9][0-9]{0,2}$'
  [SLACK_CHANNEL]='^[a-z0-9][a-z0-9._-]{0,79}$'
  [BAN_MAXRETRY]='^[1-9][0-9]{0,3}$'
  [BAN_FINDTIME]='^[1-9][0-9]{0,5}[smhdw]?$'
  [BAN_BANTIME]='^[1-9][0-9]{0,6}[smhdw]?$'
  [BAN_ACTION]='^([a-z0-9][a-z0-9_-]*)?$'
  [NGINX_ACCESS_LOG]='^/[^[:cntrl:][:space:]]+$'
  [NGINX_SERVER_CONF]='^(/[^[:cntrl:][:space:]]+)?$'
  [APP_PROPERTIES]='^(/[^[:cntrl:][:space:]]+)?$'
  [CRON_MINUTE]='^[0-9]$'
  [HOST_NAME]='^([A-Za-z0-9][A-Za-z0-9._-]{0,62})?$'
  [ALERT_HOST_LABEL]='^(true|false)$'
  [ALERT_REPEAT_INTERVAL]='^(0|[1-9][0-9]{0,6}|([1-9][0-9]{0,6}[smhdw])+)$'
  [ALERT_SEND_RESOLVED]='^(true|false)$'
  [ALERT_AFTER_RUNS]='^[1-9][0-9]{0,2}$'
)
readonly HG_PATTERNS

hg_die() {
  printf 'hostguard: %s\n' "$*" >&2
  exit 1
}

hg_log() {
  local level="$1"
  shift
  printf '%(%Y-%m-%d %H:%M:%S)T %s %s\n' -1 "${level}" "$*"
}

# Sets HG_<KEY> for every known key: the file's value, else the default.
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
    [[ "${value}" =~ ${HG_PATTERNS[${key}]} ]] \
      || hg_die "${file}:${number}: invalid value for ${key}"
    printf -v "HG_${key}" '%s' "${value}"
  done <"${file}"
}

# Prints TEXT as a JSON string literal. Backslash first, then the quote,
# then every control character; UTF-8 passes through untouched.
hg_json_string() {
  local text="$1"
  local out="" char code i
  text="${text//\\/\\\\}"
  text="${text//\"/\\\"}"
  text="${text//$'\n'/\\n}"
  text="${text//$'\r'/\\r}"
  text="${text//$'\t'/\\t}"
  if [[ "${text}" == *[$'\x01'-$'\x1f'$'\x7f']* ]]; then
    for ((i = 0; i < ${#text}; i++)); do
      char="${text:i:1}"
      if [[ "${char}" == [$'\x01'-$'\x1f'$'\x7f'] ]]; then
        printf -v code '%d' "'${char}"
        printf -v char '\\u%04x' "${code}"
      fi
      out+="${char}"
    done
    text="${out}"
  fi
  printf '"%s"' "${text}"
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
