#!/usr/bin/env bash
# The README's test command (`npm test`): lint, payload tests against the real
# programs, then the Pulumi program's unit tests. Needs root for the sandboxes.
set -euo pipefail
cd "$(dirname "$0")/.."

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
echo "== bats (payload, against the real programs)"
bats --recursive --timing test/payload
if compgen -G 'test/unit/*.test.ts' >/dev/null; then
  echo "== unit tests (Pulumi mocks)"
  node --import tsx --test test/unit/*.test.ts
fi
if [[ -d policy && -d policy/node_modules ]]; then
  echo "== policy pack tests"
  (cd policy && node --import tsx --test tests/*.test.ts)
fi
