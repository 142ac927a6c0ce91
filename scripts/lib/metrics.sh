# shellcheck shell=bash
# Pure figures for the monitors: each function reads one /proc-style file (or
# takes values) and stores its result in the variable named by its first
# argument, so the monitors need neither subshells nor child processes for
# them. Every figure is computed the way the procps-ng 4 tool the SPEC names
# prints it (top, free -m, uptime, uptime -p, ps aux | wc -l). Sourced, never
# run; reads only the files passed in.

# A JSON string literal as Go's encoding/json writes it: no raw control
# character, no bare quote or backslash.
readonly HG_JSON_STRING_RE='^"([^"\\[:cntrl:]]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"$'

# OUT <- "busy total" jiffies of the first line of a /proc/stat file.
# busy is user+system, as top's us+sy; total is what top divides by
# (user nice system idle iowait irq softirq steal; guest is inside user).
hg_cpu_sample() {
  local -n _hg_out="$1"
  local file="$2"
  local label user=0 nice=0 system=0 idle=0 iowait=0 irq=0 softirq=0 steal=0 rest
  read -r label user nice system idle iowait irq softirq steal rest <"${file}" || return 1
  [[ "${label}" == cpu ]] || return 1
  local field
  for field in "${user}" "${nice}" "${system}" "${idle}" "${iowait}" "${irq}" \
    "${softirq}" "${steal:-0}"; do
    [[ "${field}" =~ ^[0-9]{1,18}$ ]] || return 1
  done
  _hg_out="$((10#${user} + 10#${system})) $((10#${user} + 10#${nice} + 10#${system} \
    + 10#${idle} + 10#${iowait} + 10#${irq} + 10#${softirq} + 10#${steal:-0}))"
}

# OUT <- busy percent with one decimal between two "busy total" samples.
# Fails when the counters did not advance or went back (a reboot).
hg_cpu_percent() {
  local -n _hg_out="$1"
  local before="$2" after="$3"
  local busy0 total0 busy1 total1
  read -r busy0 total0 <<<"${before}"
  read -r busy1 total1 <<<"${after}"
  [[ "${busy0}${total0}${busy1}${total1}" =~ ^[0-9]+$ ]] || return 1
  local busy=$((busy1 - busy0)) total=$((total1 - total0))
  ((total > 0 && busy >= 0 && busy <= total)) || return 1
  # Tenths, rounded half up like printf's %.1f on a non-tie.
  local tenths=$(((busy * 2000 / total + 1) / 2))
  printf -v _hg_out '%d.%d' "$((tenths / 10))" "$((tenths % 10))"
}

# OUT <- used/total x 100 with two decimals, from a /proc/meminfo file, where
# used and total are the MiB figures `free -m` (procps-ng 4) prints: used is
# MemTotal - MemAvailable (MemFree when MemAvailable is missing or larger
# than MemTotal, as in some containers), each value truncated to MiB.
hg_mem_percent() {
  local -n _hg_out="$1"
  local file="$2"
  local key value unit total=0 free=0 avail=0
  while read -r key value unit; do
    [[ "${value}" =~ ^[0-9]{1,15}$ ]] || continue
    case "${key}" in
      MemTotal:) total=$((10#${value})) ;;
      MemFree:) free=$((10#${value})) ;;
      MemAvailable:) avail=$((10#${value})) ;;
    esac
  done <"${file}"
  ((avail != 0)) || avail="${free}"
  ((avail <= total)) || avail="${free}"
  local used=$((total - avail))
  ((used >= 0)) || used=$((total - free))
  local used_m=$((used / 1024)) total_m=$((total / 1024))
  ((total_m > 0)) || return 1
  local hundredths=$(((used_m * 20000 / total_m + 1) / 2))
  printf -v _hg_out '%d.%02d' "$((hundredths / 100))" "$((hundredths % 100))"
}

# OUT <- the load averages as `uptime` prints them: "0.52, 0.58, 0.59".
hg_load_average() {
  local -n _hg_out="$1"
  local file="$2"
  local one five fifteen rest
  read -r one five fifteen rest <"${file}" || return 1
  [[ "${one} ${five} ${fifteen}" =~ ^[0-9]+\.[0-9]{2}\ [0-9]+\.[0-9]{2}\ [0-9]+\.[0-9]{2}$ ]] \
    || return 1
  _hg_out="${one}, ${five}, ${fifteen}"
}

# Appends "N unit(s)" to the uptime text, with the comma procps puts
# between parts.
_hg_uptime_part() {
  local -n _hg_text="$1"
  local count="$2" singular="$3" plural="$4"
  [[ "${_hg_text}" == "up " ]] || _hg_text+=", "
  if [[ "${singular}" == minute ]]; then
    # procps says "minutes" for anything but exactly 1, even 0.
    ((count != 1)) && singular="${plural}"
  else
    ((count > 1)) && singular="${plural}"
  fi
  _hg_text+="${count} ${singular}"
}

# OUT <- the uptime as `uptime -p` (procps-ng 4.0.x) prints it, from a
# /proc/uptime file. It mirrors procps_uptime_sprint_short() to the letter,
# oddities included: a unit is taken only when the uptime is strictly above
# it, so exactly 60 s prints "up " and exactly 1 h prints "up 60 minutes".
# Seconds are kept in hundredths, as /proc/uptime gives them.
hg_uptime_pretty() {
  local -n _hg_out="$1"
  local file="$2"
  local seconds rest
  read -r seconds rest <"${file}" || return 1
  [[ "${seconds}" =~ ^([0-9]{1,12})(\.([0-9]{1,2}))?$ ]] || return 1
  local frac="${BASH_REMATCH[3]}"
  frac="${frac}00"
  local cs=$((10#${BASH_REMATCH[1]} * 100 + 10#${frac:0:2}))
  local text="up " count unit
  local -a units=(
    "$((60 * 60 * 24 * 365 * 10)) decade decades"
    "$((60 * 60 * 24 * 365)) year years"
    "$((60 * 60 * 24 * 7)) week weeks"
    "$((60 * 60 * 24)) day days"
    "$((60 * 60)) hour hours"
  )
  local entry singular plural
  for entry in "${units[@]}"; do
    read -r unit singular plural <<<"${entry}"
    if ((cs > unit * 100)); then
      count=$((cs / 100 / unit))
      cs=$((cs - count * unit * 100))
      _hg_uptime_part text "${count}" "${singular}" "${plural}"
    fi
  done
  count=0
  if ((cs > 6000)); then
    count=$((cs / 100 / 60))
    cs=$((cs - count * 6000))
  fi
  if ((count != 0 || cs < 6000)); then
    _hg_uptime_part text "${count}" minute minutes
  fi
  _hg_out="${text}"
}

# OUT <- the line count of `ps aux`: one line per process plus the header.
hg_process_count() {
  local -n _hg_out="$1"
  local dir="$2"
  local -a pids=("${dir}"/[0-9]*)
  [[ -e "${pids[0]}" ]] || return 1
  _hg_out=$((${#pids[@]} + 1))
}

# Succeeds when the decimal VALUE is strictly greater than the decimal
# THRESHOLD (digits with an optional fraction, both). Exact: no rounding.
hg_decimal_gt() {
  local value="$1" threshold="$2" value_whole value_frac threshold_whole threshold_frac
  [[ "${value}" =~ ^([0-9]{1,15})(\.([0-9]+))?$ ]] || return 2
  value_whole=$((10#${BASH_REMATCH[1]}))
  value_frac="${BASH_REMATCH[3]}"
  [[ "${threshold}" =~ ^([0-9]{1,15})(\.([0-9]+))?$ ]] || return 2
  threshold_whole=$((10#${BASH_REMATCH[1]}))
  threshold_frac="${BASH_REMATCH[3]}"
  if ((value_whole != threshold_whole)); then
    ((value_whole > threshold_whole))
    return
  fi
  while ((${#value_frac} < ${#threshold_frac})); do value_frac+=0; done
  while ((${#threshold_frac} < ${#value_frac})); do threshold_frac+=0; done
  [[ "${value_frac}" > "${threshold_frac}" ]]
}

# OUT <- the text of a JSON string literal (quotes included in LITERAL), as
# the runtime's `{{json ...}}` writes it. Fails on anything that is not one
# well-formed string. \u0000 and lone surrogates become U+FFFD. Needs a UTF-8
# locale (LC_ALL=C.UTF-8) for \uXXXX to come out as UTF-8.
hg_json_unquote() {
  local -n _hg_out="$1"
  local rest="$2"
  [[ "${rest}" =~ ${HG_JSON_STRING_RE} ]] || return 1
  rest="${rest:1:${#rest}-2}"
  local text="" escape code low char
  while [[ "${rest}" == *\\* ]]; do
    text+="${rest%%\\*}"
    rest="${rest#*\\}"
    escape="${rest:0:1}"
    rest="${rest:1}"
    case "${escape}" in
      n) text+=$'\n' ;;
      t) text+=$'\t' ;;
      r) text+=$'\r' ;;
      b) text+=$'\b' ;;
      f) text+=$'\f' ;;
      u)
        code=$((16#${rest:0:4}))
        rest="${rest:4}"
        if ((code >= 0xD800 && code <= 0xDBFF)) \
          && [[ "${rest}" =~ ^\\u([dD][c-fC-F][0-9a-fA-F]{2}) ]]; then
          low=$((16#${BASH_REMATCH[1]}))
          rest="${rest:6}"
          code=$((0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
        elif ((code == 0 || (code >= 0xD800 && code <= 0xDFFF))); then
          code=0xFFFD
        fi
        printf -v char '%08x' "${code}"
        # shellcheck disable=SC2059 # the format is the escape itself
        printf -v char "\\U${char}"
        text+="${char}"
        ;;
      *) text+="${escape}" ;;
    esac
  done
  _hg_out="${text}${rest}"
}
