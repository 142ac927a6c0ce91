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
  [NGINX_SERVER_CONF]=''
  [APP_PROPERTIES]=''
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
  [NGINX_SERVER_CONF]='^((/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$'
  [APP_PROPERTIES]='^((/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$'
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
)
readonly HG_RANGES
# END settings table

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
