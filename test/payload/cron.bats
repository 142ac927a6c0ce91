#!/usr/bin/env bats
# The rendered /etc/cron.d/hostguard (strict line format, every 10 minutes
# from the stack's pinned minute or through at-offset.sh, checked by Debian's
# own crontab parser in a private mount namespace), the offset at-offset.sh
# derives from the host's instance id, and the logrotate rule (logrotate -d,
# then a real forced rotation of logs in the temp root).

load helpers/install

readonly JOB_RE='^([0-9])-59/10 \* \* \* \* root (sh /usr/local/lib/hostguard/at-offset\.sh )?(/usr/local/lib/hostguard/(host-monitor|container-monitor)) >> /var/log/hostguard/([a-z-]+)\.log 2>&1$'

setup() {
  hg_make_root
}

# Prints the minutes a cron minute field "A-B/S", "A-B", "*/S" or "N" selects.
expand_minutes() {
  local field="$1" start end step=1 m
  if [[ "${field}" =~ ^(\*|([0-9]+)-([0-9]+))(/([0-9]+))?$ ]]; then
    start="${BASH_REMATCH[2]:-0}"
    end="${BASH_REMATCH[3]:-59}"
    step="${BASH_REMATCH[5]:-1}"
  elif [[ "${field}" =~ ^[0-9]+$ ]]; then
    start="${field}"
    end="${field}"
  else
    return 1
  fi
  for ((m = start; m <= end; m += step)); do
    printf '%d ' "${m}"
  done
}

# Renders the payload for a host whose cron minute is OFFSET (and the
# settings key=value given) and installs its monitors part.
install_monitors() {
  local offset="$1"
  shift
  if [[ "${offset}" == derived ]]; then
    hg_make_payload "$@"
  else
    hg_make_payload --cron-minute "${offset}" "$@"
  fi
  hg_install install --part monitors >/dev/null
}

# Runs COMMAND (sh text) in a private mount namespace where this host's
# instance id (cloud-init's /var/lib/cloud/data/instance-id) is INSTANCE_ID
# (no file when empty) and its machine id MACHINE_ID, with STUB_DIR first on
# PATH when given: the identity at-offset.sh reads, without touching the real
# /etc or /var.
as_host() {
  local instance_id="$1" machine_id="$2" stub_dir="$3" command="$4"
  printf '%s\n' "${machine_id}" >"${BATS_TEST_TMPDIR}/machine-id"
  unshare --mount --propagation private sh -c '
    mount -t tmpfs tmpfs /var/lib && mkdir -p /var/lib/cloud/data || exit 1
    [ -z "$1" ] || printf "%s\n" "$1" >/var/lib/cloud/data/instance-id
    mount --bind "$2" /etc/machine-id || exit 1
    [ -z "$3" ] || PATH="$3:$PATH"
    eval "$4"' _ "${instance_id}" "${BATS_TEST_TMPDIR}/machine-id" "${stub_dir}" "${command}"
}

# A stand-in sleep that prints the seconds it was asked for (and sleeps none).
sleep_stub() {
  mkdir -p "${BATS_TEST_TMPDIR}/stub"
  printf '#!/bin/sh\necho "slept $1"\n' >"${BATS_TEST_TMPDIR}/stub/sleep"
  chmod 0755 "${BATS_TEST_TMPDIR}/stub/sleep"
  echo "${BATS_TEST_TMPDIR}/stub"
}

# The offset at-offset.sh derives for ID, as the POSIX cksum of the id mod 600.
offset_of() {
  local crc
  crc="$(printf '%s' "$1" | cksum)"
  echo $((${crc%% *} % 600))
}

# Fails unless every line of the installed cron file is strictly formed, its
# jobs at cron minute MINUTE, each monitor once with its own log; prints the
# monitors it schedules, in order, one a line.
cron_file_jobs() {
  local minute="$1" file="${ROOT}/etc/cron.d/hostguard" line path_line=0
  local -A seen=()
  [[ "$(basename "${file}")" != *.* ]]
  hg_assert_mode_owner "${file}" "644 root:root"
  while IFS= read -r line; do
    if [[ -z "${line}" || "${line}" == '#'* ]]; then
      continue
    elif [[ "${line}" =~ ^PATH=(/[a-z/]+)(:/[a-z/]+)*$ ]]; then
      path_line=1
    elif [[ "${line}" =~ ^SHELL=/bin/sh$ ]]; then
      :
    elif [[ "${line}" =~ ${JOB_RE} ]]; then
      [[ "${BASH_REMATCH[1]}" == "${minute/derived/0}" ]] || return 1
      # Through at-offset.sh exactly when no minute is pinned (minute 0 then).
      if [[ "${minute}" == derived ]]; then [[ -n "${BASH_REMATCH[2]}" ]] || return 1; else [[ -z "${BASH_REMATCH[2]}" ]] || return 1; fi
      # One log file per script, named after it.
      [[ "${BASH_REMATCH[4]}" == "${BASH_REMATCH[5]}" ]] || return 1
      [[ -z "${seen[${BASH_REMATCH[4]}]:-}" ]] || return 1
      seen[${BASH_REMATCH[4]}]=1
      printf '%s\n' "${BASH_REMATCH[4]}"
    else
      echo "line not allowed: ${line}" >&2
      return 1
    fi
  done <"${file}"
  [[ "${path_line}" -eq 1 ]]
}

@test "the cron file: no dot in its name, 0644 root, every line strictly formed" {
  install_monitors 3
  cron_file_jobs 3 >"${BATS_TEST_TMPDIR}/jobs"
  [[ "$(cat "${BATS_TEST_TMPDIR}/jobs")" == $'host-monitor\ncontainer-monitor' ]]
  # No pinned minute (the default): every 10-minute mark, through at-offset.sh.
  install_monitors derived
  cron_file_jobs derived >"${BATS_TEST_TMPDIR}/jobs"
  [[ "$(cat "${BATS_TEST_TMPDIR}/jobs")" == $'host-monitor\ncontainer-monitor' ]]
  # containerMonitor false: the host monitor alone, the file as strict.
  install_monitors 3 containerMonitor=false
  cron_file_jobs 3 >"${BATS_TEST_TMPDIR}/jobs"
  [[ "$(cat "${BATS_TEST_TMPDIR}/jobs")" == host-monitor ]]
}

@test "every cron minute offset gives six runs an hour, ten minutes apart" {
  local offset line minutes want m
  for offset in 0 3 9; do
    install_monitors "${offset}"
    want=""
    for ((m = offset; m < 60; m += 10)); do want+="${m} "; done
    while IFS= read -r line; do
      [[ "${line}" =~ ${JOB_RE} ]] || continue
      minutes="$(expand_minutes "${line%% *}")"
      if [[ "${minutes}" != "${want}" ]]; then
        echo "offset ${offset}: ${line%% *} gives '${minutes}', want '${want}'" >&2
        false
      fi
      [[ "$(wc -w <<<"${minutes}")" -eq 6 ]]
    done <"${ROOT}/etc/cron.d/hostguard"
  done
  # The expander itself is not lenient: a wrong step shows.
  [[ "$(expand_minutes '3-59/20')" == "3 23 43 " ]]
}

# Debian's crontab -n parses with cron's own entry parser; it writes a temp
# file in the spool, so the spool is a private tmpfs in a mount namespace.
crontab_check() {
  unshare --mount --propagation private bash -c \
    'mount -t tmpfs -o mode=1730 tmpfs /var/spool/cron/crontabs && exec crontab -n "$1" </dev/null' \
    _ "$1"
}

@test "Debian's cron parser accepts the entries (user field checked, then dropped)" {
  command -v crontab >/dev/null || { echo "cron not installed (.ci/run installs it): the test cannot run" >&2; false; }
  install_monitors 7
  local user_crontab="${BATS_TEST_TMPDIR}/as-user-crontab" line
  local entry_re='^([^[:space:]#=]+( +[^[:space:]]+){4}) +([a-z]+) +(.*)$'
  # A cron.d line is a user crontab line with a user field after the five
  # time fields: check it is root, drop it, and let crontab parse the rest.
  while IFS= read -r line; do
    if [[ "${line}" =~ ${entry_re} ]]; then
      [[ "${BASH_REMATCH[3]}" == root ]]
      printf '%s %s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[4]}"
    else
      printf '%s\n' "${line}"
    fi
  done <"${ROOT}/etc/cron.d/hostguard" >"${user_crontab}"
  [[ "$(grep -c 'hostguard/.*-monitor >>' "${user_crontab}")" -eq 2 ]]
  run crontab_check "${user_crontab}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  # The same parser rejects a bad schedule, so the check can fail.
  sed 's|^7-59/10|7-69/10|' "${user_crontab}" >"${BATS_TEST_TMPDIR}/broken"
  run crontab_check "${BATS_TEST_TMPDIR}/broken"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "bad minute"
}

@test "logrotate -d accepts the rule with a state file in the temp dir" {
  install_monitors 0
  local rule="${ROOT}/etc/logrotate.d/hostguard"
  hg_assert_mode_owner "${rule}" "644 root:root"
  run logrotate -d -s "${BATS_TEST_TMPDIR}/logrotate.state" "${rule}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "/var/log/hostguard/*.log"
  hg_assert_not_contains "${output}" "error"
}

@test "the rule really rotates the monitors' logs and recreates them 0640" {
  install_monitors 0
  local logs="${ROOT}/var/log/hostguard" rule="${BATS_TEST_TMPDIR}/rule"
  # Same rule, pointed at the temp root's log directory.
  sed "s|^/var/log/hostguard/|${logs}/|" "${ROOT}/etc/logrotate.d/hostguard" >"${rule}"
  grep -q "^${logs}/\*.log {" "${rule}"
  echo "line one" >>"${logs}/host-monitor.log"
  echo "line two" >>"${logs}/container-monitor.log"
  run logrotate -f -s "${BATS_TEST_TMPDIR}/logrotate.state" "${rule}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  grep -qx "line one" "${logs}/host-monitor.log.1"
  grep -qx "line two" "${logs}/container-monitor.log.1"
  [[ ! -s "${logs}/host-monitor.log" ]]
  hg_assert_mode_owner "${logs}/host-monitor.log" "640 root:root"
  hg_assert_mode_owner "${logs}/container-monitor.log" "640 root:root"
}

@test "at-offset.sh: the offset comes from the instance id, else the machine id; 0-599, the same for the same id" {
  install_monitors derived
  local script="${ROOT}/usr/local/lib/hostguard/at-offset.sh" stub
  hg_assert_mode_owner "${script}" "644 root:root"
  stub="$(sleep_stub)"
  run as_host i-0123456789abcdef0 0f0e0d0c0b0a09080706050403020100 "${stub}" "sh '${script}' echo ran"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == "slept $(offset_of i-0123456789abcdef0)"$'\nran' ]]
  # Without cloud-init's file: the machine id.
  run as_host "" 0f0e0d0c0b0a09080706050403020100 "${stub}" "sh '${script}' echo ran"
  [[ "${output}" == "slept $(offset_of 0f0e0d0c0b0a09080706050403020100)"$'\nran' ]]
  # The two ids give different offsets here, so the instance id really was the one read.
  [[ "$(offset_of i-0123456789abcdef0)" != "$(offset_of 0f0e0d0c0b0a09080706050403020100)" ]]
  # The monitor's exit status is the job's.
  run as_host i-0123456789abcdef0 x "${stub}" "sh '${script}' sh -c 'exit 3'"
  [[ "${status}" -eq 3 ]]
}

@test "at-offset.sh: 300 instance ids spread over the whole 600 s interval" {
  install_monitors derived
  local script="${ROOT}/usr/local/lib/hostguard/at-offset.sh" stub
  stub="$(sleep_stub)"
  # One namespace, one id after another (each run reads the file anew).
  run as_host i-0 x "${stub}" "i=0; while [ \$i -lt 300 ]; do printf 'i-%017x\\n' \$((i * 7919)) >/var/lib/cloud/data/instance-id; sh '${script}' true; i=\$((i + 1)); done"
  [[ "${status}" -eq 0 ]]
  local -a slept=() && mapfile -t slept < <(printf '%s\n' "${output}" | sed -n 's/^slept //p')
  [[ "${#slept[@]}" -eq 300 ]]
  local s distinct low=0 high=0
  for s in "${slept[@]}"; do
    ((s >= 0 && s < 600))
    ((s < 300)) && low=$((low + 1)) || high=$((high + 1))
  done
  distinct="$(printf '%s\n' "${slept[@]}" | sort -u | wc -l)"
  echo "distinct ${distinct}, first half ${low}, second half ${high}" >&2
  # 300 draws over 600 slots: about 236 distinct expected; both halves well used.
  ((distinct >= 200 && low >= 100 && high >= 100))
}

@test "the derived line: cron's parser accepts it, /bin/sh runs it as cron would, after the host's offset" {
  command -v crontab >/dev/null || { echo "cron not installed (.ci/run installs it): the test cannot run" >&2; false; }
  hg_make_payload cpuThreshold=100 memoryThreshold=100 diskThreshold=100
  hg_install install --part base >/dev/null
  hg_install install --part monitors >/dev/null
  local file="${ROOT}/etc/cron.d/hostguard" line command start end id n=0 offset
  grep -qx '0-59/10 \* \* \* \* root sh /usr/local/lib/hostguard/at-offset.sh /usr/local/lib/hostguard/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1' "${file}"
  grep -qx '0-59/10 \* \* \* \* root sh /usr/local/lib/hostguard/at-offset.sh /usr/local/lib/hostguard/container-monitor >> /var/log/hostguard/container-monitor.log 2>&1' "${file}"
  sed -E 's/^(([^ ]+ ){5})root /\1/' "${file}" >"${BATS_TEST_TMPDIR}/as-user-crontab"
  run crontab_check "${BATS_TEST_TMPDIR}/as-user-crontab"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  # An instance id whose offset is 1 or 2 s, so the real sleep stays short.
  while :; do
    id="$(printf 'i-%017x' "${n}")"
    offset="$(offset_of "${id}")"
    ((offset >= 1 && offset <= 2)) && break
    n=$((n + 1))
    ((n < 100000))
  done
  # The command field, pointed at the temp root, run by /bin/sh (SHELL).
  line="$(grep 'host-monitor >>' "${file}")"
  command="${line#* root }"
  command="${command//\/usr\/local\/lib\/hostguard\//${ROOT}/usr/local/lib/hostguard/}"
  command="${command//\/var\/log\/hostguard\//${ROOT}/var/log/hostguard/}"
  start="${EPOCHREALTIME/./}"
  as_host "${id}" x "" "HOSTGUARD_ROOT='${ROOT}' /bin/sh -c '${command}'"
  end="${EPOCHREALTIME/./}"
  (((end - start) >= offset * 1000000))
  grep -q 'INFO host-monitor: .* alerts=none' "${ROOT}/var/log/hostguard/host-monitor.log"
}
