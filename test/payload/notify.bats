#!/usr/bin/env bats
# hostguard-notify and lib/notify.sh against the real curl, over TLS, to the
# test webhook receiver on 127.0.0.1, taught to answer as Slack does: exact
# ban-event texts, the spool under faults (down, 500, 429 with every kind of
# Retry-After, wrong certificate, slow, hang, reset, each permanent refusal of
# a message or of the webhook, a 2xx without ok, bad spool files, a full
# disk, a clock stepped back, overflow), no URL in any command line, log or
# file, one delivery per message, and what `status` reports.

setup() {
  load helpers/receiver
  NOTIFY="${BATS_TEST_DIRNAME}/../../scripts/hostguard-notify"
  LIB="${BATS_TEST_DIRNAME}/../../scripts/lib"
  ALL_OUTPUT="${BATS_TEST_TMPDIR}/all-output"
  : >"${ALL_OUTPUT}"
}

teardown() {
  receiver_stop
}

# Runs the notifier (bounded), keeping its output for the leak check.
notify() {
  run timeout 90 "${NOTIFY}" "$@"
  printf '%s\n' "${output}" >>"${ALL_OUTPUT}"
}

# Spools TEXT without delivering it.
enqueue() {
  bash -c 'source "$1/common.sh"; source "$1/notify.sh"; hg_load_settings; hg_notify_enqueue "$2"' \
    _ "${LIB}" "$1"
}

dead_count() {
  local -a files
  shopt -s nullglob
  files=("${HOSTGUARD_ROOT}"/var/spool/hostguard/dead/msg-*.json)
  shopt -u nullglob
  echo "${#files[@]}"
}

expect_dead() {
  local n
  n="$(dead_count)"
  [[ "${n}" -eq "$1" ]] || {
    echo "expected $1 dead letter(s), found ${n}"
    ls -la "${HOSTGUARD_ROOT}/var/spool/hostguard/dead" 2>&1
    return 1
  }
}

# The reasons of the dead letters, one per line, oldest first.
dead_reasons() {
  local file
  for file in "${HOSTGUARD_ROOT}"/var/spool/hostguard/dead/msg-*.json.reason; do
    [[ -e "${file}" ]] || continue
    cut -d' ' -f3- "${file}"
  done
}

spool_count() {
  local -a files
  shopt -s nullglob
  files=("${HOSTGUARD_ROOT}"/var/spool/hostguard/msg-*.json)
  shopt -u nullglob
  echo "${#files[@]}"
}

expect_status() {
  [[ "${status}" -eq "$1" ]] || {
    echo "expected exit $1, got ${status}; output:"
    echo "${output}"
    return 1
  }
}

# The delivered texts, in order, must be exactly the arguments.
expect_texts() {
  local want got
  want="$(printf '%s\n' "$@")"
  got="$(receiver_texts)"
  [[ "${got}" == "${want}" ]] || {
    echo "delivered texts differ"
    echo "--- want"
    echo "${want}"
    echo "--- got"
    echo "${got}"
    return 1
  }
}

expect_spool() {
  local n
  n="$(spool_count)"
  [[ "${n}" -eq "$1" ]] || {
    echo "expected $1 spooled message(s), found ${n}"
    return 1
  }
}

# The URL (its secret path) is in no output and in no file of the root but
# webhook.curlrc; curl's error text (host and port) is not shown either.
expect_no_leak() {
  if grep -F -e "${RECEIVER_SENTINEL}" -e "port ${RECEIVER_PORT}" \
    -e ":${RECEIVER_PORT}" "${ALL_OUTPUT}"; then
    echo "the webhook URL or curl's error text leaked into the output above"
    return 1
  fi
  local files
  files="$(grep -rlF -- "${RECEIVER_SENTINEL}" "${HOSTGUARD_ROOT}")"
  [[ "${files}" == "${HOSTGUARD_ROOT}/etc/hostguard/webhook.curlrc" ]] || {
    echo "files holding the URL: ${files}"
    return 1
  }
}

request_count() {
  local status="$1" n=0 line
  while IFS= read -r line; do
    [[ "${line}" == *"\"status\": ${status},"* ]] && n=$((n + 1))
  done <"${RECEIVER_REQUESTS}"
  echo "${n}"
}

# Prints each delivered form field `payload` exactly as sent (the JSON text),
# after checking that it is the body's only field.
sent_payloads() {
  python3 -c '
import json, sys, urllib.parse
for line in open(sys.argv[1], encoding="utf-8"):
    form = urllib.parse.parse_qs(json.loads(line)["raw"], keep_blank_values=True)
    if list(form) != ["payload"] or len(form["payload"]) != 1:
        print("BAD FORM", sorted(form))
        continue
    print(form["payload"][0])
' "${RECEIVER_MESSAGES}"
}

now_ms() {
  local us="${EPOCHREALTIME//[!0-9]/}"
  echo "$((10#${us} / 1000))"
}

@test "ban tool events: SPEC texts byte for byte, channel only on start and stop" {
  receiver_start
  receiver_make_root
  notify event start --jail nginx-bad-request --channel alerts
  expect_status 0
  notify event ban --jail nginx-bad-request --ip 192.0.2.7 --failures 10 --time 1700000000.5197537
  expect_status 0
  notify event unban --jail nginx-bad-request --ip 2001:db8::7
  expect_status 0
  notify event stop --jail nginx-bad-request --channel '#ops'
  expect_status 0
  # Events are spooled and sent by a detached flush.
  receiver_wait_count 4 20

  local want got
  # What went over the wire: the JSON text of the form field, byte for byte
  # (the SPEC's \n is the two characters backslash-n inside the JSON).
  want="$(
    cat <<'JSON'
{"text":"Ban tool (nginx-bad-request) jail has started","channel":"#alerts"}
{"text":"Ban Alert(nginx-bad-request)\n Banned IP: *192.0.2.7*\n Failures: 10 failure(s)\n Timestap: 1700000000"}
{"text":"Ban Alert(nginx-bad-request)\n Unbanned IP: *2001:db8::7*"}
{"text":"Ban tool (nginx-bad-request) jail has stopped","channel":"#ops"}
JSON
  )"
  got="$(sent_payloads)"
  [[ "${got}" == "${want}" ]] || {
    printf 'sent payloads differ\n--- want\n%s\n--- got\n%s\n' "${want}" "${got}"
    false
  }
  # And parsed as JSON by the receiver: the keys present are exactly these.
  want="$(
    cat <<'JSON'
{"channel": "#alerts", "text": "Ban tool (nginx-bad-request) jail has started"}
{"text": "Ban Alert(nginx-bad-request)\n Banned IP: *192.0.2.7*\n Failures: 10 failure(s)\n Timestap: 1700000000"}
{"text": "Ban Alert(nginx-bad-request)\n Unbanned IP: *2001:db8::7*"}
{"channel": "#ops", "text": "Ban tool (nginx-bad-request) jail has stopped"}
JSON
  )"
  got="$(receiver_payloads)"
  [[ "${got}" == "${want}" ]] || {
    printf 'parsed payloads differ\n--- want\n%s\n--- got\n%s\n' "${want}" "${got}"
    false
  }
  expect_spool 0
  expect_no_leak
}

@test "start without --channel uses the SLACK_CHANNEL setting" {
  receiver_start
  receiver_make_root SLACK_CHANNEL=security
  notify event start --jail j1
  expect_status 0
  receiver_wait_count 1 10
  [[ "$(receiver_payloads)" == '{"channel": "#security", "text": "Ban tool (j1) jail has started"}' ]] || {
    receiver_payloads
    false
  }
}

@test "--test posts the connectivity test message and spools nothing" {
  receiver_start
  receiver_make_root
  local host
  host="$(cat /proc/sys/kernel/hostname)"
  notify --test
  expect_status 0
  expect_texts "[Server Alert] \\nConnectivity test from ${host}: webhook OK"
  expect_spool 0
  receiver_mode status500
  notify --test
  expect_status 75
  expect_spool 0
  expect_no_leak
}

@test "hostile text arrives exactly as given" {
  receiver_start
  receiver_make_root
  local text=$'web "prod"\\1\t\x01\x1f\x7f \\u0041 é 日本 🚀\r\nend'
  notify text "${text}"
  expect_status 0
  python3 -c '
import json, sys
got = json.loads(open(sys.argv[1], encoding="utf-8").readline())["payload"]
want = sys.argv[2]
assert got == {"text": want}, (got, want)
' "${RECEIVER_MESSAGES}" "${text}"
}

@test "bad usage exits 64 and sends nothing" {
  receiver_start
  receiver_make_root
  notify
  expect_status 64
  notify event ban --jail j1 --ip 192.0.2.1
  expect_status 64
  notify event ban --jail j1 --ip '1.2.3.4;id' --failures 1 --time 1
  expect_status 64
  notify event reboot --jail j1
  expect_status 64
  notify text
  expect_status 64
  [[ "$(receiver_count)" -eq 0 ]]
}

@test "fault: receiver down; spooled messages go out oldest first once it is back" {
  receiver_start
  receiver_make_root NOTIFY_ATTEMPTS=2
  local port="${RECEIVER_PORT}"
  receiver_stop
  notify text m1
  expect_status 75
  [[ "${output}" == *"connection refused"* ]] || {
    echo "${output}"
    false
  }
  notify text m2
  expect_status 75
  expect_spool 2
  receiver_start --port "${port}"
  notify text m3
  expect_status 0
  expect_texts m1 m2 m3
  expect_spool 0
  expect_no_leak
}

@test "fault: HTTP 500 is transient, retried and re-sent by the next run; a 200 without body ok is delivered once" {
  receiver_start
  receiver_make_root NOTIFY_ATTEMPTS=2
  receiver_mode status500
  notify text m1
  expect_status 75
  [[ "${output}" == *"HTTP 500 internal_error"* ]]
  [[ "$(request_count 500)" -eq 2 ]]
  expect_spool 1
  receiver_mode ok
  notify flush
  expect_status 0
  # The chat service took it (2xx): a warning, and never sent again.
  receiver_mode badbody
  notify text m2
  expect_status 0
  [[ "${output}" == *"WARN delivered"*"HTTP 200 no_text, not 200 ok"* ]] || {
    echo "${output}"
    false
  }
  notify flush
  expect_status 0
  expect_texts m1 m2
  [[ "$(request_count 200)" -eq 2 ]]
  expect_spool 0
  expect_dead 0
  expect_no_leak
}

@test "fault: 429 with Retry-After is honoured, delivered after the wait and not before" {
  receiver_start
  receiver_make_root
  receiver_mode ratelimit 3
  local start end
  start="$(now_ms)"
  notify text m1
  end="$(now_ms)"
  expect_status 0
  expect_texts m1
  # One refused request, then the delivery: no hammering inside the window.
  [[ "$(request_count 429)" -eq 1 ]] || {
    cat "${RECEIVER_REQUESTS}"
    false
  }
  python3 -c '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["status"] for r in reqs] == [429, 200], reqs
waited = reqs[1]["time"] - reqs[0]["time"]
assert waited >= 3.0, waited
' "${RECEIVER_REQUESTS}"
  ((end - start >= 3000 && end - start < 8000)) || {
    echo "took $((end - start)) ms"
    false
  }
  expect_no_leak
}

@test "fault: 429 with a Retry-After beyond the run budget leaves the message for the next run" {
  receiver_start
  receiver_make_root NOTIFY_BUDGET=5
  receiver_mode ratelimit 60
  local start end
  start="$(now_ms)"
  notify text m1
  end="$(now_ms)"
  expect_status 75
  ((end - start < 5000)) || {
    echo "took $((end - start)) ms"
    false
  }
  expect_spool 1
  receiver_mode ok
  notify text m2
  expect_status 0
  expect_texts m1 m2
  expect_no_leak
}

@test "fault: wrong certificate (unrelated CA, or the system CAs) is refused; the right CA delivers" {
  receiver_start
  receiver_make_root NOTIFY_ATTEMPTS=1 "NOTIFY_CA_FILE=${RECEIVER_WRONG_CA}"
  notify text m1
  expect_status 75
  [[ "${output}" == *"certificate not trusted"* ]] || {
    echo "${output}"
    false
  }
  receiver_make_root NOTIFY_ATTEMPTS=1 NOTIFY_CA_FILE=
  notify text m2
  expect_status 75
  # The handshake failed, so no request reached the receiver.
  [[ ! -s "${RECEIVER_REQUESTS}" ]]
  receiver_make_root
  notify flush
  expect_status 0
  expect_texts m1 m2
  expect_no_leak
}

@test "fault: slow response; run ends within its budget and the URL is in no command line" {
  receiver_start
  receiver_make_root NOTIFY_MAX_TIME=2 NOTIFY_ATTEMPTS=3 NOTIFY_BUDGET=5
  receiver_mode slow 30
  local start end pid i scan rc=0
  start="$(now_ms)"
  "${NOTIFY}" text m1 >"${BATS_TEST_TMPDIR}/slow.out" 2>&1 3>&- &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    [[ -s "${RECEIVER_REQUESTS}" ]] && break
    sleep 0.05
  done
  [[ -s "${RECEIVER_REQUESTS}" ]] || {
    echo "curl never reached the receiver"
    false
  }
  # curl is now waiting on the receiver: read every process's command line.
  # The sentinel goes to the scanner through its environment, not its argv.
  # Only curls below our notifier count: another program may run curl now.
  scan="$(SCAN_FOR="${RECEIVER_SENTINEL}" ROOT_PID="${pid}" python3 -c '
import glob, os
sentinel = os.environ["SCAN_FOR"].encode()
root = int(os.environ["ROOT_PID"])
parent, argvs = {}, {}
for path in glob.glob("/proc/[0-9]*"):
    pid = int(path.rsplit("/", 1)[1])
    try:
        argvs[pid] = open(path + "/cmdline", "rb").read()
        stat = open(path + "/stat", "rb").read()
    except OSError:
        continue
    parent[pid] = int(stat.rsplit(b")", 1)[1].split()[1])
def ours(pid):
    for _ in range(64):
        if pid == root:
            return True
        pid = parent.get(pid, 0)
        if pid <= 1:
            return False
    return False
curls = 0
for pid, argv in argvs.items():
    if sentinel in argv:
        print("LEAK", pid, argv.replace(b"\0", b" ")[:200])
    if ours(pid) and argv.startswith(b"curl\0") and b"--config\0" in argv:
        curls += 1
print("curls", curls)
')"
  wait "${pid}" || rc=$?
  end="$(now_ms)"
  cat "${BATS_TEST_TMPDIR}/slow.out" >>"${ALL_OUTPUT}"
  echo "${scan}"
  [[ "${scan}" != *LEAK* ]]
  [[ "${scan}" == *"curls 1"* ]]
  [[ "${rc}" -eq 75 ]]
  ((end - start <= 5000 + 2000)) || {
    echo "run took $((end - start)) ms, budget 5 s"
    false
  }
  grep -q "timed out" "${BATS_TEST_TMPDIR}/slow.out"
  expect_spool 1
  receiver_mode ok
  notify flush
  expect_status 0
  expect_texts m1
  expect_no_leak
}

@test "bad webhook file: http:// URL refused without printing it" {
  receiver_start
  receiver_make_root
  printf 'url = "http://127.0.0.1:%s%s"\n' "${RECEIVER_PORT}" "${RECEIVER_SECRET_PATH}" \
    >"${HOSTGUARD_ROOT}/etc/hostguard/webhook.curlrc"
  notify text m1
  expect_status 78
  [[ "${output}" == *"not https://"* ]] || {
    echo "${output}"
    false
  }
  expect_spool 1
  [[ ! -s "${RECEIVER_REQUESTS}" ]]
  receiver_make_root
  notify flush
  expect_status 0
  expect_texts m1
  expect_no_leak
}

@test "bad webhook file: mode 0644, extra curl options, or missing are refused" {
  receiver_start
  receiver_make_root
  local rc="${HOSTGUARD_ROOT}/etc/hostguard/webhook.curlrc"
  chmod 0644 "${rc}"
  notify text m1
  expect_status 78
  [[ "${output}" == *"readable by group or others"* ]]
  chmod 0600 "${rc}"
  printf 'insecure\n' >>"${rc}"
  notify flush
  expect_status 78
  receiver_make_root
  mv "${rc}" "${rc}.away"
  notify flush
  expect_status 78
  [[ "${output}" == *"missing"* ]]
  notify --test
  expect_status 78
  [[ ! -s "${RECEIVER_REQUESTS}" ]]
  mv "${rc}.away" "${rc}"
  notify flush
  expect_status 0
  expect_texts m1
  expect_no_leak
}

@test "two flushes started at once deliver each message exactly once, in order, paced" {
  receiver_start --mode "pace 0.9"
  receiver_make_root
  local i pid1 pid2 rc1=0 rc2=0
  for i in 1 2 3 4; do
    enqueue "m${i}"
  done
  expect_spool 4
  "${NOTIFY}" flush >"${BATS_TEST_TMPDIR}/f1.out" 2>&1 3>&- &
  pid1=$!
  "${NOTIFY}" flush >"${BATS_TEST_TMPDIR}/f2.out" 2>&1 3>&- &
  pid2=$!
  wait "${pid1}" || rc1=$?
  wait "${pid2}" || rc2=$?
  cat "${BATS_TEST_TMPDIR}"/f?.out | tee -a "${ALL_OUTPUT}"
  [[ "${rc1}" -eq 0 || "${rc1}" -eq 75 ]]
  [[ "${rc2}" -eq 0 || "${rc2}" -eq 75 ]]
  expect_texts m1 m2 m3 m4
  expect_spool 0
  # Paced to the chat service's one message per second (the receiver
  # allows 0.9 s for network jitter): never refused.
  [[ "$(request_count 429)" -eq 0 ]]
  expect_no_leak
}

@test "a flush with an empty spool spawns no process" {
  command -v strace >/dev/null || { echo "strace not installed (.ci/run installs it): the test cannot run" >&2; false; }
  receiver_start
  receiver_make_root
  local trace="${BATS_TEST_TMPDIR}/trace" n
  strace -f -qq -e trace=execve -o "${trace}" bash -c \
    'source "$1/common.sh"; source "$1/notify.sh"; hg_load_settings; hg_notify_flush' _ "${LIB}"
  n="$(grep -c 'execve(' "${trace}")"
  [[ "${n}" -eq 1 ]] || {
    cat "${trace}"
    false
  }
  # The same count sees the spawns of a real delivery.
  enqueue m1
  strace -f -qq -e trace=execve -o "${trace}" bash -c \
    'source "$1/common.sh"; source "$1/notify.sh"; hg_load_settings; hg_notify_flush' _ "${LIB}" >/dev/null
  n="$(grep -c 'execve(' "${trace}")"
  ((n > 1))
  expect_texts m1
}
