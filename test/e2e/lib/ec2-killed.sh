# shellcheck shell=bash
# Issue 41 (Build 4) through the real engine: a first `pulumi up` killed with
# SIGKILL right after its first EC2 change (the fault proxy forwards the change
# to moto and holds the answer), then `pulumi cancel`, then `pulumi destroy`
# with no up between, on the adopt and the create path. The engine keeps the
# record and drops the enforcing resource's interrupted create as a pending
# operation, so only the record's own delete can put the original back: every
# original rule of the adopted group and every group of each interface must
# come back. The program is the stack's EC2 resources alone (lib/ec2-program.ts,
# no host), in a project of its own beside the scenarios' one.
# Sourced by test/e2e/run.sh (scenario 18); uses its moto_start, moto_ec2,
# fault_proxy_start/stop and expect_eq.
#
#   ek_scenario    both paths; fails naming the step

EK_PROJECT=""

# The project: the components and lib/ec2-program.ts at the same relative
# place (its imports are ../../../components), an index.ts importing it.
ek_project_init() {
  EK_PROJECT="${E2E_WORK}/ec2-project"
  mkdir -p "${EK_PROJECT}/test/e2e/lib"
  cp -a "${E2E_REPO_ROOT}/package.json" "${E2E_REPO_ROOT}/tsconfig.json" "${E2E_REPO_ROOT}/components" "${EK_PROJECT}/"
  cp "${E2E_LIB_DIR}/ec2-program.ts" "${EK_PROJECT}/test/e2e/lib/"
  printf 'import "./test/e2e/lib/ec2-program";\n' >"${EK_PROJECT}/index.ts"
  printf 'name: hostguard-ec2\nruntime:\n  name: nodejs\n  options:\n    typescript: true\ndescription: the stack EC2 resources alone (test/e2e/lib/ec2-killed.sh)\n' \
    >"${EK_PROJECT}/Pulumi.yaml"
  ln -s "${E2E_REPO_ROOT}/node_modules" "${EK_PROJECT}/node_modules"
}

# ek_pulumi LOG ARGS...: as e2e_pulumi, in this project.
ek_pulumi() {
  local log="$1"
  shift
  (cd "${EK_PROJECT}" && timeout "${E2E_STEP_TIMEOUT}" pulumi --non-interactive --color never "$@") \
    >"${E2E_LOG_DIR}/${log}.log" 2>&1
}

# ek_stack STACK SETTINGS: a stack with `  e2e:key: value` lines.
ek_stack() {
  ek_pulumi "18-stack-init-$1" stack init "$1" --secrets-provider passphrase || { e2e_show_log "18-stack-init-$1"; fail "stack init $1"; }
  printf 'config:\n%s' "$2" >>"${EK_PROJECT}/Pulumi.$1.yaml"
}

# ek_session_pids SID: the live processes of session SID (a zombie is dead: left out).
ek_session_pids() {
  ps -e -o pid=,sid=,stat= | awk -v s="$1" '$2 == s && $3 !~ /^Z/ { print $1 }'
}

# ek_up_killed DIR STACK LOG: `pulumi up` of STACK in project DIR through the
# fault proxy (fault_proxy_start hold first), killed with SIGKILL once its first
# EC2 change was held. The CLI leads a session of its own (setsid). The engine
# starts each plugin (language host, dynamic provider, ...) in a process group
# of its own, so killing the CLI's group left them running (ppid 1, holding the
# run's files and the sandbox lock); they stay in the session, so every process
# of it is killed, and the step fails if one outlives that.
ek_up_killed() {
  local dir="$1" stack="$2" log="$3" killed i pids
  (cd "${dir}" && AWS_ENDPOINT_URL="${FAULT_ENDPOINT}" exec setsid \
    pulumi --non-interactive --color never up --stack "${stack}" --yes --skip-preview) >"${E2E_LOG_DIR}/${log}.log" 2>&1 &
  killed=$!
  for ((i = 0; i < 1200; i++)); do
    grep -q '^held ' "${E2E_LOG_DIR}/13-fault-proxy.out" && break
    kill -0 "${killed}" 2>/dev/null || { e2e_show_log "${log}"; fail "${stack}: the up ended before its first EC2 change"; }
    sleep 0.1
  done
  ((i < 1200)) || fail "${stack}: no EC2 change reached the proxy within 120 s"
  kill -KILL -- "-${killed}"
  wait "${killed}" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    pids="$(ek_session_pids "${killed}")"
    [[ -n "${pids}" ]] || return 0
    # shellcheck disable=SC2086 # one pid a word
    kill -KILL ${pids} 2>/dev/null || true
    sleep 0.1
  done
  fail "${stack}: processes of the killed up outlived SIGKILL: $(ps -o pid=,ppid=,cmd= -p "${pids//$'\n'/,}")"
}

# ek_killed_up STACK: the up, killed (with every process it started: its
# session) once its first EC2 change reached moto; then the state holds the
# record only, with the enforcing resource's create pending.
ek_killed_up() {
  local stack="$1" log="18-up-killed-$1"
  fault_proxy_start hold
  ek_up_killed "${EK_PROJECT}" "${stack}" "${log}"
  fault_proxy_stop
  ek_pulumi "18-export-$1" stack export --stack "${stack}" --file "${E2E_LOG_DIR}/18-export-$1.json" || { e2e_show_log "18-export-$1"; fail "stack export"; }
  expect_eq "${stack}: hostguard's resources in the state after the kill" \
    "$(jq -r '[.deployment.resources[] | .inputs.kind // empty] | join(",")' "${E2E_LOG_DIR}/18-export-$1.json")" "$2"
  expect_eq "${stack}: the enforcing resource's create is pending" \
    "$(jq -r '[.deployment.pending_operations[]? | select(.type == "creating") | .resource.inputs.kind] | join(",")' "${E2E_LOG_DIR}/18-export-$1.json")" "$3"
}

# ek_cancel_destroy STACK: the user's way after a cancelled CI job, no up between.
ek_cancel_destroy() {
  ek_pulumi "18-cancel-$1" cancel --stack "$1" --yes || { e2e_show_log "18-cancel-$1"; fail "$1: pulumi cancel failed"; }
  ek_pulumi "18-destroy-$1" destroy --stack "$1" --yes || { e2e_show_log "18-destroy-$1"; fail "$1: destroy failed"; }
}

# ek_remove_host GROUP HOST1 HOST2 BEFORE: adopt with two hosts, then one removed
# from the hosts while its server still carries the group: preview warns,
# naming it and the way out, and is not refused; the group stays hardened.
ek_remove_host() {
  local group="$1" keep="$2" removed="$3" before="$4" hardened
  ek_stack ec2-remove "  e2e:path: adopt
  e2e:groupId: ${group}
  e2e:instanceIds: [${keep}, ${removed}]
"
  ek_pulumi 18-remove-up up --stack ec2-remove --yes --skip-preview || { e2e_show_log 18-remove-up; fail "remove: the first up failed"; }
  hardened="$(moto_ec2 snapshot "${group}")"
  # The user deletes the host's entry.
  sed -i "s/^  e2e:instanceIds: .*/  e2e:instanceIds: [${keep}]/" "${EK_PROJECT}/Pulumi.ec2-remove.yaml"
  ek_pulumi 18-remove-preview preview --stack ec2-remove || { e2e_show_log 18-remove-preview; fail "remove: preview refused a host the user just removed"; }
  e2e_log_has 18-remove-preview -E "instance ${removed} is no longer a host of this stack .*still carries the adopted group ${group}" \
    "the preview does not warn about the removed server carrying the group"
  e2e_log_has 18-remove-preview -F "modify-network-interface-attribute --network-interface-id eni-" "the warning does not say how to take the group off"
  ek_pulumi 18-remove-up2 up --stack ec2-remove --yes --skip-preview || { e2e_show_log 18-remove-up2; fail "remove: the up after the removal failed"; }
  ek_pulumi 18-remove-preview2 preview --stack ec2-remove --expect-no-changes ||
    { e2e_show_log 18-remove-preview2; fail "remove: the next preview is refused or not converged"; }
  expect_eq "remove: the group stays hardened" "$(moto_ec2 snapshot "${group}")" "${hardened}"
  ek_pulumi 18-remove-destroy destroy --stack ec2-remove --yes || { e2e_show_log 18-remove-destroy; fail "remove: destroy failed"; }
  expect_eq "remove: the group after destroy" "$(moto_ec2 snapshot "${group}")" "${before}"
}

ek_scenario() {
  local vpc group adopt1 adopt2 hostguard host eni1 eni2 before g1 g2
  trap 'fault_proxy_stop; moto_stop' EXIT
  moto_start
  read -r vpc group adopt1 adopt2 hostguard host eni1 eni2 <<<"$(moto_ec2 setup-killed)"
  [[ "${eni2}" == eni-* ]] || fail "moto setup failed"
  ek_project_init

  # Adopt path: the killed up's first change is an authorize of hostguard's rules.
  before="$(moto_ec2 snapshot "${group}")"
  ek_stack ec2-adopt "  e2e:path: adopt
  e2e:groupId: ${group}
  e2e:instanceIds: [${adopt1}, ${adopt2}]
"
  ek_killed_up ec2-adopt hostguard:adopted-group-record hostguard:adopted-group-ingress
  [[ "$(moto_ec2 snapshot "${group}")" != "${before}" ]] || fail "adopt: the killed up's first change did not reach EC2"
  ek_cancel_destroy ec2-adopt
  expect_eq "adopt: the group after cancel and destroy (every original rule)" "$(moto_ec2 snapshot "${group}")" "${before}"
  e2e_log_has 18-destroy-ec2-adopt -F "security group ${group} was still changed by hostguard" "destroy does not say it restored the group"
  ek_remove_host "${group}" "${adopt1}" "${adopt2}" "${before}"

  # Create path: the killed up's first change sets one interface to [hostguard].
  g1="$(moto_ec2 groups "${eni1}")"
  g2="$(moto_ec2 groups "${eni2}")"
  ek_stack ec2-create "  e2e:path: create
  e2e:hostguardGroupId: ${hostguard}
  e2e:instanceId: ${host}
  e2e:vpcId: ${vpc}
"
  ek_killed_up ec2-create hostguard:interface-record hostguard:interface-groups
  [[ "$(moto_ec2 groups "${eni1}") $(moto_ec2 groups "${eni2}")" != "${g1} ${g2}" ]] || fail "create: the killed up's first change did not reach EC2"
  ek_cancel_destroy ec2-create
  expect_eq "create: the primary interface's groups after cancel and destroy" "$(moto_ec2 groups "${eni1}")" "${g1}"
  expect_eq "create: the secondary interface's groups after cancel and destroy" "$(moto_ec2 groups "${eni2}")" "${g2}"
  if grep -rlF "${AWS_SECRET_ACCESS_KEY}" "${E2E_LOG_DIR}" "${E2E_WORK}/state" 2>/dev/null; then
    fail "the AWS secret key appears in the files above"
  fi
}
