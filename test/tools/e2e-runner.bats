#!/usr/bin/env bats
# The scenario runner of the end-to-end scripts (test/e2e/lib/runner.sh),
# without hosts or engine: pass, FAIL at the first failing command, SKIP of a
# scenario whose need failed, E2E_ONLY, --here, the summary's closing line and
# its status.

setup() {
  RUNNER="${BATS_TEST_DIRNAME}/../e2e/lib/runner.sh"
  SCRIPT="${BATS_TEST_TMPDIR}/script.sh"
}

# run_script BODY: a strict-mode script sourcing the runner, then BODY.
run_script() {
  {
    printf 'set -euo pipefail\nsource %q\n' "${RUNNER}"
    printf '%s\n' "$1"
  } >"${SCRIPT}"
  run bash "${SCRIPT}"
}

@test "a scenario fails at its first failing command, the rest of it does not run" {
  # shellcheck disable=SC2016 # expanded by the script
  run_script '
E2E_TITLES=([1]="ok" [2]="stops early")
s1() { true; }
s2() { false; echo "after the failure"; }
scenario 1 s1
scenario 2 s2
e2e_summary'
  [ "${status}" -eq 1 ]
  [[ "${output}" =~ pass\ \ scenario\ 1\ +[0-9]+\ ms\ \ ok ]]
  [[ "${output}" =~ FAIL\ \ scenario\ 2\ +[0-9]+\ ms\ \ stops\ early ]]
  [[ "${output}" != *"after the failure"* ]]
  [ "${lines[-1]}" = "1 passed, 1 failed, 0 not run" ]
}

@test "a scenario whose need failed is skipped and counts as not run" {
  # shellcheck disable=SC2016 # expanded by the script
  run_script '
E2E_TITLES=([1]="first" [2]="second" [3]="third")
s1() { fail "broken"; }
s2() { echo "ran 2"; }
s3() { echo "ran 3"; }
scenario 1 s1
scenario 2 s2 1
scenario 3 s3
e2e_summary'
  [ "${status}" -eq 1 ]
  [[ "${output}" == *"  broken"* ]]
  [[ "${output}" == *"SKIP  scenario 2  second: needs scenario 1"* ]]
  [[ "${output}" != *"ran 2"* ]]
  [[ "${output}" == *"ran 3"* ]]
  [[ "${output}" == *"  2  not run (needs scenario 1)"* ]]
  [ "${lines[-1]}" = "1 passed, 1 failed, 1 not run" ]
}

@test "all passed: the summary succeeds; E2E_ONLY runs only the scenarios named" {
  # shellcheck disable=SC2016 # expanded by the script
  run_script '
E2E_TITLES=([1]="one" [2]="two" [10]="ten")
E2E_ONLY="10 2"
s() { expect_eq "answer" 42 42; }
scenario 1 s
scenario 2 s
scenario 10 s
e2e_summary'
  [ "${status}" -eq 0 ]
  [[ "${output}" != *"scenario 1:"* ]]
  [[ "${output}" == *"--- scenario 2: two"* ]]
  [[ "${output}" == *"--- scenario 10: ten"* ]]
  [ "${lines[-1]}" = "2 passed, 0 failed, 0 not run" ]
}

@test "expect_eq names what differs; --here keeps the scenario's state for the next" {
  # shellcheck disable=SC2016 # expanded by the script
  run_script '
E2E_TITLES=([1]="sets" [2]="reads" [3]="in a subshell")
STATE=""
s1() { STATE=set; }
s2() { expect_eq "state" "${STATE}" set; }
s3() { STATE=lost; }
scenario --here 1 s1
scenario 2 s2 1
scenario 3 s3
expect_eq "state after the subshell" "${STATE}" lost || true
e2e_summary'
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"  state after the subshell: got [set], want [lost]"* ]]
  [ "${lines[-1]}" = "3 passed, 0 failed, 0 not run" ]
}

@test "not root: the NOT RUN banner and exit 0, before any set-up" {
  local -a as_user=()
  ((EUID != 0)) || as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  printf 'set -euo pipefail\nsource %q\n%s\n' "${RUNNER}" \
    'e2e_require_root "npm run test:e2e" "the test hosts need network and mount namespaces"; echo "went on"' >"${SCRIPT}"
  run "${as_user[@]}" bash -s <"${SCRIPT}"
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"npm run test:e2e: NOT RUN. NO SCENARIO HAS BEEN TESTED."* ]]
  [[ "${output}" == *"Missing: root (the test hosts need network and mount namespaces)"* ]]
  [[ "${output}" != *"went on"* ]]
}
