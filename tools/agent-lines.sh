#!/usr/bin/env bash
# The host agent's line budget (issue 22): physical lines and code lines (no
# blank, comment or docstring line) of the Python agent that replaced the
# bash monitors, notifier, heartbeat, settings and alert state, against that
# bash at BASH_COMMIT (the last commit before the Python agent). The agent:
# every hostguard/ module of those concerns (settings_table.py, generated,
# included; nginxban.py and the installer's modules are not part of it) and
# the four entry points. Run from anywhere in the repository; with a COMMIT
# argument the agent of that commit is counted instead of the work tree's.
#   bash tools/agent-lines.sh [COMMIT]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

readonly BASH_COMMIT=b3fb14b
readonly -a BASH_FILES=(
  scripts/host-monitor scripts/container-monitor scripts/hostguard-notify scripts/lib/notify.sh
  scripts/lib/metrics.sh scripts/lib/alert-state.sh scripts/lib/heartbeat.sh scripts/lib/common.sh
)
# metrics and outbox: merged into others since, counted where they exist.
readonly -a AGENT_MODULES=(
  host_monitor container_monitor alert_state heartbeat notify events delivery spool chat urlfile
  redact message settings settings_table log errors paths atomicfile metrics outbox
)
readonly -a ENTRY_POINTS=(host-monitor container-monitor hostguard-notify hostguard-nginx-ban)

work="$(mktemp -d)"
trap 'rm -rf -- "${work}"' EXIT
bash_dir="${work}/bash"
mkdir -p "${bash_dir}"
git archive "${BASH_COMMIT}" "${BASH_FILES[@]}" | tar -x -C "${bash_dir}"
agent_root="."
if (($# > 0)); then
  agent_root="${work}/agent"
  mkdir -p "${agent_root}"
  git archive "$1" scripts | tar -x -C "${agent_root}"
fi

agent=()
for module in "${AGENT_MODULES[@]}"; do
  [[ -f "${agent_root}/scripts/hostguard/${module}.py" ]] && agent+=("${agent_root}/scripts/hostguard/${module}.py")
done
agent+=("${ENTRY_POINTS[@]/#/${agent_root}/scripts/}")

# LANG FILE...: "physical code" line counts summed over the files. Python:
# tokenize's view (comments, blank lines and docstrings, the string
# statements that open a module, class or function, are not code). Bash: a
# line that is blank or only a comment (the shebang too) is not code.
python3 - "${bash_dir}" "${agent_root}" "${agent[@]}" <<'PY'
import ast, io, sys, tokenize

def python_code_lines(path):
    source = open(path, encoding="utf-8").read()
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER):
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.difference_update(range(first.lineno, first.end_lineno + 1))
    return len(source.splitlines()), len(lines)

def bash_code_lines(path):
    text = open(path, encoding="utf-8").read().splitlines()
    return len(text), sum(1 for line in text if line.strip() and not line.strip().startswith("#"))

bash_dir, agent_root, agent = sys.argv[1], sys.argv[2], sys.argv[3:]
import os
bash_files = sorted(os.path.join(root, name) for root, _, names in os.walk(bash_dir) for name in names)
total = {"bash": [0, 0], "agent": [0, 0]}
print(f"{'file':<42} {'physical':>8} {'code':>6}")
for label, files in (("bash", bash_files), ("agent", agent)):
    for path in files:
        is_python = path.endswith(".py") or open(path, encoding="utf-8").readline().startswith("#!/usr/bin/python3")
        physical, code = python_code_lines(path) if is_python else bash_code_lines(path)
        total[label][0] += physical
        total[label][1] += code
        print(f"{label + ' ' + os.path.relpath(path, bash_dir if label == 'bash' else agent_root):<42} {physical:>8} {code:>6}")
(bp, bc), (ap, ac) = total["bash"], total["agent"]
print(f"{'bash total':<42} {bp:>8} {bc:>6}")
print(f"{'agent total':<42} {ap:>8} {ac:>6}")
print(f"agent/bash: physical {ap / bp:.2f}, code {ac / bc:.2f} (budget: at most 0.50)")
PY
