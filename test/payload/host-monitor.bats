#!/usr/bin/env bats
# Host monitor against the real programs: alerts received byte for byte by
# the HTTPS test receiver; figures checked against free -m, uptime, uptime -p,
# ps aux and df; child processes counted with strace.

load ../helpers/receiver

REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
MONITOR="${REPO}/scripts/host-monitor"

setup() {
  receiver_start
  FIX="${BATS_TEST_TMPDIR}/proc"
  make_proc "${FIX}"
}

teardown() {
  receiver_stop
}

# A fixed /proc: CPU 12.3 % since the saved sample, memory 90.92 %
# (1862 of 2048 MiB), 41 processes (42 lines with ps's header).
make_proc() {
  local dir="$1" i
  mkdir -p "${dir}/sys/kernel/random"
  echo 'cpu  1534 50 700 16966 500 100 100 50 300 0' >"${dir}/stat"
  echo 'cpu0 1534 50 700 16966 500 100 100 50 300 0' >>"${dir}/stat"
  printf '%s\n' 'MemTotal:        2097152 kB' 'MemFree:          100000 kB' \
    'MemAvailable:     190000 kB' 'Buffers:           10000 kB' \
    'Cached:            50000 kB' >"${dir}/meminfo"
  echo '0.52 0.58 0.59 1/123 4567' >"${dir}/loadavg"
  echo '1234567.89 2000000.00' >"${dir}/uptime"
  echo 'fixture-host' >"${dir}/sys/kernel/hostname"
  echo 'boot-fixture' >"${dir}/sys/kernel/random/boot_id"
  for ((i = 1; i <= 41; i++)); do mkdir "${dir}/${i}"; done
}

# The sample the previous run would have left: 1000 busy of 10000 jiffies.
save_previous_sample() {
  mkdir -p "${HOSTGUARD_ROOT}/var/lib/hostguard"
  echo 'boot-fixture 1000 10000' >"${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample"
}

root_disk() {
  local header value
  { read -r header; read -r value; } < <(df --output=pcent /)
  echo "${value%\%}"
}

run_monitor() {
  run env HOSTGUARD_PROC="${FIX}" timeout 30 "${MONITOR}"
  echo "exit ${status}:"
  echo "${output}"
}

@test "thresholds 0: all three alerts arrive byte for byte, the figures exact" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0
  save_previous_sample
  local disk
  disk="$(root_disk)"
  run_monitor
  [[ "${status}" -eq 0 ]]
  receiver_expect_texts \
    "[Server Alert] "$'\n'"High CPU Usage Detected: 12.3%"$'\n'"Load Average: 0.52, 0.58, 0.59" \
    "[Server Alert] "$'\n'"High Memory Usage Detected: 90.92%"$'\n'"Active Processes: 42" \
    "[Server Alert] "$'\n'"High Disk Usage Detected: ${disk}%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
  # The JSON on the wire writes each newline as backslash-n.
  grep -qF '[Server Alert] \nHigh CPU Usage Detected: 12.3%\nLoad Average: 0.52, 0.58, 0.59' \
    <(receiver_texts)
  [[ "${output}" == *"host=fixture-host"*"cpu=12.3% memory=90.92% disk=${disk}%"*"processes=42"*"alerts=cpu memory disk"* ]]
  # The new sample replaces the old one for the next run.
  [[ "$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample")" == "boot-fixture 2234 20000" ]]
  ! compgen -G "${HOSTGUARD_ROOT}/var/spool/hostguard/msg-*" || false
}

@test "thresholds 100: nothing fires, one log line with the figures" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  save_previous_sample
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 0 ]]
  [[ "${#lines[@]}" -eq 1 ]]
  [[ "${lines[0]}" =~ ^[0-9-]{10}\ [0-9:]{8}\ INFO\ host-monitor:.*cpu=12\.3%\ memory=90\.92%.*load=\"0\.52,\ 0\.58,\ 0\.59\".*uptime=\"up\ 2\ weeks,\ 6\ hours,\ 56\ minutes\"\ alerts=none$ ]]
}

@test "strictly greater: a value equal to its threshold does not fire" {
  local disk
  disk="$(root_disk)"
  # 12.3 > 12 fires; 90.92 > 91 does not; disk == threshold does not.
  receiver_make_root CPU_THRESHOLD=12 MEMORY_THRESHOLD=91 "DISK_THRESHOLD=${disk}"
  save_previous_sample
  run_monitor
  [[ "${status}" -eq 0 ]]
  receiver_expect_texts "[Server Alert] "$'\n'"High CPU Usage Detected: 12.3%"$'\n'"Load Average: 0.52, 0.58, 0.59"
  # 90.92 > 90 fires, 12.3 > 13 does not.
  rm -f "${RECEIVER_MESSAGES}" && : >"${RECEIVER_MESSAGES}"
  receiver_make_root CPU_THRESHOLD=13 MEMORY_THRESHOLD=90 DISK_THRESHOLD=100
  save_previous_sample
  run_monitor
  receiver_expect_texts "[Server Alert] "$'\n'"High Memory Usage Detected: 90.92%"$'\n'"Active Processes: 42"
}

@test "first run takes a 1 s CPU sample; the next run averages since it" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  local start end
  start="${EPOCHREALTIME/./}"
  run timeout 30 "${MONITOR}"
  end="${EPOCHREALTIME/./}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  (((end - start) >= 1000000))
  [[ "${output}" =~ cpu=[0-9]{1,3}\.[0-9]%\  ]]
  local sample
  sample="$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample")"
  [[ "${sample}" =~ ^[0-9a-f-]{36}\ [0-9]+\ [0-9]+$ ]]
  start="${EPOCHREALTIME/./}"
  run timeout 30 "${MONITOR}"
  end="${EPOCHREALTIME/./}"
  [[ "${status}" -eq 0 ]]
  (((end - start) < 1000000))
  [[ "${output}" =~ cpu=[0-9]{1,3}\.[0-9]%\  ]]
  # A sample from another boot is not averaged over.
  echo 'another-boot 1 2' >"${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample"
  start="${EPOCHREALTIME/./}"
  run timeout 30 "${MONITOR}"
  end="${EPOCHREALTIME/./}"
  (((end - start) >= 1000000))
}

@test "a quiet run with an empty spool spawns at most 2 child processes" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  run timeout 30 "${MONITOR}" # leaves the CPU sample: the measured run is a normal one
  [[ "${status}" -eq 0 ]]
  local trace="${BATS_TEST_TMPDIR}/trace"
  run timeout 30 strace -f -qq -e trace=execve,clone,clone3,fork,vfork -o "${trace}" bash "${MONITOR}"
  [[ "${status}" -eq 0 ]]
  cat "${trace}"
  local -a programs=()
  mapfile -t programs < <(grep -E 'execve\(.*\) = 0$' "${trace}" | sed -E 's/.*execve\("([^"]+)".*/\1/')
  echo "programs: ${programs[*]}"
  # The first is bash running the script itself.
  [[ "${programs[0]}" == */bash ]]
  ((${#programs[@]} - 1 <= 2))
  [[ " ${programs[*]:1} " == *"/flock "* && " ${programs[*]:1} " == *"/df "* ]]
  # And no other fork (a subshell or command substitution) beside those two.
  local forks
  forks="$(grep -cE '(clone3?|v?fork)\(.*\) = [1-9][0-9]*$' "${trace}")"
  echo "forks: ${forks}"
  ((forks <= 2))
}

@test "runs never overlap: a second run exits at once with a log line" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0
  mkdir -p "${HOSTGUARD_ROOT}/var/lib/hostguard"
  local lock="${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.lock" start end
  exec 8>>"${lock}"
  flock 8
  start="${EPOCHREALTIME/./}"
  run timeout 10 "${MONITOR}"
  end="${EPOCHREALTIME/./}"
  exec 8>&-
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *"another run holds"* ]]
  (((end - start) < 900000))
  [[ "$(receiver_count)" -eq 0 ]]
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample" ]]
}

@test "alerts that could not be delivered go out with the next run" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0 NOTIFY_ATTEMPTS=1
  save_previous_sample
  receiver_mode status500
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 0 ]]
  [[ "${output}" == *"stay spooled"* ]]
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 NOTIFY_ATTEMPTS=1
  receiver_mode ok
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 3 ]]
  receiver_texts | grep -c 'Server Alert' | grep -qx 3
}

@test "memory figure equals free -m's used/total for fixed meminfo samples" {
  source "${REPO}/scripts/lib/metrics.sh"
  local spec total free avail mine real
  for spec in "24684084 21849076 24126356" "2098175 1000 1049599" "1048576 0 0" \
    "1049599 500000 2000000" "16383999 1023 1023" "8000000 100 7999999" \
    "2097152 100000 190000" "4194303 4000000 0" "65536000 5 6"; do
    read -r total free avail <<<"${spec}"
    printf 'MemTotal: %s kB\nMemFree: %s kB\nMemAvailable: %s kB\nBuffers: 7 kB\nCached: 9 kB\n' \
      "${total}" "${free}" "${avail}" >"${BATS_TEST_TMPDIR}/meminfo"
    real="$(unshare --mount --propagation private bash -c \
      'mount --bind "$1" /proc/meminfo && free -m' _ "${BATS_TEST_TMPDIR}/meminfo" \
      | awk '/^Mem:/ { printf("%.2f", $3 / $2 * 100) }')"
    hg_mem_percent mine "${BATS_TEST_TMPDIR}/meminfo"
    echo "${spec}: free=${real} mine=${mine}"
    [[ "${mine}" == "${real}" ]]
  done
}

@test "memory figure matches free -m on this machine" {
  source "${REPO}/scripts/lib/metrics.sh"
  local mine real i ok=0
  # Memory moves between the two reads; a few tries, then a small tolerance.
  for ((i = 0; i < 5; i++)); do
    real="$(free -m | awk '/^Mem:/ { printf("%.2f", $3 / $2 * 100) }')"
    hg_mem_percent mine /proc/meminfo
    echo "free=${real} mine=${mine}"
    if [[ "${mine}" == "${real}" ]]; then ok=1 && break; fi
  done
  ((ok)) || python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 0.1)' "${mine}" "${real}"
}

@test "uptime figure equals uptime -p for fixed and live /proc/uptime" {
  source "${REPO}/scripts/lib/metrics.sh"
  local seconds mine real
  for seconds in 0.00 0.50 59.99 60.00 60.01 61.00 3599.00 3600.00 3600.01 3661.00 \
    86399.00 86400.00 86400.50 90061.00 604800.00 604801.00 694861.00 1234567.89 \
    31449600.00 31536000.00 31536001.00 31622400.50 315360000.00 315360001.00 \
    400000000.00 999999999.99; do
    printf '%s 1.00\n' "${seconds}" >"${BATS_TEST_TMPDIR}/uptime"
    real="$(unshare --mount --propagation private bash -c \
      'mount --bind "$1" /proc/uptime && uptime -p' _ "${BATS_TEST_TMPDIR}/uptime")"
    hg_uptime_pretty mine "${BATS_TEST_TMPDIR}/uptime"
    echo "${seconds}: uptime=[${real}] mine=[${mine}]"
    [[ "${mine}" == "${real}" ]]
  done
  local i ok=0
  for ((i = 0; i < 3; i++)); do
    real="$(uptime -p)"
    hg_uptime_pretty mine /proc/uptime
    echo "live: uptime=[${real}] mine=[${mine}]"
    if [[ "${mine}" == "${real}" ]]; then ok=1 && break; fi
    sleep 1
  done
  ((ok))
}

@test "load average equals uptime's; process count is ps aux | wc -l" {
  source "${REPO}/scripts/lib/metrics.sh"
  local mine real i ok=0
  for ((i = 0; i < 3; i++)); do
    real="$(uptime)"
    real="${real##*load average: }"
    hg_load_average mine /proc/loadavg
    echo "uptime=[${real}] mine=[${mine}]"
    if [[ "${mine}" == "${real}" ]]; then ok=1 && break; fi
  done
  ((ok))
  local count
  real="$(ps aux | wc -l)"
  hg_process_count count /proc
  echo "ps aux | wc -l = ${real}, mine = ${count}"
  ((count - real <= 10 && real - count <= 10))
}

@test "CPU percent: top's us+sy over the interval, one decimal, counters checked" {
  source "${REPO}/scripts/lib/metrics.sh"
  local out
  hg_cpu_sample out "${FIX}/stat"
  [[ "${out}" == "2234 20000" ]]
  hg_cpu_percent out "1000 10000" "2234 20000"
  [[ "${out}" == 12.3 ]]
  hg_cpu_percent out "0 0" "1 3"
  [[ "${out}" == 33.3 ]]
  hg_cpu_percent out "0 0" "2 3"
  [[ "${out}" == 66.7 ]]
  hg_cpu_percent out "0 0" "5 5"
  [[ "${out}" == 100.0 ]]
  hg_cpu_percent out "0 0" "0 7"
  [[ "${out}" == 0.0 ]]
  # No time passed, or a reboot reset the counters: no figure.
  ! hg_cpu_percent out "5 10" "5 10" || false
  ! hg_cpu_percent out "500 1000" "5 10" || false
  # The decimal comparison is exact: 80.001 > 80, 80.000 is not.
  hg_decimal_gt 80.001 80
  ! hg_decimal_gt 80.000 80 || false
  ! hg_decimal_gt 80 80 || false
  hg_decimal_gt 100.5 100
  ! hg_decimal_gt 79.99 80 || false
}

# ---- alert policy (issue 11): label, repeat interval, resolved, debounce ----

CPU_TEXT="[Server Alert] "$'\n'"High CPU Usage Detected: 12.3%"$'\n'"Load Average: 0.52, 0.58, 0.59"
MEM_TEXT="[Server Alert] "$'\n'"High Memory Usage Detected: 90.92%"$'\n'"Active Processes: 42"

# One run at the test clock T (epoch seconds), from the saved CPU sample.
run_at() {
  save_previous_sample
  : >"${RECEIVER_MESSAGES}"
  HOSTGUARD_NOW="$1" run_monitor
  [[ "${status}" -eq 0 ]]
}

@test "every alert key at its default: each run posts the SPEC texts, nothing else" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=100 \
    ALERT_HOST_LABEL=false HOST_NAME=web-1 ALERT_REPEAT_INTERVAL=0 \
    ALERT_SEND_RESOLVED=false ALERT_AFTER_RUNS=1
  local t
  for t in 1000 1001 1600; do
    run_at "${t}"
    receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}"
  done
  # Back under: nothing is posted (no resolved message by default).
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  run_at 2200
  [[ "$(receiver_count)" -eq 0 ]]
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.alerts" ]]
}

@test "ALERT_HOST_LABEL: each text starts with [HOST_NAME], otherwise the SPEC's" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=100 \
    ALERT_HOST_LABEL=true HOST_NAME=web-1
  run_at 1000
  receiver_expect_texts "[web-1] ${CPU_TEXT}" "[web-1] ${MEM_TEXT}"
  # Without HOST_NAME the kernel's host name is used.
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_HOST_LABEL=true
  run_at 1001
  receiver_expect_texts "[$(hostname)] ${CPU_TEXT}"
}

@test "ALERT_REPEAT_INTERVAL=1h: posted once, then once an hour by the clock" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=100 \
    ALERT_REPEAT_INTERVAL=1h
  run_at 100000
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}"
  run_at 100600
  [[ "$(receiver_count)" -eq 0 ]]
  [[ "${output}" == *"alerts=none held=cpu,memory"* ]]
  run_at 103599
  [[ "$(receiver_count)" -eq 0 ]]
  run_at 103600
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}"
  # Memory recovers, then goes over again: a new incident posts at once.
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_REPEAT_INTERVAL=1h
  run_at 104200
  [[ "$(receiver_count)" -eq 0 ]]
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=100 ALERT_REPEAT_INTERVAL=1h
  run_at 104800
  receiver_expect_texts "${MEM_TEXT}"
  # A clock stepped back does not mute the alert for hours.
  run_at 90000
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}"
}

@test "ALERT_SEND_RESOLVED: one resolved message per measure that fired, with its value" {
  local disk
  disk="$(root_disk)"
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0 ALERT_SEND_RESOLVED=true
  run_at 1000
  [[ "$(receiver_count)" -eq 3 ]]
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_SEND_RESOLVED=true
  run_at 1600
  receiver_expect_texts \
    "[Server Alert] "$'\n'"CPU Usage Back to Normal: 12.3%"$'\n'"Load Average: 0.52, 0.58, 0.59" \
    "[Server Alert] "$'\n'"Memory Usage Back to Normal: 90.92%"$'\n'"Active Processes: 42" \
    "[Server Alert] "$'\n'"Disk Usage Back to Normal: ${disk}%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
  [[ "${output}" == *"alerts=none resolved=cpu,memory,disk"* ]]
  # Once: the next quiet run posts nothing, and no state is left.
  run_at 2200
  [[ "$(receiver_count)" -eq 0 ]]
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.alerts" ]]
  # A measure that never fired resolves silently.
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_SEND_RESOLVED=true ALERT_AFTER_RUNS=2
  run_at 2800
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_SEND_RESOLVED=true ALERT_AFTER_RUNS=2
  run_at 3400
  [[ "$(receiver_count)" -eq 0 ]]
}

@test "ALERT_AFTER_RUNS=2: a one-run spike posts nothing, two runs in a row post" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_AFTER_RUNS=2
  run_at 1000
  [[ "$(receiver_count)" -eq 0 ]]
  [[ "${output}" == *"alerts=none held=cpu"* ]]
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_AFTER_RUNS=2
  run_at 1600
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_AFTER_RUNS=2
  run_at 2200
  [[ "$(receiver_count)" -eq 0 ]]
  run_at 2800
  receiver_expect_texts "${CPU_TEXT}"
  # The repeat interval is 0 (every run) once it fired.
  run_at 3400
  receiver_expect_texts "${CPU_TEXT}"
}

@test "all on: labelled, debounced, repeated hourly, resolved once" {
  local -a keys=(ALERT_HOST_LABEL=true HOST_NAME=db-2 ALERT_REPEAT_INTERVAL=1h
    ALERT_SEND_RESOLVED=true ALERT_AFTER_RUNS=2)
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 "${keys[@]}"
  run_at 10000
  [[ "$(receiver_count)" -eq 0 ]]
  run_at 10600
  receiver_expect_texts "[db-2] ${CPU_TEXT}"
  run_at 11200
  [[ "$(receiver_count)" -eq 0 ]]
  run_at 14200
  receiver_expect_texts "[db-2] ${CPU_TEXT}"
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 "${keys[@]}"
  run_at 14800
  receiver_expect_texts "[db-2] [Server Alert] "$'\n'"CPU Usage Back to Normal: 12.3%"$'\n'"Load Average: 0.52, 0.58, 0.59"
}

@test "alert state: root-only, rewritten only on change, a failed write still sends" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_REPEAT_INTERVAL=1h
  run_at 5000
  local state="${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.alerts"
  [[ "$(cat "${state}")" == $'1\t5000\t1\tcpu' ]]
  [[ "$(stat -c %a "${state}")" == 600 ]]
  local inode
  inode="$(stat -c %i "${state}")"
  run_at 5600
  [[ "$(stat -c %i "${state}")" == "${inode}" ]]
  # Garbage lines are forgotten, not fatal: the alert posts again.
  printf 'garbage\n9\tx\t1\tcpu\n' >"${state}"
  run_at 6200
  receiver_expect_texts "${CPU_TEXT}"
  # The temp file cannot be written (a directory in its way): logged, sent.
  mkdir "${HOSTGUARD_ROOT}/var/lib/hostguard/.host-monitor.alerts.tmp"
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=100 ALERT_REPEAT_INTERVAL=1h
  run_at 6800
  receiver_expect_texts "${MEM_TEXT}"
  [[ "${output}" == *"cannot write ${state}; alerts are still sent"* ]]
  [[ "$(cat "${state}")" == $'1\t6200\t1\tcpu' ]]
}

@test "heartbeat: one GET per completed run, never after an undelivered alert" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  local ping="https://127.0.0.1:${RECEIVER_PORT}/ping/${RECEIVER_SENTINEL}-hb"
  (umask 077 && printf 'url = "%s"\n' "${ping}" >"${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.curlrc")
  run_at 1000
  [[ "${output}" == *"host-monitor: heartbeat sent (HTTP 200)"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 1 ]]
  grep -q "\"path\": \"/ping/${RECEIVER_SENTINEL}-hb\"" "${RECEIVER_REQUESTS}"
  run_at 1600
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 2 ]]
  # An alert the chat service refuses stays spooled: no heartbeat.
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 NOTIFY_ATTEMPTS=1
  (umask 077 && printf 'url = "%s"\n' "${ping}" >"${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.curlrc")
  receiver_mode status500
  run_at 2200
  [[ "${output}" == *"no heartbeat"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 2 ]]
  # A heartbeat file others can read is refused, naming the file.
  receiver_mode ok
  chmod 0644 "${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.curlrc"
  run_at 2800
  [[ "${output}" == *"heartbeat file ${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.curlrc must be owned by uid 0 and mode 600"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 2 ]]
  # The URL is in no log line.
  [[ "${output}" != *"${RECEIVER_SENTINEL}"* ]]
}

# A stand-in df on PATH: MODE hang (never answers: waits on a 30 s sleep,
# its pid noted for teardown_df; like a df stuck in the kernel, its command
# line stays df's) or garbage (prints no figure and fails).
fake_df() {
  DF_BIN="${BATS_TEST_TMPDIR}/df-bin"
  mkdir -p "${DF_BIN}"
  case "$1" in
    hang) printf '#!/bin/sh\necho $$ >>"%s"\nsleep 30\n' "${BATS_TEST_TMPDIR}/df.pids" >"${DF_BIN}/df" ;;
    garbage) printf '#!/bin/sh\necho "df: /: Input/output error" >&2\necho garbage\nexit 1\n' >"${DF_BIN}/df" ;;
  esac
  chmod 0755 "${DF_BIN}/df"
}

teardown_df() {
  local pid
  [[ -f "${BATS_TEST_TMPDIR}/df.pids" ]] || return 0
  while read -r pid; do
    pkill -P "${pid}" 2>/dev/null || true
    kill "${pid}" 2>/dev/null || true
  done <"${BATS_TEST_TMPDIR}/df.pids"
}

DISK_FAILED_TEXT="[Server Alert] "$'\n'"Disk check failed: df did not answer within 1 s; disk use is not checked until it works again"

@test "a df that never answers: the run goes on (CPU and memory alerts), one Disk check failed alert, the lock stays free" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0 ALERT_SEND_RESOLVED=true
  fake_df hang
  local start
  start="$(date +%s)"
  PATH="${DF_BIN}:${PATH}" HOSTGUARD_DF_TIMEOUT=1 run_at 100000
  (($(date +%s) - start < 10))
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" "${DISK_FAILED_TEXT}"
  [[ "${output}" == *"df did not answer within 1 s; disk use not checked"* ]]
  [[ "${output}" == *"disk=unknown load="*"alerts=cpu memory disk-check"* ]]
  local stuck
  stuck="$(cat "${BATS_TEST_TMPDIR}/df.pids")"
  kill -0 "${stuck}"
  [[ "$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.df-pid")" == "${stuck}" ]]
  # The df still hangs: the next run takes the lock, starts no second df,
  # says why; CPU and memory repeat (the SPEC's every run), the disk
  # check's alert does not.
  PATH="${DF_BIN}:${PATH}" HOSTGUARD_DF_TIMEOUT=1 run_at 100600
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}"
  [[ "${output}" != *"another run holds"* ]]
  [[ "${output}" == *"df has not answered since an earlier run (pid ${stuck}); disk use not checked"* ]]
  [[ "$(cat "${BATS_TEST_TMPDIR}/df.pids")" == "${stuck}" ]]
  # Once it is gone, df runs again.
  teardown_df
  run_at 101200
  local disk
  disk="$(root_disk)"
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" \
    "[Server Alert] "$'\n'"Disk check works again: df answers" \
    "[Server Alert] "$'\n'"High Disk Usage Detected: ${disk}%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
}

@test "a user's process that took a stuck df's pid cannot hold the disk check off" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=0
  # The pid of an earlier, stuck df, now a process of nobody's whose command
  # line looks like df's.
  setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all bash -c 'sleep 30; exit 0' df --output=pcent / &
  local user_pid=$!
  mkdir -p "${HOSTGUARD_ROOT}/var/lib/hostguard"
  echo "${user_pid}" >"${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.df-pid"
  [[ "$(tr '\0' ' ' <"/proc/${user_pid}/cmdline")" == *" --output=pcent / "* ]]
  run_at 100000
  pkill -P "${user_pid}" || true
  kill "${user_pid}" 2>/dev/null || true
  [[ "${output}" != *"has not answered"* ]]
  receiver_expect_texts "[Server Alert] "$'\n'"High Disk Usage Detected: $(root_disk)%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.df-pid" ]]
}

@test "a df that fails or prints no figure: CPU and memory still alert, and the disk check's failure says so" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0
  fake_df garbage
  PATH="${DF_BIN}:${PATH}" run_at 100000
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" \
    "[Server Alert] "$'\n'"Disk check failed: df printed no use for /; disk use is not checked until it works again"
  # Without ALERT_SEND_RESOLVED a working df again is silent for the check,
  # and the disk alert comes back.
  run_at 100600
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" \
    "[Server Alert] "$'\n'"High Disk Usage Detected: $(root_disk)%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
}
