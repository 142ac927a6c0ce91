#!/usr/bin/env bats
# The rendered /etc/cron.d/hostguard (strict line format, every 10 minutes
# from the host's minute offset, checked by Debian's own crontab parser in a
# private mount namespace) and the logrotate rule (logrotate -d, then a real
# forced rotation of logs in the temp root).

load helpers/install

readonly JOB_RE='^([0-9])-59/10 \* \* \* \* root (/usr/local/lib/hostguard/(host-monitor|container-monitor)) >> /var/log/hostguard/([a-z-]+)\.log 2>&1$'

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
  hg_make_payload --cron-minute "${offset}" "$@"
  hg_install install --part monitors >/dev/null
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
      [[ "${BASH_REMATCH[1]}" == "${minute}" ]] || return 1
      # One log file per script, named after it.
      [[ "${BASH_REMATCH[3]}" == "${BASH_REMATCH[4]}" ]] || return 1
      [[ -z "${seen[${BASH_REMATCH[3]}]:-}" ]] || return 1
      seen[${BASH_REMATCH[3]}]=1
      printf '%s\n' "${BASH_REMATCH[3]}"
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

@test "the offset's second: the line sleeps it, cron's parser accepts it, /bin/sh runs it as cron would" {
  command -v crontab >/dev/null || { echo "cron not installed (.ci/run installs it): the test cannot run" >&2; false; }
  hg_make_payload --cron-minute 7 --cron-second 2 cpuThreshold=100 memoryThreshold=100 diskThreshold=100
  hg_install install --part base >/dev/null
  hg_install install --part monitors >/dev/null
  local file="${ROOT}/etc/cron.d/hostguard" line command start end
  grep -qx '7-59/10 \* \* \* \* root sleep 2; /usr/local/lib/hostguard/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1' "${file}"
  grep -qx '7-59/10 \* \* \* \* root sleep 2; /usr/local/lib/hostguard/container-monitor >> /var/log/hostguard/container-monitor.log 2>&1' "${file}"
  sed -E 's/^(([^ ]+ ){5})root /\1/' "${file}" >"${BATS_TEST_TMPDIR}/as-user-crontab"
  run crontab_check "${BATS_TEST_TMPDIR}/as-user-crontab"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  # The command field, pointed at the temp root, run by /bin/sh (SHELL).
  line="$(grep 'host-monitor >>' "${file}")"
  command="${line#* root }"
  command="${command//\/usr\/local\/lib\/hostguard\//${ROOT}/usr/local/lib/hostguard/}"
  command="${command//\/var\/log\/hostguard\//${ROOT}/var/log/hostguard/}"
  start="${EPOCHREALTIME/./}"
  HOSTGUARD_ROOT="${ROOT}" /bin/sh -c "${command}"
  end="${EPOCHREALTIME/./}"
  (((end - start) >= 2000000))
  grep -q 'INFO host-monitor: .* alerts=none' "${ROOT}/var/log/hostguard/host-monitor.log"
}
