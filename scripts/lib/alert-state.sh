# shellcheck shell=bash
# Per-measure alert state of one monitor, and the policy built on it:
# ALERT_AFTER_RUNS (a measure fires only after N consecutive runs over its
# threshold), ALERT_REPEAT_INTERVAL (a measure that stays over posts again at
# most once per interval; 0 = every run) and ALERT_SEND_RESOLVED (a measure
# that fired and is back to or under its threshold posts one resolved
# message). With the defaults (1, 0, false) every run over posts and nothing
# else does: the SPEC's behaviour.
#
# Sourced after common.sh and hg_load_settings. The state file sits in the
# root-only state dir (0700) under the monitor's lock; it is replaced by a
# write to a temp file and a rename, only when its text changed (a quiet run
# writes nothing). A lost or corrupt file only forgets the state: the next
# run may post again, never less.
#
# File: one record per line, "RUNS<TAB>LAST<TAB>FIRED<TAB>KEY": RUNS the
# consecutive runs over (capped at ALERT_AFTER_RUNS), LAST the epoch second
# of the last post (0 when ALERT_REPEAT_INTERVAL is 0), FIRED 1 when its
# alert was posted and not yet resolved, KEY the measure (no tab or newline:
# callers JSON-encode untrusted names). A measure back to normal that never
# fired has no record.

declare -A HG_ALERT_RUNS=() HG_ALERT_LAST=() HG_ALERT_FIRED=()
# Keys in file order, new ones last: the text of an unchanged state is the
# same without sorting (no child process).
declare -a HG_ALERT_ORDER=()
HG_ALERT_FILE=""
HG_ALERT_LOADED_TEXT=""
HG_ALERT_REPEAT_SECONDS=0
# What hg_alert_observe decided: post, resolve, hold (over, but debounced or
# inside the repeat interval) or none.
HG_ALERT_ACTION=none

readonly HG_ALERT_RECORD_RE=$'^([0-9]{1,3})\t([0-9]{1,12})\t([01])\t([^\t]+)$'

# The clock, in epoch seconds. HOSTGUARD_NOW replaces it (tests only).
hg_alert_now() {
  local -n _hg_now="$1"
  if [[ "${HOSTGUARD_NOW:-}" =~ ^[0-9]{1,12}$ ]]; then
    _hg_now="${HOSTGUARD_NOW}"
  else
    printf -v _hg_now '%(%s)T' -1
  fi
}

# Reads FILE's records; a line that is not a record is dropped.
hg_alert_load() {
  HG_ALERT_FILE="$1"
  HG_ALERT_RUNS=()
  HG_ALERT_LAST=()
  HG_ALERT_FIRED=()
  HG_ALERT_ORDER=()
  HG_ALERT_LOADED_TEXT=""
  hg_duration_seconds HG_ALERT_REPEAT_SECONDS "${HG_ALERT_REPEAT_INTERVAL}" \
    || hg_die "invalid ALERT_REPEAT_INTERVAL ${HG_ALERT_REPEAT_INTERVAL}"
  [[ -f "${HG_ALERT_FILE}" ]] || return 0
  local line key
  while IFS= read -r line || [[ -n "${line}" ]]; do
    [[ "${line}" =~ ${HG_ALERT_RECORD_RE} ]] || continue
    key="${BASH_REMATCH[4]}"
    [[ -v "HG_ALERT_RUNS[${key}]" ]] || HG_ALERT_ORDER+=("${key}")
    HG_ALERT_RUNS["${key}"]=$((10#${BASH_REMATCH[1]}))
    HG_ALERT_LAST["${key}"]=$((10#${BASH_REMATCH[2]}))
    HG_ALERT_FIRED["${key}"]="${BASH_REMATCH[3]}"
  done <"${HG_ALERT_FILE}"
  hg_alert_text HG_ALERT_LOADED_TEXT
}

# OUT <- the records as the file holds them.
hg_alert_text() {
  local -n _hg_text="$1"
  local key
  local -A written=()
  _hg_text=""
  for key in "${HG_ALERT_ORDER[@]}"; do
    [[ -v "HG_ALERT_RUNS[${key}]" && ! -v "written[${key}]" ]] || continue
    written["${key}"]=1
    _hg_text+="${HG_ALERT_RUNS[${key}]}"$'\t'"${HG_ALERT_LAST[${key}]}"$'\t'
    _hg_text+="${HG_ALERT_FIRED[${key}]}"$'\t'"${key}"$'\n'
  done
}

# Records that MEASURE (KEY) is over or under its threshold in this run and
# sets HG_ALERT_ACTION. With ONCE=once the measure is an event (a container
# that stopped since the previous check): it posts once and never repeats.
# With ONCE=latch it posts once and stays recorded (fired, silent) until it
# is under again (a container runtime that does not answer).
hg_alert_observe() {
  local key="$1" state="$2" once="${3:-}" now runs last fired
  runs="${HG_ALERT_RUNS[${key}]:-0}"
  last="${HG_ALERT_LAST[${key}]:-0}"
  fired="${HG_ALERT_FIRED[${key}]:-0}"
  HG_ALERT_ACTION=none
  if [[ "${state}" == under ]]; then
    if ((fired)) && [[ "${HG_ALERT_SEND_RESOLVED}" == true ]]; then
      HG_ALERT_ACTION=resolve
    fi
    hg_alert_forget "${key}"
    return 0
  fi
  ((runs < HG_ALERT_AFTER_RUNS)) && runs=$((runs + 1))
  HG_ALERT_ACTION=hold
  if ((runs >= HG_ALERT_AFTER_RUNS)); then
    hg_alert_now now
    if ((!fired)); then
      HG_ALERT_ACTION=post
    elif [[ "${once}" != once && "${once}" != latch ]] && hg_alert_repeat_due "${last}" "${now}"; then
      HG_ALERT_ACTION=post
    fi
    if [[ "${HG_ALERT_ACTION}" == post ]]; then
      fired=1
      last=0
      ((HG_ALERT_REPEAT_SECONDS == 0)) || last="${now}"
    fi
  fi
  if [[ "${HG_ALERT_ACTION}" == post && "${once}" == once && "${HG_ALERT_SEND_RESOLVED}" != true ]]; then
    # An event that posted and will never repeat or resolve: nothing to keep.
    hg_alert_forget "${key}"
    return 0
  fi
  [[ -v "HG_ALERT_RUNS[${key}]" ]] || HG_ALERT_ORDER+=("${key}")
  HG_ALERT_RUNS["${key}"]="${runs}"
  HG_ALERT_LAST["${key}"]="${last}"
  HG_ALERT_FIRED["${key}"]="${fired}"
}

# Succeeds when an alert posted at LAST may post again at NOW. A clock that
# went back (NOW before LAST) counts as due: a stepped clock must not mute an
# alert for hours.
hg_alert_repeat_due() {
  local last="$1" now="$2"
  ((HG_ALERT_REPEAT_SECONDS == 0)) && return 0
  ((now < last)) && return 0
  ((now - last >= HG_ALERT_REPEAT_SECONDS))
}

# Drops KEY's record. The subscripts are quoted so that bash expands KEY
# once (a key holding "]" or "$(...)" is a plain string here).
hg_alert_forget() {
  local key="$1"
  unset 'HG_ALERT_RUNS[$key]' 'HG_ALERT_LAST[$key]' 'HG_ALERT_FIRED[$key]'
}

# Undoes the post hg_alert_observe just decided for KEY: its message was
# lost (not spooled, not delivered), so the next run posts it again; it is
# never recorded as fired, not even an event's.
hg_alert_unfire() {
  local key="$1"
  [[ -v "HG_ALERT_RUNS[${key}]" ]] || HG_ALERT_ORDER+=("${key}")
  HG_ALERT_RUNS["${key}"]="${HG_ALERT_AFTER_RUNS}"
  HG_ALERT_LAST["${key}"]=0
  HG_ALERT_FIRED["${key}"]=0
}

# Succeeds when KEY fired and waits for its resolution.
hg_alert_fired() {
  [[ "${HG_ALERT_FIRED[$1]:-0}" == 1 ]]
}

# OUT <- the keys of the records whose key starts with PREFIX.
hg_alert_keys() {
  local -n _hg_keys="$1"
  local prefix="$2" key
  _hg_keys=()
  for key in "${!HG_ALERT_RUNS[@]}"; do
    [[ "${key}" == "${prefix}"* ]] && _hg_keys+=("${key}")
  done
  return 0
}

# OUT <- the temp file hg_alert_save writes before renaming it over FILE
# (no subshell: a quiet monitor run forks nothing for it).
hg_alert_tmp() {
  local -n _hg_tmp="$1"
  _hg_tmp="${2%/*}/.${2##*/}.tmp"
}

# What hg_alert_save writes for the state file PATH (as on the host), as
# lines of a writer's --runtime-files: the file and its temp file.
hg_alert_runtime_files() {
  local tmp
  hg_alert_tmp tmp "$1"
  printf 'state %s\n' "$1" "${tmp}"
}

# Writes the records when they changed. Returns non-zero (nothing changed on
# disk) when the write fails, for example on a full disk; the caller logs it
# and still delivers its alerts.
hg_alert_save() {
  local text tmp
  hg_alert_text text
  [[ "${text}" != "${HG_ALERT_LOADED_TEXT}" ]] || return 0
  hg_alert_tmp tmp "${HG_ALERT_FILE}"
  if [[ -z "${text}" ]]; then
    rm -f -- "${HG_ALERT_FILE}" || return 1
  else
    printf '%s' "${text}" >"${tmp}" || {
      rm -f -- "${tmp}"
      return 1
    }
    mv -f -- "${tmp}" "${HG_ALERT_FILE}" || return 1
  fi
  HG_ALERT_LOADED_TEXT="${text}"
}
