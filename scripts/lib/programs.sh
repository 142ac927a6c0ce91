# shellcheck shell=bash
# The programs each part of the payload needs on the host: the table and its
# checks are the host agent's hostguard/programs.py; this shell guard checks
# the one program that module needs to run, the agent's interpreter (the
# table's "@python" row), so a host without it (or with one too old) gets
# one clear line naming it and its package, not an interpreter's error.
# install checks the parts it is asked to install before it locks, recovers
# or writes anything (programs_check): a missing program refuses the run
# with one line per program, naming the part, the program and its package,
# and nothing is changed. A part not being installed is not checked;
# uninstall checks nothing (removing must work on a host that lost a program).
# The interpreter of the agent's programs, as their #! line names it (a unit
# test checks every one of them against this); HOSTGUARD_PYTHON stands in for
# it in tests only (a missing or too old interpreter).
readonly PROGRAMS_PYTHON="${HOSTGUARD_PYTHON:-/usr/bin/python3}"
# Seconds the interpreter may take to say its version (a hung NFS /usr must
# not hold the installer).
readonly PROGRAMS_PYTHON_TIMEOUT=20
# The "@python" row of hostguard/programs.py's TABLE.
readonly PROGRAMS_PYTHON_WHY="the host agent (every chat message, the monitors, the heartbeat) and the installer's editors (scripts/hostguard/)"
# Sourced by install, never run. Reads PATH, HG_ROOT, HG_SCRIPT_DIR,
# HG_CONTAINER_RUNTIME and HG_CONTAINER_MONITOR.

# Dies when a program the PARTS need is missing, after naming each one (and
# its package) on stderr; prints nothing when all are there.
programs_check() {
  local part missing=0
  for part in "$@"; do
    programs_python "${part}" python3 "${PROGRAMS_PYTHON_WHY}" || missing=$((missing + 1))
  done
  if ((missing == 0)); then
    "${PROGRAMS_PYTHON}" -I -B -c \
      'import sys; sys.path.insert(0, sys.argv[1]); from hostguard.programs import main; sys.exit(main(sys.argv[2:]))' \
      "${HG_SCRIPT_DIR}" check --root "${HG_ROOT}" --bundle "${HG_SCRIPT_DIR}" --runtime "${HG_CONTAINER_RUNTIME}" \
      --container-monitor "${HG_CONTAINER_MONITOR}" "$@" || missing=$?
  fi
  ((missing == 0)) \
    || hg_die "install refused before any change: ${missing} program(s) missing (above); install the package(s) named and run it again"
}

# Succeeds when PROGRAM (a name, or a path as is) is an executable file on
# PATH. Not `type -P` or `command -v`: when nothing executable is found they
# answer with a file that is not, and `command -v` with a function.
programs_found() {
  local program="$1" dir
  local -a dirs
  if [[ "${program}" == */* ]]; then
    [[ -f "${program}" && -x "${program}" ]]
    return
  fi
  IFS=: read -r -a dirs <<<"${PATH}"
  for dir in "${dirs[@]}"; do
    [[ -f "${dir:-.}/${program}" && -x "${dir:-.}/${program}" ]] && return 0
  done
  return 1
}

# Succeeds when PROGRAMS_PYTHON runs, is 3.9 or later and imports sqlite3
# (the spool); else names it, what it lacks and PACKAGE.
programs_python() {
  local part="$1" package="$2" why="$3" lacks=""
  if ! programs_found "${PROGRAMS_PYTHON}"; then
    lacks="not installed"
  elif ! timeout "${PROGRAMS_PYTHON_TIMEOUT}" "${PROGRAMS_PYTHON}" -IS -c \
    'import sys, sqlite3; sys.exit(0 if sys.version_info >= (3, 9) else 1)' >/dev/null 2>&1; then
    lacks="older than 3.9 or without its sqlite3 module"
  fi
  [[ -n "${lacks}" ]] || return 0
  printf 'hostguard: part %s needs %s (Python 3.9 or later with sqlite3) for %s: %s; Debian/Ubuntu package: %s\n' \
    "${part}" "${PROGRAMS_PYTHON}" "${why}" "${lacks}" "${package}" >&2
  return 1
}

