# shellcheck shell=bash
# Scenario 16 of run.sh: hostguard:delivery ssm end to end on the disposable
# namespace hosts, with a stand-in playing State Manager and the SSM agent
# (lib/state_manager.py) against moto, and the real step, installer and payload.
#
# How the resources get into moto: the Pulumi program itself (a copy of the
# e2e project: index.ts, components/, scripts/) runs under Pulumi's mocks
# (lib/fleet-program.ts, the @pulumi/aws plugin cannot be had here), and the
# inputs of every @pulumi/aws resource it registers are applied to moto by the
# calls the provider would make (state_manager.py apply); the same calls
# test/aws/fleet.test.ts checks against moto. moto runs in the lan namespace
# on port 80, also at 169.254.169.254 (an address of the lan's bridge, the
# hosts' gateway): the hosts' instance metadata (IMDSv2), S3, SSM, KMS, IAM
# and EC2. Each fleet host gets an EC2 instance in moto (its id where
# cloud-init keeps it, /var/lib/cloud/data/instance-id); State Manager's part
# finds them by tag and runs the document's step inside them as root.
#
# What it cannot show: the real SSM agent (its registration and environment,
# and its own upload of the outputs), State Manager's scheduling (a run here
# is when the scenario says, not rate(30 minutes) nor an instance's
# registration), real KMS encryption (moto keeps SecureStrings in plain
# text), IAM scoping (not enforced here; test/aws/fleet.test.ts) and the
# security group (the hosts' network is the test's own; scenario 13).
#
# Reads what run.sh and runner.sh set: E2E_WORK, E2E_LOG_DIR, E2E_PROJECT_DIR,
# E2E_URL1, E2E_URL2, RECEIVER_SENTINEL, INSTALL_DIR; the moto venv of
# tools/setup.bash (hg_setup_moto, HOSTGUARD_MOTO_VENV).

readonly FLEET_REF_STACK=fleetref
readonly FLEET_SSM_STACK=fleetssm
readonly FLEET_HOSTS=(f1 f2 f3)
readonly FLEET_LATE=f4
# What a deploy installs (the host's own /var state and logs left out: cron may run a monitor).
readonly FLEET_PAYLOAD_PATHS=(/etc/hostguard /etc/cron.d /etc/fail2ban /etc/nginx /etc/logrotate.d
  /usr/local/lib /usr/local/bin /usr/local/sbin)
FLEET_MOTO_PID=""
FLEET_DIR=""
FLEET_PROGRAM=""
declare -A FLEET_ID=()

fleet_venv() {
  printf '%s\n' "${HOSTGUARD_MOTO_VENV:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/moto-venv}"
}

# sm ARGS...: the stand-in, pointed at moto; the dummy keys go to it alone.
sm() {
  HOSTGUARD_E2E_MOTO="http://$(lan_addr)" HOSTGUARD_E2E_HOST_ENDPOINT="http://$(lan_addr)" \
    AWS_ACCESS_KEY_ID=e2e AWS_SECRET_ACCESS_KEY=e2e AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
    "$(fleet_venv)/bin/python" "${E2E_LIB_DIR}/state_manager.py" "$@"
}

# moto in the lan namespace on port 80, also the hosts' 169.254.169.254.
fleet_moto_start() {
  local venv i
  venv="$(fleet_venv)"
  [[ -x "${venv}/bin/moto_server" ]] || fail "no moto_server in ${venv} (source tools/setup.bash && hg_setup_moto)"
  ip -n "$(lan_netns)" addr add 169.254.169.254/32 dev br0 || fail "could not give the lan 169.254.169.254"
  lan_exec "${venv}/bin/moto_server" -H 0.0.0.0 -p 80 >"${E2E_LOG_DIR}/16-moto.log" 2>&1 &
  FLEET_MOTO_PID=$!
  for ((i = 0; i < 300; i++)); do
    curl -sS -o /dev/null --max-time 1 "http://$(lan_addr)/moto-api/" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "moto_server did not answer in the lan: $(cat "${E2E_LOG_DIR}/16-moto.log")"
}

fleet_moto_stop() {
  [[ -n "${FLEET_MOTO_PID}" ]] || return 0
  kill "${FLEET_MOTO_PID}" 2>/dev/null || true
  wait "${FLEET_MOTO_PID}" 2>/dev/null || true
  FLEET_MOTO_PID=""
}

# fleet_apply URL [KEY=VALUE...]: the program (the copy FLEET_PROGRAM, the
# reference stack's settings) under mocks, its resources applied to moto.
# The URL goes on stdin only.
fleet_apply() {
  local url="$1"
  shift
  printf '%s\n' "${url}" |
    (cd "${E2E_REPO_ROOT}" && node --import tsx test/e2e/lib/fleet-program.ts "${FLEET_PROGRAM}" \
      "${E2E_PROJECT_DIR}/Pulumi.${FLEET_REF_STACK}.yaml" "${FLEET_SSM_STACK}" fleetMaxConcurrency=2 "$@") \
      2>>"${E2E_LOG_DIR}/16-program.log" |
    sm apply "${FLEET_DIR}" >"${FLEET_DIR}/applied.json" || fail "the fleet's resources did not apply: $(cat "${E2E_LOG_DIR}/16-program.log")"
}

# fleet_run N: one execution of the association; its JSON in FLEET_DIR/run-N.json.
fleet_run() {
  local n="$1" name
  local -a agents=()
  for name in "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    agents+=("${FLEET_ID[${name}]}=$(host_pid "${name}")")
  done
  sm run "${FLEET_DIR}" "${agents[@]}" >"${FLEET_DIR}/run-${n}.json" || fail "run ${n}: the stand-in failed"
  printf '  run %s: %s\n' "${n}" "$(jq -c '{status, refused, peakConcurrency, targets: (.targets // {} | map_values(.status))}' "${FLEET_DIR}/run-${n}.json")"
}

# The step's summary line (the installer's own output comes before it).
readonly LAST_LINE='rtrimstr("\n") | split("\n") | last'
readonly LAST_LINES="[.targets[].stdout | ${LAST_LINE}] | unique | join(\",\")"

# run_field N JQ: a field of run N's JSON.
run_field() {
  jq -r "$2" "${FLEET_DIR}/run-$1.json"
}

# expect_targets N NAME=STATUS...: exactly these hosts were targets, with these statuses.
expect_targets() {
  local n="$1" spec wanted=()
  shift
  for spec in "$@"; do
    wanted+=("${FLEET_ID[${spec%%=*}]} ${spec#*=}")
  done
  expect_eq "run ${n}: targets and statuses" \
    "$(run_field "${n}" '.targets | to_entries[] | "\(.key) \(.value.status)"' | sort)" \
    "$(printf '%s\n' "${wanted[@]}" | sort)"
}

# The installed payload, comparable across hosts (no bytecode caches).
payload_of() {
  host_snapshot "$1" "${FLEET_PAYLOAD_PATHS[@]}" | grep -v '/__pycache__'
}

expect_same_payload() {
  local what="$1" got="$2" want="$3"
  [[ "${got}" == "${want}" ]] && return 0
  diff <(echo "${want}") <(echo "${got}") | head -n 20 | sed 's/^/    /' >&2 || true
  fail "${what}: the installed files differ"
}

# The applied record and every installed file's mtime and ctime: a step that installed anything changes them.
installed_times() {
  # shellcheck disable=SC2016 # expanded by the host's sh
  host_exec "$1" sh -c 'find /var/lib/hostguard/fleet.applied $("$1" list | cut -d"|" -f3) -printf "%p %T@ %C@\n"' _ \
    "${INSTALL_DIR}/install" | sort
}

# Where the webhook's secret path appears in the host's files (persistent and volatile).
webhook_files() {
  local name="$1" dir
  dir="${HG_RUN_DIR}/hosts/${name}"
  { grep -rlF "${RECEIVER_SENTINEL}" "${dir}" 2>/dev/null | sed "s|^${dir}/||" || true; } | sort
  host_exec "${name}" grep -rlF "${RECEIVER_SENTINEL}" /run /tmp 2>/dev/null || true
}

# --- the scenario ----------------------------------------------------------------

# The reference: host fref deployed over SSH by the real engine, a stack with
# no cron minute (as a fleet: each host derives its offset); the fleet hosts
# f1..f4, each an instance in moto, f1..f3 tagged hostguard-stack=<the program's tag value: hostguard/fleetssm>.
fleet_setup() {
  local name index=31
  FLEET_DIR="${E2E_WORK}/fleet"
  mkdir -p "${FLEET_DIR}"
  fleet_moto_start
  for name in fref "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    host_up "${name}" "${index}"
    e2e_host_prepare "${name}"
    index=$((index + 1))
  done
  # run.sh's HOST_MINUTE (what assert_installed checks): at-offset.sh's jobs start on every 10-minute mark.
  # shellcheck disable=SC2154
  HOST_MINUTE[fref]=0
  e2e_stack "${FLEET_REF_STACK}" "" fref
  up 16-ref-up "${FLEET_REF_STACK}"
  assert_installed fref
  # The fleet's program: a copy, so that a scenario's edit stays its own.
  FLEET_PROGRAM="${FLEET_DIR}/program"
  cp -a "${E2E_PROJECT_DIR}" "${FLEET_PROGRAM}"
  fleet_apply "${E2E_URL1}"
  for name in "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    if [[ "${name}" == "${FLEET_LATE}" ]]; then
      FLEET_ID[${name}]="$(sm launch "$(jq -r .profile "${FLEET_DIR}/applied.json")")"
    else
      FLEET_ID[${name}]="$(sm launch "$(jq -r .profile "${FLEET_DIR}/applied.json")" "$(jq -r .tagValue "${FLEET_DIR}/applied.json")")"
    fi
    [[ "${FLEET_ID[${name}]}" == i-* ]] || fail "no instance for ${name}"
    # What cloud-init records at boot (scripts/at-offset.sh derives the host's offset from it).
    printf '%s\n' "${FLEET_ID[${name}]}" | host_exec "${name}" install -D -m 0644 /dev/stdin /var/lib/cloud/data/instance-id
    # shellcheck disable=SC2034
    HOST_MINUTE["${name}"]=0
  done
  for name in "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    host_snapshot "${name}" >"${FLEET_DIR}/${name}.before"
  done
}

# `npm run render` on the fleet's stack (the program copy's stack file, fleet-program.ts)
# writes the bundles the association names and the document as moto holds it.
fleet_render_matches() {
  local out="${FLEET_DIR}/render" want got part
  # The copy holds the program, not the tools: render's own file beside it (it renders the folder above it).
  mkdir -p "${FLEET_PROGRAM}/tools"
  cp "${E2E_REPO_ROOT}/tools/render.ts" "${FLEET_PROGRAM}/tools/"
  (cd "${FLEET_PROGRAM}" && node --import tsx tools/render.ts --stack "${FLEET_SSM_STACK}" --out "${out}") \
    >"${FLEET_DIR}/render.log" 2>&1 || fail "npm run render on the fleet's stack failed: $(cat "${FLEET_DIR}/render.log")"
  want="$(jq -r '.request.Parameters.Bundles[0] | split(" ")[]' "${FLEET_DIR}/association.json")"
  got="$(jq -r '.bundles | to_entries[] | "\(.key):\(.value.sha256)"' "${out}/${FLEET_SSM_STACK}/fleet/manifest.json")"
  expect_eq "render: the bundles the association names" "$(sort <<<"${got}")" "$(sort <<<"${want}")"
  for part in $(jq -r '.bundles | keys[]' "${out}/${FLEET_SSM_STACK}/fleet/manifest.json"); do
    [[ -f "${out}/${FLEET_SSM_STACK}/fleet/bundles/${part}/$(grep "^${part}:" <<<"${want}" | cut -d: -f2).tar" ]] ||
      fail "render: no object for ${part} at the key the association names"
  done
  sm dump "${FLEET_DIR}" | jq -r .document >"${FLEET_DIR}/document.registered"
  expect_eq "render: the document as registered" "$(cat "${out}/${FLEET_SSM_STACK}/fleet/document.json")" "$(cat "${FLEET_DIR}/document.registered")"
}

# Three tagged hosts get the SSH deploy's payload, the untagged one nothing; the
# webhook is only in the root-only file, never in the document, the association or an output.
fleet_first_run() {
  local name want applied hits request
  fleet_render_matches
  fleet_run 1
  expect_eq "run 1: status" "$(run_field 1 .status)" Success
  expect_targets 1 f1=Success f2=Success f3=Success
  expect_eq "run 1: most invocations at once (maxConcurrency 2)" "$(run_field 1 .peakConcurrency)" 2
  want="$(payload_of fref)"
  applied="$(host_exec f1 cat /var/lib/hostguard/fleet.applied)"
  grep -qx 'webhook 1' <<<"${applied}" || fail "f1: fleet.applied has no webhook version 1: ${applied}"
  expect_eq "parts applied on f1" "$(grep -c '^[a-z]* [0-9a-f]\{64\}$' <<<"${applied}")" 4
  for name in "${FLEET_HOSTS[@]}"; do
    assert_installed "${name}"
    assert_jail "${name}"
    assert_deny "${name}"
    expect_same_payload "${name} against the SSH deploy on fref" "$(payload_of "${name}")" "${want}"
    expect_eq "${name}: fleet.applied" "$(host_exec "${name}" stat -c '%a %U' /var/lib/hostguard/fleet.applied)" "600 root"
    expect_eq "${name}: fleet.applied as f1's" "$(host_exec "${name}" cat /var/lib/hostguard/fleet.applied)" "${applied}"
    expect_eq "${name}: files holding the webhook" "$(webhook_files "${name}")" "ovl/etc/upper/hostguard/webhook.conf"
  done
  # The step took the role's credentials from the instance metadata at 169.254.169.254 (moto's), with IMDSv2.
  for name in "${FLEET_HOSTS[@]}"; do
    for request in '"PUT /latest/api/token ' '"GET /latest/meta-data/iam/security-credentials/ '; do
      # No -q: an early exit would fail the first grep (SIGPIPE) under pipefail.
      grep -F "$(host_addr "${name}") - - " "${E2E_LOG_DIR}/16-moto.log" | grep -F "${request}" >/dev/null ||
        fail "${name}: no ${request} in moto's log"
    done
  done
  expect_eq "${FLEET_LATE} (untagged) untouched" "$(host_snapshot "${FLEET_LATE}")" "$(cat "${FLEET_DIR}/${FLEET_LATE}.before")"
  sm dump "${FLEET_DIR}" >"${FLEET_DIR}/dump-1.json"
  expect_eq "run outputs in S3 (stdout per target)" \
    "$(jq -r '.outputs | keys[] | select(endswith("/stdout"))' "${FLEET_DIR}/dump-1.json" | wc -l)" 3
  hits="$(grep -lF -e "${RECEIVER_SENTINEL}" -e "/services/T000/" "${FLEET_DIR}"/dump-1.json "${FLEET_DIR}"/run-1.json \
    "${FLEET_DIR}/association.json" "${E2E_LOG_DIR}"/16-* || true)"
  [[ -z "${hits}" ]] || fail "the webhook appears in the document, the association, an output or a log: ${hits}"
}

# A second run with the same association changes nothing on any host.
fleet_second_run() {
  local name
  for name in "${FLEET_HOSTS[@]}"; do
    installed_times "${name}" >"${FLEET_DIR}/${name}.times"
  done
  fleet_run 2
  expect_targets 2 f1=Success f2=Success f3=Success
  # An association whose Bundles carries a command (as if edited in the
  # account) is refused by the document's own pattern: it runs on no host.
  cp "${FLEET_DIR}/association.json" "${FLEET_DIR}/association.good"
  jq -c '.request.Parameters.Bundles = ["base:0; touch /tmp/e2e-injected"]' "${FLEET_DIR}/association.good" \
    >"${FLEET_DIR}/association.json"
  fleet_run 2-bad
  mv "${FLEET_DIR}/association.good" "${FLEET_DIR}/association.json"
  expect_eq "run 2-bad: refused" "$(run_field 2-bad '.refused | join(",")' | cut -d' ' -f1-5)" "parameter Bundles does not match"
  expect_eq "run 2-bad: invocations" "$(run_field 2-bad '.targets | length')" 0
  for name in "${FLEET_HOSTS[@]}"; do
    expect_eq "run 2 on ${name}" "$(run_field 2 ".targets[\"${FLEET_ID[${name}]}\"].stdout | ${LAST_LINE}")" "hostguard: nothing changed"
    expect_eq "${name}: installed files' times" "$(installed_times "${name}")" "$(cat "${FLEET_DIR}/${name}.times")"
  done
}

# A payload change whose object is then replaced in S3 by other bytes: refused
# on every host, nothing installed, each failure posted to chat; first within
# maxErrors 0 (the first failures stop the rollout), then with 100%.
fleet_tampered() {
  local name key since n
  for name in "${FLEET_HOSTS[@]}"; do
    payload_of "${name}" >"${FLEET_DIR}/${name}.payload"
    host_exec "${name}" cat /var/lib/hostguard/fleet.applied >"${FLEET_DIR}/${name}.applied"
  done
  cp "${FLEET_PROGRAM}/scripts/host-monitor" "${FLEET_DIR}/host-monitor.orig"
  printf '# e2e fleet edit %s\n' "${RANDOM}" >>"${FLEET_PROGRAM}/scripts/host-monitor"
  fleet_apply "${E2E_URL1}"
  key="$(sm tamper "${FLEET_DIR}" monitors)"
  since="$(date +%s.%N)"
  fleet_run 3
  # maxConcurrency 2, maxErrors 0: the first two fail, the third is not started.
  expect_eq "run 3: statuses" "$(run_field 3 '[.targets[].status] | sort | join(",")')" "Failed,Failed,NotRun (maxErrors)"
  fleet_apply "${E2E_URL1}" fleetMaxErrors=100%
  fleet_run 4
  expect_targets 4 f1=Failed f2=Failed f3=Failed
  for n in 3 4; do
    for name in "${FLEET_HOSTS[@]}"; do
      [[ "$(run_field "${n}" ".targets[\"${FLEET_ID[${name}]}\"].status")" == Failed ]] || continue
      run_field "${n}" ".targets[\"${FLEET_ID[${name}]}\"].stderr" | grep -qF "${key}: sha256 mismatch" ||
        fail "run ${n} on ${name}: no sha256 mismatch of ${key}: $(run_field "${n}" ".targets[\"${FLEET_ID[${name}]}\"] | .stdout + .stderr")"
    done
  done
  for name in "${FLEET_HOSTS[@]}"; do
    expect_same_payload "${name} after the refused runs" "$(payload_of "${name}")" "$(cat "${FLEET_DIR}/${name}.payload")"
    expect_eq "${name}: fleet.applied after the refused runs" "$(host_exec "${name}" cat /var/lib/hostguard/fleet.applied)" \
      "$(cat "${FLEET_DIR}/${name}.applied")"
  done
  e2e_wait_message "${since}" 30 "^url1	.*hostguard could not apply the stack's payload: s3://.*sha256 mismatch" >/dev/null
  expect_eq "failures posted to chat" \
    "$(e2e_messages_since "${since}" | grep -c "could not apply the stack's payload: s3://.*sha256 mismatch" || true)" 5
  # The payload back as it was: the hosts have it, a run changes nothing.
  cp "${FLEET_DIR}/host-monitor.orig" "${FLEET_PROGRAM}/scripts/host-monitor"
  fleet_apply "${E2E_URL1}"
  fleet_run 5
  expect_targets 5 f1=Success f2=Success f3=Success
  expect_eq "run 5 outputs" "$(run_field 5 "${LAST_LINES}")" "hostguard: nothing changed"
}

# A rotation: a new SecureString version, carried by the association, reaches every host at the next run.
fleet_rotation() {
  local name since probe
  fleet_apply "${E2E_URL2}"
  expect_eq "the parameter's version after the rotation" "$(jq -r .webhookVersion "${FLEET_DIR}/applied.json")" 2
  fleet_run 6
  expect_targets 6 f1=Success f2=Success f3=Success
  expect_eq "run 6 outputs" "$(run_field 6 "${LAST_LINES}")" "hostguard: webhook version 2"
  since="$(date +%s.%N)"
  for name in "${FLEET_HOSTS[@]}"; do
    host_exec "${name}" grep -qF "/B001/" /etc/hostguard/webhook.conf || fail "${name}: webhook file not rotated"
    probe="e2e fleet rotation probe ${name} ${RANDOM}"
    host_exec "${name}" "${INSTALL_DIR}/hostguard-notify" text "${probe}" >/dev/null 2>&1 || fail "${name}: hostguard-notify failed"
    e2e_wait_message "${since}" 20 "^url2	${probe}$" >/dev/null
  done
  if e2e_messages_since "${since}" | grep -q '^url1'; then
    fail "the old URL got messages after the rotation"
  fi
}

# A host tagged later is hardened at the next run; the others do nothing.
fleet_tagged_later() {
  local name
  sm tag "${FLEET_ID[${FLEET_LATE}]}" "$(jq -r .tagValue "${FLEET_DIR}/applied.json")"
  fleet_run 7
  expect_targets 7 f1=Success f2=Success f3=Success f4=Success
  for name in "${FLEET_HOSTS[@]}"; do
    expect_eq "run 7 on ${name}" "$(run_field 7 ".targets[\"${FLEET_ID[${name}]}\"].stdout | ${LAST_LINE}")" "hostguard: nothing changed"
  done
  assert_installed "${FLEET_LATE}"
  expect_same_payload "${FLEET_LATE} against f1" "$(payload_of "${FLEET_LATE}")" "$(payload_of f1)"
  expect_eq "${FLEET_LATE}: fleet.applied as f1's" "$(host_exec "${FLEET_LATE}" cat /var/lib/hostguard/fleet.applied)" \
    "$(host_exec f1 cat /var/lib/hostguard/fleet.applied)"
}

# pulumi destroy's uninstall (components/fleetUninstall.ts): its command, as one Run
# Command on every tagged host, leaves each host as it was before the first run.
fleet_destroy() {
  local name
  (cd "${E2E_REPO_ROOT}" && node --import tsx -e \
    'process.stdout.write(require("./components/fleetUninstall.ts").UNINSTALL_COMMAND)') \
    >"${FLEET_DIR}/uninstall.sh" || fail "could not read the uninstall command"
  local -a agents=()
  for name in "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    agents+=("${FLEET_ID[${name}]}=$(host_pid "${name}")")
  done
  sm uninstall "${FLEET_DIR}" "${FLEET_DIR}/uninstall.sh" "${agents[@]}" >"${FLEET_DIR}/uninstall.json" ||
    fail "the uninstall's Run Command failed to run"
  expect_eq "uninstall: targets and statuses" \
    "$(jq -r '.targets | to_entries[] | "\(.key) \(.value.status)"' "${FLEET_DIR}/uninstall.json" | sort)" \
    "$(for name in "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do echo "${FLEET_ID[${name}]} Success"; done | sort)"
  # A monitor's log with lines in it stays (README, Uninstall): cron may have run one meanwhile.
  for name in "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    expect_eq "${name}: as before the first run" "$(host_snapshot "${name}" | grep -v '^/var/log/hostguard')" \
      "$(grep -v '^/var/log/hostguard' "${FLEET_DIR}/${name}.before")"
  done
}

s16_fleet_ssm() {
  local name
  trap 'fleet_moto_stop' EXIT
  fleet_setup
  echo "  first run: three tagged hosts, one untagged"
  fleet_first_run
  echo "  second run"
  fleet_second_run
  echo "  a tampered object"
  fleet_tampered
  echo "  rotation"
  fleet_rotation
  echo "  a host tagged later"
  fleet_tagged_later
  echo "  destroy uninstalls every tagged host"
  fleet_destroy
  fleet_moto_stop
  for name in fref "${FLEET_HOSTS[@]}" "${FLEET_LATE}"; do
    host_down "${name}"
  done
}
