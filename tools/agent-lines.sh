#!/usr/bin/env bash
# The payload's size (issues 31 and 32), by `wc -l`: the agent (every
# program and module under scripts/ but the installer and the modules only
# the installer imports; the ban actions, entry points and the generated
# settings table included), the installer side, the whole payload; and the
# agent's modules over 400 lines and functions over 50. Budgets: agent 2,600,
# payload 4,600. Run from anywhere in the repository.
#   bash tools/agent-lines.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)/scripts"

readonly -a INSTALLER_ONLY=(installer txnstore safepath userio webedit nginxconf properties programs services sshjournal)
installer=(install)
for module in "${INSTALLER_ONLY[@]}"; do
  [[ -f "hostguard/${module}.py" ]] && installer+=("hostguard/${module}.py")
done
agent=()
for file in hostguard/*.py hostguard/*/*.py host-monitor container-monitor hostguard-notify fail2ban/action.d/*.py; do
  [[ " ${installer[*]} " == *" ${file} "* ]] || agent+=("${file}")
done
count() { cat "$@" | wc -l; }
printf 'agent:     %5d lines (budget 2600) in %d files\n' "$(count "${agent[@]}")" "${#agent[@]}"
printf 'installer: %5d lines\n' "$(count "${installer[@]}")"
printf 'payload:   %5d lines (budget 4600; every file of scripts/ but README.md)\n' \
  "$(git ls-files -z . ':!README.md' | xargs -0 cat | wc -l)"
python3 - "${agent[@]}" <<'PY'
import ast, sys
for path in sys.argv[1:]:
    source = open(path, encoding="utf-8").read()
    lines = len(source.splitlines())
    if lines > 400:
        print(f"over 400 lines: {path} ({lines})")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 50:
            print(f"over 50 lines: {path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})")
PY
