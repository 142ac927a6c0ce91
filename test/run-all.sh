#!/usr/bin/env bash
# The README's test command (`npm test`, also what .ci/run runs): first
# installs what is missing (tools/setup.bash: Debian packages, the npm
# packages with Node 22, actionlint, moto; nothing when all is there), then
# lint, the payload and tools tests against the real programs, CI's `test`
# job as a stock runner runs it (the Pulumi program's unit tests and the
# policy pack's), the tests that need host tools, and the EC2 tests against
# moto. Needs root for the sandboxes. Each section's wall time is printed as
# it ends and in a table at the end (docs/development.md: where time goes).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=../tools/setup.bash
source tools/setup.bash

SECTION=""
SECTION_START=0
SECTION_TIMES=()
# section NAME: ends the running section (its time printed and kept), starts NAME.
section() {
  local now
  now="$(date +%s)"
  if [[ -n "${SECTION}" ]]; then
    printf -- '-- %s: %d s\n' "${SECTION}" "$((now - SECTION_START))"
    SECTION_TIMES+=("$((now - SECTION_START))"$'\t'"${SECTION}")
  fi
  SECTION="$1"
  SECTION_START="${now}"
  [[ -z "${SECTION}" ]] || echo "== ${SECTION}"
}

section "set-up (tools/setup.bash: what is missing)"
hg_setup_for_tests
PATH="$(hg_tool_path)"
export PATH

bash_files() {
  git ls-files -z --cached --others --exclude-standard -- scripts test bench tools .ci \
    | while IFS= read -r -d '' file; do
      [[ -f "${file}" ]] || continue
      case "${file}" in
        *.sh | *.bash | *.bats) printf '%s\0' "${file}" ;;
        *)
          # An if, not &&: a non-shell last file must not become the loop's status.
          if head -n1 "${file}" | grep -qE '^#!.*\b(ba)?sh\b'; then
            printf '%s\0' "${file}"
          fi
          ;;
      esac
    done
}

section "shellcheck"
bash_files | grep -zv '\.bats$' | xargs -0 shellcheck --external-sources --source-path=SCRIPTDIR
section "host agent: ruff, mypy --strict"
PYTOOLS="${HG_PYTOOLS_DIR}/tools/bin"
"${PYTOOLS}/ruff" check scripts/hostguard test/agent test/e2e/lib test/helpers/ban-event.py test/helpers/spool-db.py
"${PYTOOLS}/ruff" format --check --diff scripts/hostguard test/agent test/e2e/lib test/helpers/ban-event.py test/helpers/spool-db.py
"${PYTOOLS}/mypy" --no-error-summary
# pytest in full on the Pythons of the Debian releases hostguard is tried on:
# Debian 12's python3 (the tools venv) and Debian 13's 3.13 where the machine
# has it; on the other supported Pythons, all but the tests below, whose time
# goes to process kills, timeouts and concurrency runs (what they prove is
# the same on every Python: they run in full on the two Debian ones).
readonly PYTEST_FULL_VERSIONS=(3.13)
readonly PYTEST_QUICK_DESELECT=(
  test/agent/test_concurrency.py::test_writers_flushers_kills_and_chaos_lose_nothing
  test/agent/test_concurrency.py::test_detached_flushes_alone_deliver_every_ban
  test/agent/test_installer.py::test_install_killed_after_any_step_converges
  test/agent/test_installer.py::test_uninstall_killed_after_any_step_converges
  test/agent/test_ssmstep.py::test_parameters_are_checked_before_anything_is_fetched
  test/agent/test_container_monitor.py::test_a_runtime_that_ignores_sigterm_is_killed
)
section "pytest (Debian's python3, in full)"
"${PYTOOLS}/python" -m pytest
while read -r version _; do
  if [[ " ${PYTEST_FULL_VERSIONS[*]} " == *" ${version} "* ]]; then
    section "pytest on Python ${version} (in full)"
    "${HG_PYTOOLS_DIR}/py${version}/bin/python" -m pytest
  else
    section "pytest on Python ${version} (quick: ${#PYTEST_QUICK_DESELECT[@]} slow tests left out)"
    "${HG_PYTOOLS_DIR}/py${version}/bin/python" -m pytest "${PYTEST_QUICK_DESELECT[@]/#/--deselect=}"
  fi
done < <(hg_other_pythons)
section "bats (payload and tools, against the real programs)"
# The suites touch this machine's /etc and /var only in sandboxes they make; a
# hostguard path that appears here during them is a test writing outside its
# sandbox (it would also show through every e2e host's overlay of /etc and /var).
readonly HOST_PATHS=(/etc/hostguard /var/lib/hostguard /var/spool/hostguard /var/log/hostguard /usr/local/lib/hostguard /etc/cron.d/hostguard)
leaked() {
  local path
  for path in "${HOST_PATHS[@]}"; do
    [[ -e "${path}" ]] && printf '%s\n' "${path}"
  done
  return 0
}
present_before="$(leaked)"
bats --recursive --timing test/payload test/tools
if [[ "$(leaked)" != "${present_before}" ]]; then
  printf 'a test wrote outside its sandbox: %s\n' "$(leaked | tr '\n' ' ')" >&2
  exit 1
fi
# CI's test job (.github/workflows/preview.yml) on a stock runner's PATH runs
# test/unit and the policy pack's tests; the rest of test/host-tools needs
# fail2ban or actionlint (test/host-tools/README.md).
section "CI's test job on a stock runner (test/unit, policy pack), tests that need host tools"
node --import tsx --test test/host-tools/*.test.ts
section "EC2 tests (moto's EC2 API on loopback)"
node --import tsx --test test/aws/*.test.ts
section ""
echo "== wall time per section (s)"
printf '%s\n' "${SECTION_TIMES[@]}"
