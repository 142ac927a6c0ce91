#!/usr/bin/env bats
# Host monitor against the real programs: alerts received byte for byte by
# the HTTPS test receiver, the disk figure checked against df, child
# processes counted with strace. The figures' own checks against free -m,
# uptime, uptime -p and ps aux are pytest's (test/agent/test_metrics.py).

load ../helpers/receiver
load helpers/proc-fixture

REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
MONITOR="${REPO}/scripts/host-monitor"

setup() {
  receiver_start
  FIX="${BATS_TEST_TMPDIR}/proc"
  make_proc "${FIX}"
}

teardown() {
  teardown_stuck
  receiver_stop
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
  # The next run takes no sample of its own: no one-second sleep at all.
  local trace="${BATS_TEST_TMPDIR}/sleeps"
  run timeout 30 strace -f -qq -e trace=clock_nanosleep,nanosleep -o "${trace}" "${MONITOR}"
  [[ "${status}" -eq 0 ]]
  [[ "${output}" =~ cpu=[0-9]{1,3}\.[0-9]%\  ]]
  ! grep -E 'tv_sec=[1-9]' "${trace}" || false
  # A sample from another boot is not averaged over.
  echo 'another-boot 1 2' >"${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample"
  start="${EPOCHREALTIME/./}"
  run timeout 30 "${MONITOR}"
  end="${EPOCHREALTIME/./}"
  (((end - start) >= 1000000))
}

@test "a quiet run with an empty spool executes nothing and forks once (statvfs)" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  run timeout 30 "${MONITOR}" # leaves the CPU sample: the measured run is a normal one
  [[ "${status}" -eq 0 ]]
  local trace="${BATS_TEST_TMPDIR}/trace"
  run timeout 30 strace -f -qq -e trace=execve,clone,clone3,fork,vfork -o "${trace}" "${MONITOR}"
  [[ "${status}" -eq 0 ]]
  cat "${trace}"
  local -a programs=()
  mapfile -t programs < <(grep -E 'execve\(.*\) = 0$' "${trace}" | sed -E 's/.*execve\("([^"]+)".*/\1/')
  echo "programs: ${programs[*]}"
  # The one program is the interpreter running the monitor itself.
  ((${#programs[@]} == 1))
  [[ "${programs[0]}" == "${MONITOR}" ]]
  # And one fork: the child that calls statvfs without the lock.
  local forks
  forks="$(grep -cE '(clone3?|v?fork)\(.*\) = [1-9][0-9]*$' "${trace}")"
  echo "forks: ${forks}"
  ((forks == 1))
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
  [[ "$(cat "${state}")" == $'1\t5000\t1\t5000\tcpu' ]]
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
  [[ "$(cat "${state}")" == $'1\t6200\t1\t6200\tcpu' ]]
}

@test "heartbeat: one GET per completed run, never after an undelivered alert" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100
  local ping="https://127.0.0.1:${RECEIVER_PORT}/ping/${RECEIVER_SENTINEL}-hb"
  (umask 077 && printf 'url=%s\n' "${ping}" >"${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.conf")
  run_at 1000
  [[ "${output}" == *"host-monitor: heartbeat sent (HTTP 200)"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 1 ]]
  grep -q "\"path\": \"/ping/${RECEIVER_SENTINEL}-hb\"" "${RECEIVER_REQUESTS}"
  run_at 1600
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 2 ]]
  # An alert the chat service refuses stays spooled: no heartbeat.
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 NOTIFY_ATTEMPTS=1
  (umask 077 && printf 'url=%s\n' "${ping}" >"${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.conf")
  receiver_mode status500
  run_at 2200
  [[ "${output}" == *"no heartbeat"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 2 ]]
  # A heartbeat file others can read is refused, naming the file.
  receiver_mode ok
  chmod 0644 "${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.conf"
  run_at 2800
  [[ "${output}" == *"heartbeat file ${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.conf is readable by group or others (mode 644); chmod 600 it; no heartbeat sent"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 2 ]]
  # The URL is in no log line.
  [[ "${output}" != *"${RECEIVER_SENTINEL}"* ]]
}

# A mount that never answers: HOSTGUARD_DF_PATH (tests only) names what
# statvfs measures instead of /; a FIFO nobody writes to blocks the child's
# open() in the kernel, as a dead NFS or a dying disk blocks statvfs.
hung_mount() {
  HUNG="${BATS_TEST_TMPDIR}/hung-mount"
  mkfifo "${HUNG}"
}

# The stuck child the monitor noted (pid and start time), ended at the test's end.
stuck_child() {
  local pid
  pid="$(cut -d' ' -f1 "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.df-pid")"
  echo "${pid}" >>"${BATS_TEST_TMPDIR}/stuck.pids"
  echo "${pid}"
}

teardown_stuck() {
  local pid
  [[ -f "${BATS_TEST_TMPDIR}/stuck.pids" ]] || return 0
  while read -r pid; do
    kill -9 "${pid}" 2>/dev/null || true
  done <"${BATS_TEST_TMPDIR}/stuck.pids"
}

DISK_FAILED_TEXT="[Server Alert] "$'\n'"Disk check failed: statvfs(BATS_HUNG) did not answer within 1 s; disk use is not checked until it works again"

@test "a statvfs that never answers: the run goes on (CPU and memory alerts), one Disk check failed alert, the lock stays free" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0 ALERT_SEND_RESOLVED=true
  hung_mount
  local start
  start="$(date +%s)"
  HOSTGUARD_DF_PATH="${HUNG}" HOSTGUARD_DF_TIMEOUT=1 run_at 100000
  (($(date +%s) - start < 10))
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" "${DISK_FAILED_TEXT/BATS_HUNG/${HUNG}}"
  [[ "${output}" == *"statvfs(${HUNG}) did not answer within 1 s; disk use not checked"* ]]
  [[ "${output}" == *"disk=unknown load="*"alerts=cpu memory disk-check"* ]]
  local stuck
  stuck="$(stuck_child)"
  kill -0 "${stuck}"
  # The stuck child holds no descriptor of the lock.
  flock --nonblock "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.lock" true
  # Still stuck: the next run takes the lock, starts no second child, says
  # why; CPU and memory repeat (the SPEC's every run), the disk check's
  # alert does not.
  HOSTGUARD_DF_PATH="${HUNG}" HOSTGUARD_DF_TIMEOUT=1 run_at 100600
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}"
  [[ "${output}" != *"another run holds"* ]]
  [[ "${output}" == *"statvfs(${HUNG}) has not answered since an earlier run (pid ${stuck}); disk use not checked"* ]]
  [[ "$(stuck_child)" == "${stuck}" ]]
  # Once it is gone, the check runs again.
  teardown_stuck
  local i
  for ((i = 0; i < 50; i++)); do kill -0 "${stuck}" 2>/dev/null || break; sleep 0.1; done
  run_at 101200
  local disk
  disk="$(root_disk)"
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" \
    "[Server Alert] "$'\n'"Disk check works again: df answers" \
    "[Server Alert] "$'\n'"High Disk Usage Detected: ${disk}%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
}

@test "a user's process that took a stuck child's pid cannot hold the disk check off" {
  receiver_make_root CPU_THRESHOLD=100 MEMORY_THRESHOLD=100 DISK_THRESHOLD=0
  # The pid and start time of an earlier, stuck child, now a process of nobody's.
  setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all sleep 30 &
  local user_pid=$!
  sleep 0.2
  mkdir -p "${HOSTGUARD_ROOT}/var/lib/hostguard"
  local started
  started="$(sed -E 's/.*\) //' "/proc/${user_pid}/stat" | cut -d' ' -f20)"
  echo "${user_pid} ${started}" >"${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.df-pid"
  run_at 100000
  kill "${user_pid}" 2>/dev/null || true
  [[ "${output}" != *"has not answered"* ]]
  receiver_expect_texts "[Server Alert] "$'\n'"High Disk Usage Detected: $(root_disk)%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/host-monitor.df-pid" ]]
}

@test "a statvfs that fails: CPU and memory still alert, and the disk check's failure says so" {
  receiver_make_root CPU_THRESHOLD=0 MEMORY_THRESHOLD=0 DISK_THRESHOLD=0
  HOSTGUARD_DF_PATH="${BATS_TEST_TMPDIR}/gone" run_at 100000
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" \
    "[Server Alert] "$'\n'"Disk check failed: statvfs(${BATS_TEST_TMPDIR}/gone) failed: No such file or directory; disk use is not checked until it works again"
  # Without ALERT_SEND_RESOLVED a working check again is silent for the
  # check, and the disk alert comes back.
  run_at 100600
  receiver_expect_texts "${CPU_TEXT}" "${MEM_TEXT}" \
    "[Server Alert] "$'\n'"High Disk Usage Detected: $(root_disk)%"$'\n'"System Uptime: up 2 weeks, 6 hours, 56 minutes"
}
