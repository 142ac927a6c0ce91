#!/usr/bin/env bash
# The payload's size by part, as information (no budget): the lines (`wc -l`)
# and files of each folder of the host agent (scripts/hostguard/: monitor,
# notify, ban, install, fleet, and the shared modules at its root), of the
# fail2ban Python actions, and of the rest of the payload (entry points, the
# install shim, filter, nginx and logrotate files); then the agent's modules
# over 400 lines and functions over 50, the developers' guide's limits.
# Files as git sees them (tracked or new, not ignored); README.md not counted.
# Run from anywhere in the repository:
#   bash tools/agent-lines.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)/scripts"

mapfile -t files < <(git ls-files --cached --others --exclude-standard . ':!README.md' | sort -u)
part_of() {
  case "$1" in
    hostguard/*/*.py) echo "${1#hostguard/}" | cut -d/ -f1 ;;
    hostguard/*.py) echo root ;;
    fail2ban/action.d/*.py) echo "fail2ban actions" ;;
    *) echo "other payload" ;;
  esac
}
declare -A lines=() count=()
total=0
for file in "${files[@]}"; do
  [[ -f "${file}" ]] || continue
  part="$(part_of "${file}")"
  n="$(wc -l <"${file}")"
  lines["${part}"]=$((${lines["${part}"]:-0} + n))
  count["${part}"]=$((${count["${part}"]:-0} + 1))
  total=$((total + n))
done
echo "The payload's size in lines (wc -l), by part:"
for part in monitor notify ban install fleet root "fail2ban actions" "other payload"; do
  printf '  %-17s %6d lines in %3d files\n' "${part}" "${lines["${part}"]:-0}" "${count["${part}"]:-0}"
done
printf '  %-17s %6d lines in %3d files\n' total "${total}" "${#files[@]}"
python3 - hostguard/*.py hostguard/*/*.py fail2ban/action.d/*.py <<'PY'
import ast, sys
long_modules, long_functions = [], []
for path in sys.argv[1:]:
    source = open(path, encoding="utf-8").read()
    if len(source.splitlines()) > 400:
        long_modules.append(f"  {path} ({len(source.splitlines())})")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 50:
            long_functions.append(f"  {path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})")
print("Modules over 400 lines:" + ("" if long_modules else " none"), *long_modules, sep="\n")
print("Functions over 50 lines:" + ("" if long_functions else " none"), *long_functions, sep="\n")
PY
