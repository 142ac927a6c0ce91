#!/usr/bin/env bash
# The README's test command (`npm test`, also what .ci/run runs): first
# installs what is missing (tools/setup.bash: Debian packages, the npm
# packages with Node 22, actionlint, moto; nothing when all is there), then
# lint, the payload and tools tests against the real programs, the Pulumi
# program's unit tests, the EC2 tests against moto and the policy pack's.
# Needs root for the sandboxes.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=../tools/setup.bash
source tools/setup.bash
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

echo "== shellcheck"
bash_files | grep -zv '\.bats$' | xargs -0 shellcheck --external-sources --source-path=SCRIPTDIR
echo "== host agent: ruff, mypy --strict, pytest (Debian's python3, then the other supported Pythons)"
PYTOOLS="${HG_PYTOOLS_DIR}/tools/bin"
"${PYTOOLS}/ruff" check scripts/hostguard test/agent test/e2e/lib
"${PYTOOLS}/ruff" format --check --diff scripts/hostguard test/agent test/e2e/lib
"${PYTOOLS}/mypy" --no-error-summary
"${PYTOOLS}/python" -m pytest
while read -r version _; do
  echo "-- pytest on Python ${version}"
  "${HG_PYTOOLS_DIR}/py${version}/bin/python" -m pytest
done < <(hg_other_pythons)
echo "== bats (payload and tools, against the real programs)"
bats --recursive --timing test/payload test/tools
if compgen -G 'test/unit/*.test.ts' >/dev/null; then
  echo "== unit tests (Pulumi mocks)"
  node --import tsx --test test/unit/*.test.ts
fi
echo "== EC2 tests (moto's EC2 API on loopback)"
node --import tsx --test test/aws/*.test.ts
echo "== policy pack tests"
(cd policy && node --import tsx --test tests/*.test.ts)
