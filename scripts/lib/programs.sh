# shellcheck shell=bash
# The programs each part of the payload needs on the host, with the Debian/
# Ubuntu package that provides each: one table (PROGRAMS_TABLE), plus the
# firewall programs of the jail's banaction (BANACTION_PROGRAMS) and the
# packages of the usual container runtimes (RUNTIME_PACKAGES). install checks
# the parts it is asked to install before it locks, recovers or writes
# anything (programs_check): a missing program refuses the run with one line
# per program, naming the part, the program and its package, and nothing is
# changed. A part not being installed is not checked; uninstall checks
# nothing (removing must work on a host that lost a program).
# The interpreter of the agent's programs, as their #! line names it (a unit
# test checks every one of them against this); HOSTGUARD_PYTHON stands in for
# it in tests only (a missing or too old interpreter).
readonly PROGRAMS_PYTHON="${HOSTGUARD_PYTHON:-/usr/bin/python3}"
# Seconds the interpreter may take to say its version (a hung NFS /usr must
# not hold the installer).
readonly PROGRAMS_PYTHON_TIMEOUT=20
# Programs are looked up on PATH (an absolute CONTAINER_RUNTIME as is), the
# installer's PATH; cron.d/hostguard gives the monitors the usual full PATH.
# The container runtime is needed only while the container monitor is
# scheduled (CONTAINER_MONITOR, the stack's containerMonitor, default true);
# its refusal names that way out beside the package.
# Sourced by install, never run. Reads PATH, HG_CONTAINER_RUNTIME,
# HG_CONTAINER_MONITOR, the jail
# beside install (its banaction) and, under the root, fail2ban's jail files
# (the distribution's banaction when the jail sets none) and /proc.

# part(s)|program (a,b: any one of them)|Debian/Ubuntu package|what needs it
# "*" is every part. "@runtime" stands for CONTAINER_RUNTIME (package from
# RUNTIME_PACKAGES; not needed when CONTAINER_MONITOR is false), "@banaction"
# for the programs of the jail's banaction, "@python" for the host agent's
# interpreter (PROGRAMS_PYTHON, which must also be 3.9 or later and have its
# sqlite3 module).
readonly PROGRAMS_TABLE=(
  "*|flock|util-linux|the installer's lock (every run)"
  "*|@python|python3|the host agent (every chat message, the monitors, the heartbeat) and the installer's editors (scripts/hostguard/)"
  "monitors|cron,crond|cron|the monitors' schedule (/etc/cron.d/hostguard)"
  "monitors|@runtime|-|the container monitor (CONTAINER_RUNTIME)"
  "bantool|fail2ban-client|fail2ban|the nginx-bad-request jail"
  "bantool|@banaction|-|the jail's bans (its banaction)"
  "web|nginx|nginx|the deny rule (nginx -t checks it before the reload)"
)

# banaction (a glob)|program|Debian/Ubuntu package. Every matching row
# applies; "-": the action needs no program. A banaction no row matches is
# not checked (a warning says so): fail2ban-client -t still finds a missing
# action file before the reload.
readonly BANACTION_PROGRAMS=(
  "iptables*|iptables|iptables"
  "iptables*|ip6tables|iptables"
  "*ipset*|ipset|ipset"
  "nftables*|nft|nftables"
  "firewallcmd*|firewall-cmd|firewalld"
  "ufw|ufw|ufw"
  "shorewall*|shorewall|shorewall"
  "route|ip|iproute2"
  "hostsdeny|-|-"
)

# container runtime command|Debian/Ubuntu package
readonly RUNTIME_PACKAGES=(
  "docker|docker.io (or docker-ce from Docker's repository)"
  "podman|podman"
)

# A host without containers keeps its host monitor by turning the container
# monitor off (the settings table's containerMonitor row).
readonly PROGRAMS_RUNTIME_WAY_OUT="or, on a host without containers, turn the container monitor off: pulumi config set hostguard:containerMonitor false (CONTAINER_MONITOR=false in the settings file)"

# The jail in the bundle (files.table's bantool row) and its section name.
readonly PROGRAMS_JAIL_SOURCE=fail2ban/jail.d/hostguard-nginx-bad-request.local
readonly PROGRAMS_JAIL=nginx-bad-request

# Dies when a program the PARTS need is missing, after naming each one (and
# its package) on stderr; prints nothing when all are there.
programs_check() {
  local part row parts programs package why missing=0
  for part in "$@"; do
    for row in "${PROGRAMS_TABLE[@]}"; do
      IFS='|' read -r parts programs package why <<<"${row}"
      [[ "${parts}" == '*' || ",${parts}," == *",${part},"* ]] || continue
      case "${programs}" in
        @runtime)
          [[ "${HG_CONTAINER_MONITOR}" != false ]] || continue
          programs_need "${part}" "${HG_CONTAINER_RUNTIME}" "$(programs_runtime_package "${HG_CONTAINER_RUNTIME}")" \
            "${why}" "${PROGRAMS_RUNTIME_WAY_OUT}" || missing=$((missing + 1))
          ;;
        @banaction) programs_banaction "${part}" "${why}" || missing=$((missing + 1)) ;;
        @python) programs_python "${part}" "${package}" "${why}" || missing=$((missing + 1)) ;;
        *) programs_need "${part}" "${programs}" "${package}" "${why}" || missing=$((missing + 1)) ;;
      esac
    done
    [[ "${part}" != monitors ]] || programs_cron_running
  done
  ((missing == 0)) \
    || hg_die "install refused before any change: ${missing} program(s) missing (above); install the package(s) named and run it again"
}

# Succeeds when one of the comma-separated PROGRAMS is on PATH; else names
# them and PACKAGE (and OTHERWISE, another way out, when given).
programs_need() {
  local part="$1" programs="$2" package="$3" why="$4" otherwise="${5:-}" program
  local -a any
  IFS=, read -r -a any <<<"${programs}"
  for program in "${any[@]}"; do
    programs_found "${program}" && return 0
  done
  printf 'hostguard: part %s needs %s for %s: not installed (not on PATH); Debian/Ubuntu package: %s%s\n' \
    "${part}" "${programs//,/ or }" "${why}" "${package}" "${otherwise:+; ${otherwise}}" >&2
  return 1
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

programs_runtime_package() {
  local runtime="${1##*/}" row
  for row in "${RUNTIME_PACKAGES[@]}"; do
    if [[ "${row%%|*}" == "${runtime}" ]]; then
      printf '%s\n' "${row#*|}"
      return 0
    fi
  done
  printf 'the one that provides %s\n' "${runtime}"
}

# Checks the programs of the jail's banaction; 1 when one is missing.
programs_banaction() {
  local part="$1" why="$2" action row glob program package matched=0 rc=0
  action="$(programs_banaction_name)"
  if [[ -z "${action}" || "${action}" == *'%('* ]]; then
    hg_log WARN "the jail's banaction is not set or not a plain name (${action:-none}): its firewall programs are not checked"
    return 0
  fi
  for row in "${BANACTION_PROGRAMS[@]}"; do
    IFS='|' read -r glob program package <<<"${row}"
    # shellcheck disable=SC2053 # the glob matches by design
    [[ "${action}" == ${glob} ]] || continue
    matched=1
    [[ "${program}" == - ]] && continue
    programs_need "${part}" "${program}" "${package}" "${why}: banaction ${action}" || rc=1
  done
  ((matched)) || hg_log WARN "banaction ${action}: hostguard does not know its firewall programs; not checked"
  return "${rc}"
}

# Prints the banaction the jail will use, parameters ([...]) cut: the last
# one set in the jail's own section, else the last of [DEFAULT], over
# fail2ban's reading order (jail.conf, jail.d/*.conf, jail.local,
# jail.d/*.local, byte order within a directory), the bundle's jail standing
# in for the installed one. Empty when none is set.
programs_banaction_name() {
  local dir="${HG_ROOT}/etc/fail2ban" jail file value own="" default=""
  local -a files=()
  local LC_ALL=C
  jail="${HG_ROOT}/etc/fail2ban/jail.d/${PROGRAMS_JAIL_SOURCE##*/}"
  for file in "${dir}/jail.conf" "${dir}"/jail.d/*.conf "${dir}/jail.local" "${dir}"/jail.d/*.local; do
    [[ "${file}" == "${jail}" ]] && continue
    [[ -f "${file}" ]] && files+=("${file}")
  done
  [[ ! -f "${HG_SCRIPT_DIR}/${PROGRAMS_JAIL_SOURCE}" ]] || files+=("${HG_SCRIPT_DIR}/${PROGRAMS_JAIL_SOURCE}")
  # The bundle's jail sorts among jail.d/*.local under its installed name.
  mapfile -t files < <(programs_fail2ban_order "${dir}" "${jail}" "${files[@]}")
  for file in "${files[@]}"; do
    value="$(programs_ini_value "${file}" "${PROGRAMS_JAIL}" banaction)"
    [[ -z "${value}" ]] || own="${value}"
    value="$(programs_ini_value "${file}" DEFAULT banaction)"
    [[ -z "${value}" ]] || default="${value}"
  done
  value="${own:-${default}}"
  printf '%s\n' "${value%%[*}"
}

# Prints FILES (one a line) in fail2ban's reading order; the bundle's jail
# takes the place of JAIL (its installed path) in that order.
programs_fail2ban_order() {
  local dir="$1" jail="$2" file key
  shift 2
  for file in "$@"; do
    key="${file}"
    [[ "${file}" != "${HG_SCRIPT_DIR}/${PROGRAMS_JAIL_SOURCE}" ]] || key="${jail}"
    case "${key}" in
      "${dir}/jail.conf") printf '1 %s\t%s\n' "${key}" "${file}" ;;
      "${dir}"/jail.d/*.conf) printf '2 %s\t%s\n' "${key}" "${file}" ;;
      "${dir}/jail.local") printf '3 %s\t%s\n' "${key}" "${file}" ;;
      *) printf '4 %s\t%s\n' "${key}" "${file}" ;;
    esac
  done | LC_ALL=C sort | cut -f2
}

# Prints the last value of KEY in [SECTION] of FILE, fail2ban's INI syntax
# (`key = value` or `key: value`; # and ; comments); nothing when unset.
programs_ini_value() {
  local file="$1" section="$2" key="$3" line current="" value=""
  while IFS= read -r line || [[ -n "${line}" ]]; do
    if [[ "${line}" =~ ^\[([^]]*)\] ]]; then
      current="${BASH_REMATCH[1]}"
    elif [[ "${current}" == "${section}" && "${line}" =~ ^${key}[[:space:]]*[=:][[:space:]]*(.*)$ ]]; then
      value="${BASH_REMATCH[1]}"
      value="${value%%[[:space:]][#;]*}"
      value="${value%"${value##*[![:space:]]}"}"
    fi
  done <"${file}"
  printf '%s' "${value}"
}

# Installed is checked above; a cron that is not running is only warned
# about, loudly (the files are right, the admin starts it), and only on the
# live root, where /proc is the host's.
programs_cron_running() {
  local comm name
  [[ -z "${HG_ROOT}" ]] || return 0
  for comm in /proc/[0-9]*/comm; do
    read -r name 2>/dev/null <"${comm}" || continue
    [[ "${name}" == cron || "${name}" == crond ]] && return 0
  done
  hg_log WARN "cron is installed but not running: the monitors will not run until it is started (service cron start)"
}
