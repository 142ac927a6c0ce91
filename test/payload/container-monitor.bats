#!/usr/bin/env bats
# Container monitor against the stand-in docker CLI (test/helpers/fake-docker,
# on PATH as `docker`): alerts received byte for byte by the HTTPS test
# receiver, runtime calls counted, hostile names and error texts.

load ../helpers/receiver

REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
MONITOR="${REPO}/scripts/container-monitor"

# Names real Docker would refuse, on purpose: the monitor must not trust them.
NAME_QUOTES='we"b \ $(touch x) `id` '"'q'"
NAME_UTF8='ünïcødé 名前 🐳 | &amp; <b>'
# As Slack's body carries it: its three escapes (formats.inert), which Slack shows as NAME_UTF8.
SENT_UTF8='ünïcødé 名前 🐳 | &amp;amp; &lt;b&gt;'
NAME_CTRL=$'tab\there\u2028sep'

setup() {
  receiver_start
  receiver_make_root
  mkdir -p "${BATS_TEST_TMPDIR}/bin"
  ln -s "${REPO}/test/helpers/fake-docker" "${BATS_TEST_TMPDIR}/bin/docker"
  export PATH="${BATS_TEST_TMPDIR}/bin:${PATH}"
  export FAKE_DOCKER_STATE="${BATS_TEST_TMPDIR}/containers.json"
  export FAKE_DOCKER_CALLS="${BATS_TEST_TMPDIR}/calls.jsonl"
  : >"${FAKE_DOCKER_CALLS}"
}

teardown() {
  receiver_stop
}

# containers NAME STATE CPU MEM [EXIT_CODE ERROR] ... as JSON for the fake;
# CPU/MEM "null" for no data. Each container is one `;`-free arg group of 6.
containers() {
  python3 - "${FAKE_DOCKER_STATE}" "$@" <<'EOF'
import json, sys
out, args = [], sys.argv[2:]
for i in range(0, len(args), 6):
    name, state, cpu, mem, code, error = args[i:i + 6]
    out.append({"name": name, "state": state,
                "cpu": None if cpu == "null" else cpu,
                "mem": None if mem == "null" else mem,
                "exit_code": int(code), "error": error})
json.dump({"containers": out}, open(sys.argv[1], "w"), ensure_ascii=False)
EOF
}

settings() {
  receiver_make_root "$@"
}

clear_received() {
  : >"${RECEIVER_MESSAGES}"
  : >"${FAKE_DOCKER_CALLS}"
}

# Prints the subcommand of each runtime call, space-separated.
calls() {
  python3 -c '
import json, sys
print(" ".join(json.loads(l)[0] for l in open(sys.argv[1])))' "${FAKE_DOCKER_CALLS}"
}

run_monitor() {
  run timeout 60 "${MONITOR}"
  echo "exit ${status}:"
  echo "${output}"
  echo "calls: $(calls)"
}

P="[Container Alert] "$'\n'

@test "no containers: one list call, no alert" {
  containers
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(calls)" == "ps" ]]
  [[ "$(receiver_count)" -eq 0 ]]
  [[ "${output}" == *"containers=0 running=0 previously_running=0 alerts=0"* ]]
}

@test "one container with a hostile name: CPU and memory alerts, three calls" {
  containers "${NAME_QUOTES}" running 80.01% 95.5% 0 ""
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(calls)" == "ps inspect stats" ]]
  receiver_expect_texts "${P}High CPU usage detected: ${NAME_QUOTES} - 80.01%" \
    "${P}High memory usage detected: ${NAME_QUOTES} - 95.5%"
  [[ ! -e x ]]
}

@test "podman's answers (fake-docker as podman: {{json .}} an array) are read as docker's" {
  export FAKE_DOCKER_FLAVOR=podman
  containers "${NAME_QUOTES}" running 80.01% 1.00% 0 "" db exited 0.00% 0.00% 2 ""
  settings CONTAINER_WATCH=db
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(calls)" == "ps inspect stats" ]]
  receiver_expect_texts "${P}Container stopped: db (Status: exited)"$'\n'"Exit Code: 2"$'\n'"Error: No specific error" \
    "${P}High CPU usage detected: ${NAME_QUOTES} - 80.01%"
  [[ "${output}" == *"containers=2 running=1 previously_running=0 alerts=2"* ]]
}

@test "three containers with hostile names: only values above the thresholds fire" {
  containers "${NAME_QUOTES}" running 80.00% 90.00% 0 "" \
    "${NAME_UTF8}" running 350.25% 12.00% 0 "" \
    "${NAME_CTRL}" running 1.00% 90.01% 0 ""
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(calls)" == "ps inspect stats" ]]
  receiver_expect_texts "${P}High CPU usage detected: ${SENT_UTF8} - 350.25%" \
    "${P}High memory usage detected: ${NAME_CTRL} - 90.01%"
  # Log lines stay one line each, names shown as JSON strings.
  [[ "${output}" == *'running "tab\there'$'\u2028''sep" cpu=1.00% memory=90.01%'* ]]
  [[ "$(wc -l <"${HOSTGUARD_ROOT}/var/lib/hostguard/containers.running")" -eq 3 ]]
}

@test "running at check 1, exited 137 at check 2: exactly one stopped alert" {
  containers "${NAME_UTF8}" running 1.00% 1.00% 0 "" other running 1.00% 1.00% 0 ""
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 0 ]]
  local error=$'OCI runtime: "cgroup" \\ limit\nkilled (OOM)'
  containers "${NAME_UTF8}" exited 1.00% 1.00% 137 "${error}" other running 1.00% 1.00% 0 ""
  clear_received
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(calls)" == "ps inspect stats" ]]
  receiver_expect_texts "${P}Container stopped: ${SENT_UTF8} (Status: exited)"$'\n'"Exit Code: 137"$'\n'"Error: ${error}"
  # Check 3: it was not running at check 2, so no second alert.
  clear_received
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 0 ]]
}

@test "an exited container without an error text says so" {
  containers web running 1.00% 1.00% 0 ""
  run_monitor
  containers web exited 1.00% 1.00% 0 ""
  clear_received
  run_monitor
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 0"$'\n'"Error: No specific error"
  # Nothing runs any more: list and inspect only.
  [[ "$(calls)" == "ps inspect" ]]
}

@test "a container gone since the previous check: Status removed" {
  containers "${NAME_QUOTES}" running 1.00% 1.00% 0 "" keep running 1.00% 1.00% 0 ""
  run_monitor
  containers keep running 1.00% 1.00% 0 ""
  clear_received
  run_monitor
  [[ "${status}" -eq 0 ]]
  receiver_expect_texts "${P}Container stopped: ${NAME_QUOTES} (Status: removed)"$'\n'"Exit Code: unknown"$'\n'"Error: No such container"
  [[ "$(calls)" == "ps inspect stats" ]]
}

@test "watch list: a name never seen and an exited one alert on every run" {
  settings 'CONTAINER_WATCH=ghost , db "main" ünï'
  containers 'db "main" ünï' exited 0.00% 0.00% 1 "" web running 1.00% 1.00% 0 ""
  # In the order of the watch list.
  local -a want=(
    "${P}Container stopped: ghost (Status: not found)"$'\n'"Exit Code: unknown"$'\n'"Error: No such container"
    "${P}Container stopped: db \"main\" ünï (Status: exited)"$'\n'"Exit Code: 1"$'\n'"Error: No specific error"
  )
  run_monitor
  [[ "${status}" -eq 0 ]]
  receiver_expect_texts "${want[@]}"
  [[ "$(calls)" == "ps inspect stats" ]]
  clear_received
  run_monitor
  receiver_expect_texts "${want[@]}"
}

@test "stats -- or missing: logged as unknown, never fine" {
  containers quiet running null null 0 "" hot running 99.00% 1.00% 0 ""
  run_monitor
  [[ "${status}" -eq 0 ]]
  receiver_expect_texts "${P}High CPU usage detected: hot - 99.00%"
  [[ "${output}" == *'CPU of "quiet" unknown (stats gave "--")'* ]]
  [[ "${output}" == *'memory of "quiet" unknown (stats gave "--")'* ]]
  [[ "${output}" == *'running "quiet" cpu=unknown memory=unknown'* ]]
}

@test "the call count stays 3 for 1 and for 20 containers" {
  export FAKE_DOCKER_STATS_SLEEP=2
  containers c1 running 1.00% 1.00% 0 ""
  run_monitor
  [[ "$(calls)" == "ps inspect stats" ]]
  local -a args=()
  local i
  for ((i = 1; i <= 20; i++)); do
    args+=("box ${i} \"x\"" running "$((i * 5)).00%" 1.00% 0 "")
  done
  containers "${args[@]}"
  clear_received
  run_monitor
  [[ "${status}" -eq 0 ]]
  # One stats call for all 20 (the cost is measured in bench/, not timed here).
  [[ "$(calls)" == "ps inspect stats" ]]
  # 85 % .. 100 % are above 80: boxes 17 to 20; c1 is gone.
  [[ "$(receiver_count)" -eq 5 ]]
  receiver_texts | grep -c 'High CPU usage detected: box' | grep -qx 4
  receiver_texts | grep -qx '\[Container Alert\] \\nContainer stopped: c1 (Status: removed)\\nExit Code: unknown\\nError: No such container'
}

@test "runtime unavailable: one alert (not repeated), previous state kept, exit 1" {
  containers web running 1.00% 1.00% 0 ""
  run_monitor
  local before
  before="$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/containers.running")"
  settings CONTAINER_RUNTIME=false
  clear_received
  run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "${output}" == *"runtime unavailable"* ]]
  receiver_expect_texts "${P}Container check failed: runtime unavailable: false ps failed (exit 1); containers are not checked until it works again"
  [[ "$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/containers.running")" == "${before}" ]]
  run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(receiver_count)" -eq 1 ]]
}

@test "stats call fails: figures unknown, stopped alerts still sent, state saved" {
  containers web running 1.00% 1.00% 0 "" db running 99.00% 99.00% 0 ""
  run_monitor
  containers web exited 1.00% 1.00% 3 "" db running 99.00% 99.00% 0 ""
  clear_received
  FAKE_DOCKER_FAIL=stats run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(calls)" == "ps inspect stats" ]]
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 3"$'\n'"Error: No specific error"
  [[ "${output}" == *"stats failed"*"Cannot connect to the Docker daemon"* ]]
  [[ "${output}" == *'running "db" cpu=unknown memory=unknown'* ]]
  [[ "$(cut -f2 "${HOSTGUARD_ROOT}/var/lib/hostguard/containers.running")" == '"db"' ]]
}

@test "inspect fails: nothing concluded, state kept, exit 1" {
  containers web running 1.00% 1.00% 0 ""
  run_monitor
  containers web exited 1.00% 1.00% 3 ""
  clear_received
  FAKE_DOCKER_FAIL=inspect run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(calls)" == "ps inspect" ]]
  receiver_expect_texts "${P}Container check failed: runtime unavailable: docker inspect failed (exit 1); containers are not checked until it works again"
  # The next run, with the engine back, still reports the stop.
  clear_received
  run_monitor
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 3"$'\n'"Error: No specific error"
}

@test "fake docker answers like the real client: table, quiet, JSON lines, inspect's array and errors" {
  containers web running 1.00% 1.00% 0 "" old exited 0.00% 0.00% 2 ""
  run docker ps
  [[ "${lines[0]}" =~ ^CONTAINER\ ID\ +IMAGE\ +COMMAND\ +CREATED\ +STATUS\ +PORTS\ +NAMES$ ]]
  [[ "${#lines[@]}" -eq 2 ]]
  run docker ps -aq
  [[ "${#lines[@]}" -eq 2 && "${lines[0]}" =~ ^[0-9a-f]{12}$ ]]
  run docker ps --filter status=exited --format '{{.Names}}'
  [[ "${output}" == old ]]
  run docker inspect --format '{{.Name}}\t{{.State.Status}}' web nope
  [[ "${status}" -eq 1 ]]
  [[ "${lines[0]}" == '/web\trunning' ]]
  [[ "${output}" == *"Error: No such object: nope"* ]]
  run docker stats --no-stream --format '{{.Name}}\t{{.CPUPerc}}' web nope
  [[ "${status}" -eq 1 && "${output}" == *"No such container: nope"* ]]
  # {{json .}}: one object a line, keys sorted, <, > and & escaped as json.Marshal does.
  containers 'a<b>&c' running 1.00% 1.00% 0 ""
  run docker ps --no-trunc --format '{{json .}}'
  [[ "${output}" == '{"Command":"\"sleep infinity\"","CreatedAt":"2024-05-01 10:00:00 +0000 UTC","ID":"'*'","Image":"busybox:1.36","Labels":"","LocalVolumes":"0","Mounts":"","Names":"a\u003cb\u003e\u0026c","Networks":"bridge","Ports":"","RunningFor":"2 hours ago","Size":"0B","State":"running","Status":"Up 2 hours"}' ]]
  run docker ps --format '{{json .Names}}'
  [[ "${output}" == '"a<b>&c"' ]]
  # inspect without a format: one array indented by four spaces, the unknown ones on stderr, exit 1.
  run docker inspect 'a<b>&c' nope
  [[ "${status}" -eq 1 && "${lines[0]}" == "[" && "${lines[1]}" == "    {" && "${lines[2]}" == '        "Id": "'* ]]
  [[ "${output}" == *'"Name": "/a\u003cb\u003e\u0026c",'*$'\n    }\n]\nError: No such object: nope' ]]
  run docker inspect nope
  [[ "${status}" -eq 1 && "${output}" == $'[]\nError: No such object: nope' ]]
  run docker ps --bogus
  [[ "${status}" -eq 125 ]]
  # As podman: {{json .}} is one indented array ("Names" a list), the template's .Names the first
  # name, inspect's .Name without /, its template knows .ID and not .Id.
  run env FAKE_DOCKER_FLAVOR=podman docker ps --format '{{json .}}'
  [[ "${lines[0]}" == "[" && "${lines[1]}" == "     {" && "${output}" == *'"Names": ['* ]]
  run env FAKE_DOCKER_FLAVOR=podman docker ps --format '{{json .Names}}'
  [[ "${output}" == '"a<b>&c"' ]]
  run env FAKE_DOCKER_FLAVOR=podman docker inspect --format '{{json .ID}} {{json .Name}}' 'a<b>&c'
  [[ "${status}" -eq 0 && "${output}" == '"'*'" "a<b>&c"' ]]
  run env FAKE_DOCKER_FLAVOR=podman docker inspect --format '{{json .Id}}' 'a<b>&c'
  [[ "${status}" -ne 0 && "${output}" == *"can't evaluate field Id"* ]]
}

# ---- alert policy (issue 11): label, repeat interval, resolved, debounce ----

# One run at the test clock T (epoch seconds), received messages cleared.
run_at() {
  clear_received
  HOSTGUARD_NOW="$1" run_monitor
  [[ "${status}" -eq 0 ]]
}

@test "every alert key at its default: the SPEC texts, stop once, watched and CPU every run" {
  settings CONTAINER_WATCH=db ALERT_HOST_LABEL=false ALERT_REPEAT_INTERVAL=0 \
    ALERT_SEND_RESOLVED=false ALERT_AFTER_RUNS=1
  containers web running 1.00% 1.00% 0 "" db exited 0.00% 0.00% 2 "" hot running 85.00% 1.00% 0 ""
  local db="${P}Container stopped: db (Status: exited)"$'\n'"Exit Code: 2"$'\n'"Error: No specific error"
  local hot="${P}High CPU usage detected: hot - 85.00%"
  run_at 1000
  receiver_expect_texts "${db}" "${hot}"
  containers web exited 1.00% 1.00% 1 "" db exited 0.00% 0.00% 2 "" hot running 85.00% 1.00% 0 ""
  run_at 1600
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 1"$'\n'"Error: No specific error" "${db}" "${hot}"
  run_at 2200
  receiver_expect_texts "${db}" "${hot}"
  # Back to normal: nothing posted.
  containers web running 1.00% 1.00% 0 "" db running 0.00% 0.00% 0 "" hot running 5.00% 1.00% 0 ""
  run_at 2800
  [[ "$(receiver_count)" -eq 0 ]]
}

@test "ALERT_HOST_LABEL: container texts start with [HOST_NAME]" {
  settings ALERT_HOST_LABEL=true HOST_NAME=app-3
  containers "${NAME_QUOTES}" running 99.50% 95.00% 0 ""
  run_at 1000
  receiver_expect_texts "[app-3] ${P}High CPU usage detected: ${NAME_QUOTES} - 99.50%" \
    "[app-3] ${P}High memory usage detected: ${NAME_QUOTES} - 95.00%"
}

@test "ALERT_REPEAT_INTERVAL=1h: CPU and a watched stop hourly, a stop event once" {
  settings CONTAINER_WATCH=db ALERT_REPEAT_INTERVAL=1h
  containers web running 1.00% 1.00% 0 "" db exited 0.00% 0.00% 2 "" hot running 85.00% 1.00% 0 ""
  local db="${P}Container stopped: db (Status: exited)"$'\n'"Exit Code: 2"$'\n'"Error: No specific error"
  local hot="${P}High CPU usage detected: hot - 85.00%"
  run_at 100000
  receiver_expect_texts "${db}" "${hot}"
  containers web exited 1.00% 1.00% 1 "" db exited 0.00% 0.00% 2 "" hot running 86.00% 1.00% 0 ""
  run_at 100600
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 1"$'\n'"Error: No specific error"
  [[ "${output}" == *"alerts=1 held=2"* ]]
  run_at 103599
  [[ "$(receiver_count)" -eq 0 ]]
  run_at 103600
  receiver_expect_texts "${db}" "${P}High CPU usage detected: hot - 86.00%"
}

@test "ALERT_SEND_RESOLVED: CPU, memory, a stop event and a watched stop resolve once" {
  settings CONTAINER_WATCH=db ALERT_SEND_RESOLVED=true
  containers "${NAME_UTF8}" running 1.00% 1.00% 0 "" db exited 0.00% 0.00% 2 "" hot running 85.00% 97.25% 0 ""
  run_at 1000
  [[ "$(receiver_count)" -eq 3 ]]
  containers "${NAME_UTF8}" exited 1.00% 1.00% 137 "" db exited 0.00% 0.00% 2 "" hot running 85.00% 97.25% 0 ""
  run_at 1600
  [[ "$(receiver_count)" -eq 4 ]]
  # Still stopped: the event does not repeat; the watched stop and the figures do.
  run_at 2200
  [[ "$(receiver_count)" -eq 3 ]]
  receiver_texts | grep -c 'Container stopped: db' | grep -qx 1
  containers "${NAME_UTF8}" running 1.00% 1.00% 0 "" db running 0.00% 0.00% 0 "" hot running 12.00% 40.00% 0 ""
  run_at 2800
  receiver_expect_texts \
    "${P}Container running again: db (Status: running)" \
    "${P}Container running again: ${SENT_UTF8} (Status: running)" \
    "${P}CPU usage back to normal: hot - 12.00%" \
    "${P}Memory usage back to normal: hot - 40.00%"
  [[ "${output}" == *"alerts=0 resolved=4"* ]]
  run_at 3400
  [[ "$(receiver_count)" -eq 0 ]]
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/container-monitor.alerts" ]]
}

@test "ALERT_SEND_RESOLVED: a container removed after its stop alert is forgotten" {
  settings ALERT_SEND_RESOLVED=true
  containers web running 1.00% 1.00% 0 "" keep running 1.00% 1.00% 0 ""
  run_at 1000
  containers web exited 1.00% 1.00% 1 "" keep running 1.00% 1.00% 0 ""
  run_at 1600
  [[ "$(receiver_count)" -eq 1 ]]
  containers keep running 1.00% 1.00% 0 ""
  run_at 2200
  [[ "$(receiver_count)" -eq 0 ]]
  [[ ! -e "${HOSTGUARD_ROOT}/var/lib/hostguard/container-monitor.alerts" ]]
}

@test "ALERT_AFTER_RUNS=2: a restart inside the window posts nothing, a lasting stop posts once" {
  settings ALERT_AFTER_RUNS=2
  containers web running 1.00% 1.00% 0 "" hot running 85.00% 1.00% 0 ""
  run_at 1000
  [[ "$(receiver_count)" -eq 0 ]]
  containers web exited 1.00% 1.00% 1 "" hot running 85.00% 1.00% 0 ""
  run_at 1600
  receiver_expect_texts "${P}High CPU usage detected: hot - 85.00%"
  # web runs again before its second run stopped: nothing.
  containers web running 1.00% 1.00% 0 "" hot running 5.00% 1.00% 0 ""
  run_at 2200
  [[ "$(receiver_count)" -eq 0 ]]
  containers web exited 1.00% 1.00% 3 "" hot running 5.00% 1.00% 0 ""
  run_at 2800
  [[ "$(receiver_count)" -eq 0 ]]
  run_at 3400
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 3"$'\n'"Error: No specific error"
  # Three runtime calls still, the stopped container inspected by name.
  [[ "$(calls)" == "ps inspect stats" ]]
  run_at 4000
  [[ "$(receiver_count)" -eq 0 ]]
}

@test "heartbeat after a completed run; none when the runtime is unavailable" {
  local ping="https://127.0.0.1:${RECEIVER_PORT}/ping/hb"
  (umask 077 && printf 'url=%s\n' "${ping}" >"${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.conf")
  containers web running 1.00% 1.00% 0 ""
  run_at 1000
  [[ "${output}" == *"container-monitor: heartbeat sent (HTTP 200)"* ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 1 ]]
  FAKE_DOCKER_FAIL=inspect HOSTGUARD_NOW=1600 run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(grep -c '"method": "GET"' "${RECEIVER_REQUESTS}")" -eq 1 ]]
}

# A heartbeat URL on the receiver (its GETs are recorded as requests).
heartbeat_on() {
  (umask 077 && printf 'url=https://127.0.0.1:%s/ping/HEARTBEATsecret0123456789\n' "${RECEIVER_PORT}" \
    >"${HOSTGUARD_ROOT}/etc/hostguard/heartbeat.conf")
}

heartbeats() {
  grep -c '"method": "GET"' "${RECEIVER_REQUESTS}" || true
}

@test "issue 18: a hung runtime: each call ends at CONTAINER_RUNTIME_TIMEOUT, one alert through the spool, no heartbeat; it resolves when the runtime answers" {
  containers web running 1.00% 1.00% 0 ""
  settings CONTAINER_RUNTIME_TIMEOUT=2 ALERT_SEND_RESOLVED=true
  heartbeat_on
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(heartbeats)" -eq 1 ]]
  clear_received
  local start=${SECONDS}
  FAKE_DOCKER_HANG=ps run_monitor
  [[ "${status}" -eq 1 ]]
  ((SECONDS - start < 20))
  receiver_expect_texts "${P}Container check failed: runtime unavailable: docker ps did not answer within 2 s; containers are not checked until it works again"
  [[ "$(heartbeats)" -eq 1 ]]
  # Hung in inspect too: still that one alert, never repeated.
  FAKE_DOCKER_HANG=inspect run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(receiver_count)" -eq 1 ]]
  # The runtime answers again: resolved, heartbeat again.
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 2 ]]
  [[ "$(receiver_texts | tail -n1)" == "[Container Alert] \\nContainer check works again: docker answers" ]]
  [[ "$(heartbeats)" -eq 2 ]]
}

@test "a runtime printing more than OUTPUT_MAX (a 5 MiB container name): the call fails like a hung one, one alert naming the bound, no heartbeat; it resolves" {
  containers web running 1.00% 1.00% 0 ""
  settings ALERT_SEND_RESOLVED=true
  heartbeat_on
  run_monitor
  [[ "${status}" -eq 0 ]]
  local before
  before="$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/containers.running")"
  # Whoever may run containers names them; the client prints a name whole.
  python3 - "${FAKE_DOCKER_STATE}" <<'PY'
import json, sys
state = json.load(open(sys.argv[1]))
state["containers"].append({"name": "n" * (5 << 20), "state": "running"})
json.dump(state, open(sys.argv[1], "w"))
PY
  clear_received
  run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(calls)" == "ps" ]]
  [[ "${output}" == *"container-monitor: runtime unavailable: docker ps printed over 4 MiB, the most read from a runtime call; nothing checked"* ]]
  receiver_expect_texts "${P}Container check failed: runtime unavailable: docker ps printed over 4 MiB, the most read from a runtime call; containers are not checked until it works again"
  [[ "$(cat "${HOSTGUARD_ROOT}/var/lib/hostguard/containers.running")" == "${before}" ]]
  [[ "$(heartbeats)" -eq 1 ]]
  containers web running 1.00% 1.00% 0 ""
  run_monitor
  [[ "${status}" -eq 0 ]]
  [[ "$(receiver_count)" -eq 2 ]]
  [[ "$(receiver_texts | tail -n1)" == "[Container Alert] \\nContainer check works again: docker answers" ]]
  [[ "$(heartbeats)" -eq 2 ]]
}

@test "issue 18: a run stuck holding the lock: the next run alerts once (not only WARN), and the host monitor's heartbeat stops" {
  containers web running 1.00% 1.00% 0 ""
  heartbeat_on
  run_monitor
  [[ "${status}" -eq 0 ]]
  clear_received
  local lock="${HOSTGUARD_ROOT}/var/lib/hostguard/container-monitor.lock"
  # A run that took the lock 20 minutes ago and never finished.
  flock "${lock}" sleep 60 &
  local holder=$! i
  # Waited for, not slept for: the holder has the lock.
  for ((i = 0; i < 100; i++)); do
    flock --nonblock "${lock}" true 2>/dev/null || break
    sleep 0.1
  done
  ! flock --nonblock "${lock}" true || false
  touch -d '-20 min' "${lock}"
  run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(receiver_count)" -eq 1 ]]
  [[ "$(receiver_texts)" == "[Container Alert] \\nContainer monitor stuck: a run started at $(date -d '-20 min' '+%Y-%m-%d %H:')"*" has not finished; containers are not checked until it does" ]] || {
    receiver_texts
    false
  }
  run_monitor
  [[ "${status}" -eq 1 ]]
  [[ "$(receiver_count)" -eq 1 ]]
  # The host monitor runs fine, but sends no heartbeat for a stuck monitor.
  local before
  before="$(heartbeats)"
  run timeout 60 "${REPO}/scripts/host-monitor"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *"no heartbeat: a container-monitor run started at "*" has not completed"* ]]
  [[ "$(heartbeats)" -eq "${before}" ]]
  kill "${holder}"
  wait "${holder}" || true
}

@test "issue 18: a stop alert that could be neither spooled nor delivered is not recorded as posted: the next run posts it" {
  containers web running 1.00% 1.00% 0 ""
  run_monitor
  [[ "${status}" -eq 0 ]]
  containers web exited 1.00% 1.00% 3 ""
  # No spool (a file where its directory should be) and the service down.
  local spool="${HOSTGUARD_ROOT}/var/spool/hostguard" port="${RECEIVER_PORT}"
  mkdir -p "${spool}"
  mv "${spool}" "${spool}.away"
  : >"${spool}"
  receiver_stop
  clear_received
  run_monitor
  [[ "${output}" == *"alert lost"* ]]
  rm "${spool}"
  mv "${spool}.away" "${spool}"
  receiver_start --port "${port}"
  run_monitor
  [[ "${status}" -eq 0 ]]
  receiver_expect_texts "${P}Container stopped: web (Status: exited)"$'\n'"Exit Code: 3"$'\n'"Error: No specific error"
  # Posted now: not again.
  run_monitor
  [[ "$(receiver_count)" -eq 1 ]]
}
