# shellcheck shell=bash
# The runner every end-to-end script shares (run.sh, demo.sh, hosts-smoke.sh,
# engine-smoke.sh), so that each keeps only what it is for: whether this
# machine can run them (else the loud NOT RUN banner and exit 0), a work dir,
# the webhook receiver in the hosts' lan, a test stack with its webhook,
# numbered scenarios (each timed, in a subshell with errexit, pass or FAIL),
# the summary and the teardown. Sources hosts.sh, receiver.bash and stack.sh.
#
#   e2e_require_root WHO WHY     not root: NOT RUN banner (WHO: the command), exit 0
#   e2e_require_engine WHO       the engine cannot deploy: NOT RUN banner, exit 0;
#                                else tools/pulumi-env.sh is sourced
#   e2e_work_dir PREFIX          E2E_WORK=/tmp/PREFIX.XXXXXXXX; e2e_teardown at EXIT
#   e2e_receiver_start           the HTTPS receiver in the lan namespace; E2E_URL1 is its URL
#   e2e_stack STACK EXTRA SPEC...  e2e_stack_init, then the webhook E2E_URL1
#   e2e_webhook STACK URL        e2e_set_webhook; both show the log when it fails
#   e2e_teardown                 receiver, hosts, work dir (HG_KEEP_RUN_DIR=1 keeps it)
#
#   E2E_TITLES=([1]="..." ...)   each scenario's title, by number
#   E2E_ONLY="N..."              runs only those scenarios (default all)
#   scenario [--here] N FN [NEEDS...]
#                                runs FN in a subshell with errexit (--here: in
#                                this shell, for a step whose state the next
#                                ones need), prints pass/FAIL with its time;
#                                skipped when a scenario it needs did not pass
#   e2e_passed N...              every scenario N passed
#   e2e_summary                  a line per scenario run, then `N passed, N failed,
#                                N not run`; fails unless all passed
#   fail MESSAGE / expect_eq WHAT GOT WANT   assertions for the scenarios
#   e2e_log_has LOG GREP_FLAGS PATTERN WHY   the CLI log LOG (e2e_pulumi's) matches;
#                                else its tail is shown and the scenario fails
#   e2e_log_lines LOG REGEX [WIDTH]   its first 4 lines matching REGEX, indented
#
# Reads: HG_KEEP_RUN_DIR; what hosts.sh, receiver.bash and stack.sh read.

# shellcheck source=hosts.sh
source "${BASH_SOURCE[0]%/*}/hosts.sh"
# shellcheck source=../../helpers/receiver.bash
source "${BASH_SOURCE[0]%/*}/../../helpers/receiver.bash"
# shellcheck source=stack.sh
source "${BASH_SOURCE[0]%/*}/stack.sh"

E2E_WORK=""
E2E_ONLY=""
E2E_URL1=""
E2E_TITLES=()
declare -A E2E_RESULT=()
declare -A E2E_MILLIS=()

# --- can this machine run it --------------------------------------------------

e2e_require_root() {
  ((EUID == 0)) && return 0
  e2e_skip_banner "$1" "root ($2)"
  exit 0
}

e2e_require_engine() {
  local missing
  missing="$(e2e_engine_missing)"
  if [[ -n "${missing}" ]]; then
    e2e_skip_banner "$1" "${missing}"
    exit 0
  fi
  # shellcheck source=../../../tools/pulumi-env.sh
  . "${E2E_REPO_ROOT}/tools/pulumi-env.sh"
}

# --- set-up and teardown --------------------------------------------------------

e2e_work_dir() {
  E2E_WORK="$(mktemp -d "/tmp/$1.XXXXXXXX")"
  trap e2e_teardown EXIT
}

# receiver.bash wants a bats temp dir even when given --dir.
e2e_receiver_start() {
  BATS_TEST_TMPDIR="${HG_RUN_DIR}"
  RECEIVER_WRAP=(nsenter "--net=/run/netns/$(lan_netns)" --)
  receiver_start --dir "${HG_RUN_DIR}/receiver" --bind "$(lan_addr)" || return 1
  E2E_URL1="${RECEIVER_URL}"
}

e2e_stack() {
  local stack="$1"
  if ! e2e_stack_init "$@"; then
    e2e_show_log "stack-init-${stack}"
    [[ ! -f "${E2E_LOG_DIR}/config-key-${stack}.log" ]] || e2e_show_log "config-key-${stack}"
    fail "stack ${stack}: init failed"
    return 1
  fi
  e2e_webhook "${stack}" "${E2E_URL1}"
}

e2e_webhook() {
  e2e_set_webhook "$1" "$2" && return 0
  e2e_show_log "config-webhook-$1"
  fail "stack $1: config set webhookUrl failed"
}

# Each part is safe to run twice and when it was never set up.
e2e_teardown() {
  receiver_stop || true
  hosts_down_all || true
  [[ -n "${E2E_WORK}" && -d "${E2E_WORK}" ]] || return 0
  if [[ "${HG_KEEP_RUN_DIR:-0}" == 1 ]]; then
    echo "logs kept in ${E2E_WORK}/logs"
  else
    rm -rf "${E2E_WORK}"
  fi
}

# --- scenarios ----------------------------------------------------------------

e2e_now_ms() {
  local t="${EPOCHREALTIME/./}"
  printf '%s\n' "$((t / 1000))"
}

fail() {
  printf '  %s\n' "$*" >&2
  return 1
}

expect_eq() {
  local what="$1" got="$2" want="$3"
  [[ "${got}" == "${want}" ]] && return 0
  fail "${what}: got [${got}], want [${want}]"
}

e2e_log_has() {
  local log="$1" flags="$2" pattern="$3" why="$4"
  grep -q "${flags}" -- "${pattern}" "${E2E_LOG_DIR}/${log}.log" && return 0
  e2e_show_log "${log}"
  fail "${why}"
}

e2e_log_lines() {
  { grep -E -- "$2" "${E2E_LOG_DIR}/$1.log" || true; } | cut -c"1-${3:-}" | head -n 4 | sed 's/^/    /'
}

e2e_passed() {
  local n
  for n in "$@"; do
    [[ "${E2E_RESULT[${n}]:-}" == pass ]] || return 1
  done
}

scenario() {
  local here=0 n fn need start rc=0
  if [[ "$1" == --here ]]; then
    here=1
    shift
  fi
  n="$1" fn="$2"
  shift 2
  [[ -z "${E2E_ONLY}" || " ${E2E_ONLY} " == *" ${n} "* ]] || return 0
  for need in "$@"; do
    if ! e2e_passed "${need}"; then
      E2E_RESULT[${n}]="not run (needs scenario ${need})"
      printf 'SKIP  scenario %-2s %s: needs scenario %s\n' "${n}" "${E2E_TITLES[n]}" "${need}"
      return 0
    fi
  done
  printf -- '--- scenario %s: %s\n' "${n}" "${E2E_TITLES[n]}"
  start="$(e2e_now_ms)"
  if ((here)); then
    "${fn}" || rc=$?
  else
    # errexit holds inside the subshell only when it is not the condition of
    # an `if` or `||`, where bash would ignore it.
    set +e
    (
      set -e
      "${fn}"
    )
    rc=$?
    set -e
  fi
  E2E_MILLIS[${n}]=$(($(e2e_now_ms) - start))
  if ((rc == 0)); then
    E2E_RESULT[${n}]=pass
  else
    E2E_RESULT[${n}]=FAIL
  fi
  printf '%-4s  scenario %-2s %7d ms  %s\n' "${E2E_RESULT[${n}]}" "${n}" "${E2E_MILLIS[${n}]}" "${E2E_TITLES[n]}"
}

e2e_summary() {
  local n passed=0 failed=0 other=0
  echo
  echo "e2e summary (scenario, result, time):"
  for n in "${!E2E_TITLES[@]}"; do
    [[ -n "${E2E_RESULT[${n}]:-}" ]] || continue
    case "${E2E_RESULT[${n}]}" in
      pass) passed=$((passed + 1)) ;;
      FAIL) failed=$((failed + 1)) ;;
      *) other=$((other + 1)) ;;
    esac
    printf '  %-2s %-32s %8s  %s\n' "${n}" "${E2E_RESULT[${n}]}" \
      "${E2E_MILLIS[${n}]:+$((E2E_MILLIS[${n}] / 1000)) s}" "${E2E_TITLES[n]}"
  done
  echo "${passed} passed, ${failed} failed, ${other} not run"
  ((failed == 0 && other == 0))
}
