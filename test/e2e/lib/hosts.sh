# shellcheck shell=bash
# Disposable test hosts for the end-to-end tests and benchmarks (sourced).
#
# Each host is a network namespace on one private L2 segment, with its own
# mount, UTS (host name = NAME) and PID namespaces (see host-init.sh): overlays over /etc, /var and
# /usr/local, fresh /root, /var/log, /dev, /run and /tmp, systemd-journald, and Debian's
# sshd, nginx, fail2ban and cron started inside (fail2ban as Debian 12 leaves
# it does not start: see _hg_host_services). Client namespaces make requests from their
# own addresses. Nothing changes on this machine except one veth interface in
# the root namespace (so the Pulumi engine can reach the hosts over SSH); no
# firewall rule, sysctl, file under /etc or crontab line outside the hosts.
#
# Addressing (NET is 10.77 unless taken, see hosts_init):
#   NET.0.1    "lan" namespace: the bridge; run the webhook receiver here
#   NET.0.254  root namespace side (where the Pulumi engine and ssh run)
#   NET.I.2    host with index I (1..250)
#   NET.I.3    client with index I (1..250)
# All on one /16 bridge, so nothing needs forwarding.
#
# A host's OS is HG_E2E_OS's when it comes up (os-root.sh): debian12, the
# machine's own root, as above; debian13, a cached Debian 13 root as the host's
# whole filesystem (host-init.sh), with its own python3, sshd, nginx, fail2ban, cron.
#
# Reads: HG_RUN_ID, HG_RUN_DIR, HG_NET, HG_KEEP_RUN_DIR (all optional; set and
# exported by hosts_init), HG_E2E_OS. Needs root, iproute2, util-linux, openssh, python3.

HG_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=os-root.sh
source "${HG_LIB_DIR}/os-root.sh"
HG_HOST_PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HG_SNAPSHOT_PATHS=(
  /etc/hostguard /etc/cron.d /etc/fail2ban /etc/nginx /etc/logrotate.d
  /usr/local/lib /usr/local/bin /usr/local/sbin
  /var/lib/hostguard /var/spool/hostguard /var/log/hostguard
)
HG_LOCK_FILE="/tmp/hg-e2e-net.lock"

_hg_err() {
  printf 'hosts: %s\n' "$*" >&2
}

# --- run-wide state ---------------------------------------------------------

# hosts_init: makes the run directory, the SSH client key and the lan
# namespace with its bridge. Called by host_up/client_up; idempotent.
hosts_init() {
  if [[ -n "${HG_RUN_DIR:-}" && -f "${HG_RUN_DIR}/net" ]]; then
    HG_NET="$(<"${HG_RUN_DIR}/net")"
    export HG_RUN_ID HG_RUN_DIR HG_NET
    return 0
  fi
  ((EUID == 0)) || { _hg_err "needs root"; return 1; }
  if [[ -z "${HG_RUN_ID:-}" ]]; then
    HG_RUN_ID="$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
  fi
  # The root-side interface is "hg<RUN_ID>": at most 15 characters.
  [[ "${HG_RUN_ID}" =~ ^[a-z0-9]{1,8}$ ]] || { _hg_err "bad HG_RUN_ID: ${HG_RUN_ID}"; return 1; }
  HG_RUN_DIR="${HG_RUN_DIR:-/tmp/hg-e2e-${HG_RUN_ID}}"
  export HG_RUN_ID HG_RUN_DIR
  (umask 077 && mkdir -p "${HG_RUN_DIR}/hosts" "${HG_RUN_DIR}/clients" "${HG_RUN_DIR}/ssh") || return 1
  if [[ ! -f "${HG_RUN_DIR}/ssh/id_ed25519" ]]; then
    ssh-keygen -q -t ed25519 -N '' -C "hostguard-e2e-${HG_RUN_ID}" \
      -f "${HG_RUN_DIR}/ssh/id_ed25519" || return 1
  fi
  local lock_fd rc=0
  exec {lock_fd}>>"${HG_LOCK_FILE}"
  if flock -w 20 "${lock_fd}"; then
    _hg_make_lan || rc=1
  else
    _hg_err "could not lock ${HG_LOCK_FILE}"
    rc=1
  fi
  exec {lock_fd}>&-
  ((rc == 0)) || return 1
  printf '%s\n' "${HG_NET}" >"${HG_RUN_DIR}/net"
  export HG_NET
}

_hg_net_taken() {
  local net="$1"
  ip -4 -o addr show | grep -qF " ${net}." && return 0
  ip -4 route show | grep -qE "^${net//./\\.}\." && return 0
  return 1
}

_hg_pick_net() {
  local octet
  if [[ -n "${HG_NET:-}" ]]; then
    [[ "${HG_NET}" =~ ^10\.[0-9]{1,3}$ ]] || { _hg_err "bad HG_NET: ${HG_NET}"; return 1; }
    _hg_net_taken "${HG_NET}" && { _hg_err "HG_NET ${HG_NET}.0.0/16 is in use"; return 1; }
    return 0
  fi
  for ((octet = 77; octet <= 99; octet++)); do
    if ! _hg_net_taken "10.${octet}"; then
      HG_NET="10.${octet}"
      return 0
    fi
  done
  _hg_err "no free 10.77-10.99 /16 for the test network"
  return 1
}

_hg_make_lan() {
  _hg_pick_net || return 1
  local lan root_if
  lan="$(lan_netns)"
  root_if="$(_hg_root_if)"
  if ! { ip netns add "${lan}" &&
    ip -n "${lan}" link set lo up &&
    ip -n "${lan}" link add br0 type bridge &&
    ip -n "${lan}" addr add "${HG_NET}.0.1/16" dev br0 &&
    ip -n "${lan}" link set br0 up &&
    ip link add "${root_if}" type veth peer name up0 netns "${lan}" &&
    ip -n "${lan}" link set up0 master br0 up &&
    ip addr add "${HG_NET}.0.254/16" dev "${root_if}" &&
    ip link set "${root_if}" up; }; then
    _hg_err "could not make the lan namespace ${lan}"
    return 1
  fi
}

_hg_root_if() {
  printf 'hg%s\n' "${HG_RUN_ID:?hosts_init first}"
}

# lan_netns: name of the lan namespace (the bridge; the receiver's home).
lan_netns() {
  printf 'hg-%s-lan\n' "${HG_RUN_ID:?hosts_init first}"
}

# lan_addr: the lan namespace's address, where the webhook receiver binds.
lan_addr() {
  printf '%s.0.1\n' "${HG_NET:?hosts_init first}"
}

# root_addr: the root namespace's address on the test network.
root_addr() {
  printf '%s.0.254\n' "${HG_NET:?hosts_init first}"
}

# lan_exec CMD...: runs CMD in the lan namespace's network (same filesystem).
lan_exec() {
  nsenter --net="/run/netns/$(lan_netns)" -- "$@"
}

_hg_check_name() {
  [[ "$1" =~ ^[A-Za-z0-9_-]{1,32}$ ]] || { _hg_err "bad name: $1"; return 1; }
}

_hg_check_index() {
  if ! [[ "$1" =~ ^[0-9]{1,3}$ ]] || (($1 < 1 || $1 > 250)); then
    _hg_err "index must be 1..250: $1"
    return 1
  fi
}

# Wires namespace NS to the bridge as eth0 with ADDR, default route via lan.
_hg_attach() {
  local ns="$1" lan_if="$2" addr="$3" lan
  lan="$(lan_netns)"
  if ! { ip -n "${lan}" link add "${lan_if}" type veth peer name eth0 netns "${ns}" &&
    ip -n "${lan}" link set "${lan_if}" master br0 up &&
    ip -n "${ns}" link set lo up &&
    ip -n "${ns}" addr add "${addr}/16" dev eth0 &&
    ip -n "${ns}" link set eth0 up &&
    ip -n "${ns}" route add default via "$(lan_addr)"; }; then
    _hg_err "could not wire ${ns} to the lan"
    return 1
  fi
}

_hg_netns_exists() {
  [[ -e "/run/netns/$1" ]]
}

# Kills every process in network namespace NS, then deletes it.
_hg_netns_destroy() {
  local ns="$1" i pids
  _hg_netns_exists "${ns}" || return 0
  for ((i = 0; i < 50; i++)); do
    pids="$(ip netns pids "${ns}" 2>/dev/null)" || pids=""
    [[ -z "${pids}" ]] && break
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL ${pids} 2>/dev/null || true
    sleep 0.1
  done
  [[ -z "${pids}" ]] || _hg_err "processes left in ${ns}: ${pids}"
  ip netns del "${ns}" 2>/dev/null || true
  [[ -z "${pids}" ]]
}

# --- hosts ------------------------------------------------------------------

_hg_host_dir() {
  printf '%s/hosts/%s\n' "${HG_RUN_DIR:?hosts_init first}" "$1"
}

# host_netns NAME: the host's network namespace name.
host_netns() {
  printf 'hg-%s-h-%s\n' "${HG_RUN_ID:?hosts_init first}" "$1"
}

# host_addr NAME: the host's address (sshd, nginx).
host_addr() {
  local dir index
  dir="$(_hg_host_dir "$1")" || return 1
  [[ -f "${dir}/index" ]] || { _hg_err "no host $1"; return 1; }
  index="$(<"${dir}/index")"
  printf '%s.%s.2\n' "${HG_NET}" "${index}"
}

# host_os NAME: the host's OS (debian12 or debian13).
host_os() {
  local dir
  dir="$(_hg_host_dir "$1")" || return 1
  [[ -f "${dir}/os" ]] || { _hg_err "no host $1"; return 1; }
  printf '%s\n' "$(<"${dir}/os")"
}

# host_pid NAME: PID (in the root PID namespace) of the host's init.
host_pid() {
  local dir
  dir="$(_hg_host_dir "$1")" || return 1
  [[ -s "${dir}/pid" ]] || { _hg_err "host $1 is not up"; return 1; }
  printf '%s\n' "$(<"${dir}/pid")"
}

# host_exec NAME CMD...: runs CMD as root inside the host (its mounts, network,
# host name and PIDs), from /, with a clean environment. Stdin and exit status
# pass through.
host_exec() {
  local name="$1" pid
  shift
  pid="$(host_pid "${name}")" || return 1
  nsenter --target "${pid}" --mount --net --uts --pid -- \
    env -i -C / PATH="${HG_HOST_PATH}" HOME=/root USER=root LOGNAME=root \
    SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb "$@"
}

# host_ssh_key: the private key that logs in as root on every host.
host_ssh_key() {
  printf '%s/ssh/id_ed25519\n' "${HG_RUN_DIR:?hosts_init first}"
}

# host_known_hosts_line NAME: "ADDR ssh-ed25519 KEY" for a known_hosts file.
host_known_hosts_line() {
  local dir
  dir="$(_hg_host_dir "$1")" || return 1
  [[ -s "${dir}/known_hosts" ]] || { _hg_err "host $1 is not up"; return 1; }
  cat "${dir}/known_hosts"
}

# hosts_known_hosts_file: writes the lines of every host up into one file and
# prints its path.
hosts_known_hosts_file() {
  local file="${HG_RUN_DIR:?hosts_init first}/known_hosts" dir
  : >"${file}"
  for dir in "${HG_RUN_DIR}"/hosts/*/; do
    [[ -s "${dir}known_hosts" ]] && cat "${dir}known_hosts" >>"${file}"
  done
  printf '%s\n' "${file}"
}

# host_ssh NAME CMD...: ssh root@host from the root namespace, with the key
# and strict host key checking (ssh joins CMD's words with spaces).
host_ssh() {
  local name="$1" dir addr key
  shift
  dir="$(_hg_host_dir "${name}")" || return 1
  addr="$(host_addr "${name}")" || return 1
  key="$(host_ssh_key)"
  ssh -F /dev/null -i "${key}" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="${dir}/known_hosts" \
    -o ConnectTimeout=5 -o LogLevel=ERROR "root@${addr}" -- "$@"
}

# host_up NAME INDEX: makes (or keeps, when already up with that index) host
# NAME at NET.INDEX.2 with sshd, nginx, fail2ban and cron running.
host_up() {
  local name="$1" index="$2" dir ns addr os root
  _hg_check_name "${name}" && _hg_check_index "${index}" || return 1
  hosts_init || return 1
  os="$(hg_e2e_os)" && root="$(os_root "${os}")" || return 1
  dir="$(_hg_host_dir "${name}")"
  ns="$(host_netns "${name}")"
  if [[ -f "${dir}/ready" ]] && _hg_host_alive "${name}"; then
    [[ "$(<"${dir}/index")" == "${index}" ]] && return 0
    _hg_err "host ${name} is already up with index $(<"${dir}/index")"
    return 1
  fi
  if [[ -e "${dir}" ]] || _hg_netns_exists "${ns}"; then
    host_down "${name}" || return 1
  fi
  _hg_index_free "${index}" || return 1
  addr="${HG_NET}.${index}.2"
  (umask 077 && mkdir -p "${dir}") || return 1
  printf '%s\n' "${index}" >"${dir}/index"
  printf '%s\n' "${os}" >"${dir}/os"
  if ! { ip netns add "${ns}" &&
    _hg_attach "${ns}" "h${index}" "${addr}" &&
    _hg_host_init "${name}" "${addr}" "${root}" &&
    _hg_host_services "${name}" &&
    _hg_host_known_hosts "${name}" "${addr}"; }; then
    _hg_err "host ${name} failed to come up; logs in ${dir}"
    return 1
  fi
  : >"${dir}/ready"
}

_hg_index_free() {
  local index="$1" file
  for file in "${HG_RUN_DIR}"/hosts/*/index; do
    [[ -f "${file}" && "$(<"${file}")" == "${index}" ]] || continue
    _hg_err "index ${index} is taken by host $(basename "$(dirname "${file}")")"
    return 1
  done
}

_hg_host_alive() {
  local pid ns_ino pid_ino
  pid="$(host_pid "$1" 2>/dev/null)" || return 1
  ns_ino="$(stat -L -c %i "/run/netns/$(host_netns "$1")" 2>/dev/null)" || return 1
  pid_ino="$(stat -L -c %i "/proc/${pid}/ns/net" 2>/dev/null)" || return 1
  [[ "${ns_ino}" == "${pid_ino}" ]]
}

# Starts host-init.sh as PID 1 of fresh mount+PID namespaces inside the
# host's netns (on ROOT when given), and waits for it to print "ready".
_hg_host_init() {
  local name="$1" addr="$2" root="$3" dir ns parent i child=""
  dir="$(_hg_host_dir "${name}")"
  ns="$(host_netns "${name}")"
  # fd 3 closed: bats waits for it, and the host outlives the caller.
  nsenter --net="/run/netns/${ns}" -- \
    unshare --mount --propagation private --uts --pid --fork --mount-proc -- \
    bash "${HG_LIB_DIR}/host-init.sh" "${dir}" "${addr}" "${HG_RUN_DIR}/ssh/id_ed25519.pub" "${name}" ${root:+"${root}"} \
    </dev/null >"${dir}/init.log" 2>&1 3>&- &
  parent=$!
  disown "${parent}"
  for ((i = 0; i < 200; i++)); do
    if grep -qx ready "${dir}/init.log" 2>/dev/null; then
      read -r child _ <"/proc/${parent}/task/${parent}/children" || true
      break
    fi
    kill -0 "${parent}" 2>/dev/null || break
    sleep 0.02
  done
  if [[ -z "${child}" ]]; then
    _hg_err "host ${name}: init did not get ready:"
    cat "${dir}/init.log" >&2
    return 1
  fi
  printf '%s\n' "${child}" >"${dir}/pid"
}

# Starts the daemons the way the host's init would, all at once. sshd logs to
# the journal (/dev/log). fail2ban as Debian 12 leaves it does not start
# (its sshd jail's /var/log/auth.log does not exist, fail2ban#3292): that is
# logged in services.log, as an init would, and is no failure of the host;
# when it does start, the host waits for it to answer.
_hg_host_services() {
  local name="$1" dir log pid rc=0 i f2b=0
  local -a pids=()
  dir="$(_hg_host_dir "${name}")"
  log="${dir}/services.log"
  host_exec "${name}" /usr/sbin/sshd >>"${log}" 2>&1 3>&- &
  pids+=("$!")
  host_exec "${name}" timeout 20 service nginx start >>"${log}" 2>&1 3>&- &
  pids+=("$!")
  host_exec "${name}" timeout 20 service cron start >>"${log}" 2>&1 3>&- &
  pids+=("$!")
  host_exec "${name}" timeout 30 service fail2ban start >>"${log}" 2>&1 3>&- &
  f2b="$!"
  for pid in "${pids[@]}"; do
    wait "${pid}" || rc=1
  done
  ((rc == 0)) || { _hg_err "host ${name}: a service failed to start:"; cat "${log}" >&2; return 1; }
  if ! wait "${f2b}"; then
    printf 'fail2ban did not start (as on Debian 12 without rsyslog: no /var/log/auth.log)\n' >>"${log}"
    f2b=0
  fi
  for ((i = 0; i < 100; i++)); do
    if _hg_sshd_listening "${name}" &&
      { ((f2b == 0)) || host_exec "${name}" fail2ban-client ping >/dev/null 2>&1; }; then
      return 0
    fi
    sleep 0.1
  done
  _hg_err "host ${name}: sshd or fail2ban not answering after 10 s"
  cat "${log}" >&2
  return 1
}

_hg_sshd_listening() {
  local out
  out="$(host_exec "$1" ss -Hltn 'sport = :22' 2>/dev/null)" || return 1
  [[ -n "${out}" ]]
}

_hg_host_known_hosts() {
  local name="$1" addr="$2" dir type key
  dir="$(_hg_host_dir "${name}")"
  read -r type key _ < <(host_exec "${name}" cat /etc/ssh/ssh_host_ed25519_key.pub) || return 1
  [[ -n "${key}" ]] || return 1
  printf '%s %s %s\n' "${addr}" "${type}" "${key}" >"${dir}/known_hosts"
}

# host_snapshot NAME [PATH...]: sorted listing (path, type, mode, owner,
# size, sha256) of everything under PATHs, default the paths a deploy writes.
host_snapshot() {
  local name="$1"
  shift
  local -a paths=("$@")
  ((${#paths[@]})) || paths=("${HG_SNAPSHOT_PATHS[@]}")
  host_exec "${name}" python3 - "${paths[@]}" <"${HG_LIB_DIR}/snapshot.py"
}

# host_sshd_log NAME: sshd's lines in the host's journal (where it logs, as
# on Debian 12 without rsyslog), one per line, `journalctl -o cat`.
host_sshd_log() {
  host_exec "$1" journalctl --no-pager -q -o cat _COMM=sshd
}

# host_kill_sshd NAME: SIGKILLs the host's sshd: listener and every session.
host_kill_sshd() {
  local name="$1" i
  host_exec "${name}" pkill -KILL -x sshd || true
  for ((i = 0; i < 50; i++)); do
    host_exec "${name}" pgrep -x sshd >/dev/null || return 0
    sleep 0.1
  done
  _hg_err "host ${name}: sshd still running"
  return 1
}

# host_start_sshd NAME: starts sshd again and waits until it listens.
host_start_sshd() {
  local name="$1" i
  host_exec "${name}" /usr/sbin/sshd 3>&- || return 1
  for ((i = 0; i < 50; i++)); do
    _hg_sshd_listening "${name}" && return 0
    sleep 0.1
  done
  _hg_err "host ${name}: sshd not listening after 5 s"
  return 1
}

# host_hide_package NAME PACKAGE: inside host NAME only, every program of
# PACKAGE (its files in bin/ and sbin/ directories, from dpkg -L) is gone,
# as after `apt-get remove` (its configuration in /etc stays, as then): each
# such directory gets an overlay in the host's private mount namespace with a
# whiteout per program (upper and work directories in the host's /run). The
# machine's own directories are untouched. Stop the package's daemon first;
# one package per host at a time. host_unhide_package NAME undoes it.
host_hide_package() {
  local name="$1" package="$2"
  # shellcheck disable=SC2016 # expanded by the host's bash
  host_exec "${name}" bash -euo pipefail -c '
    [[ ! -e /run/hg-hide ]] || { echo "a package is hidden already" >&2; exit 1; }
    mkdir -m 0700 /run/hg-hide
    dpkg -L "$1" | grep -E "^(/usr)?/s?bin/[^/]+$" | while IFS= read -r file; do
      [[ -e "${file}" || -L "${file}" ]] || continue
      dir="$(readlink -f -- "${file%/*}")"
      mkdir -p "/run/hg-hide${dir}/upper" "/run/hg-hide${dir}/work"
      [[ -e "/run/hg-hide${dir}/upper/${file##*/}" ]] || mknod "/run/hg-hide${dir}/upper/${file##*/}" c 0 0
      grep -qxF -- "${dir}" /run/hg-hide/dirs 2>/dev/null || printf "%s\n" "${dir}" >>/run/hg-hide/dirs
    done
    [[ -s /run/hg-hide/dirs ]] || { echo "no program of $1 to hide" >&2; exit 1; }
    while IFS= read -r dir; do
      mount -t overlay overlay -o "lowerdir=${dir},upperdir=/run/hg-hide${dir}/upper,workdir=/run/hg-hide${dir}/work" "${dir}"
    done </run/hg-hide/dirs' _ "${package}"
}

host_unhide_package() {
  # shellcheck disable=SC2016 # expanded by the host's bash
  host_exec "$1" bash -euo pipefail -c '
    [[ -f /run/hg-hide/dirs ]] || exit 0
    # Lazy: this very bash runs from the overlay.
    tac /run/hg-hide/dirs | while IFS= read -r dir; do umount --lazy "${dir}"; done
    rm -rf /run/hg-hide'
}

# host_down NAME: kills every process of the host, deletes its namespaces
# (its mounts go with them) and its directory. Safe on a half-made host.
host_down() {
  local name="$1" dir ns addr rc=0
  [[ -n "${HG_RUN_DIR:-}" ]] || return 0
  dir="$(_hg_host_dir "${name}")"
  ns="$(host_netns "${name}")"
  addr="$(host_addr "${name}" 2>/dev/null)" || addr=""
  _hg_netns_destroy "${ns}" || rc=1
  # The root side would remember the old host's MAC for this address, and a
  # new host at the same address would be unreachable until that entry ages.
  [[ -z "${addr}" ]] || ip neigh flush to "${addr}" dev "$(_hg_root_if)" 2>/dev/null || true
  rm -rf -- "${dir}"
  return "${rc}"
}

# --- clients ----------------------------------------------------------------

_hg_client_dir() {
  printf '%s/clients/%s\n' "${HG_RUN_DIR:?hosts_init first}" "$1"
}

# client_netns NAME: the client's network namespace name.
client_netns() {
  printf 'hg-%s-c-%s\n' "${HG_RUN_ID:?hosts_init first}" "$1"
}

# client_addr NAME: the client's address (what a host's fail2ban bans).
client_addr() {
  local dir
  dir="$(_hg_client_dir "$1")" || return 1
  [[ -f "${dir}/index" ]] || { _hg_err "no client $1"; return 1; }
  printf '%s.%s.3\n' "${HG_NET}" "$(<"${dir}/index")"
}

# client_up NAME INDEX: a bare network namespace at NET.INDEX.3.
client_up() {
  local name="$1" index="$2" dir ns
  _hg_check_name "${name}" && _hg_check_index "${index}" || return 1
  hosts_init || return 1
  dir="$(_hg_client_dir "${name}")"
  ns="$(client_netns "${name}")"
  if [[ -f "${dir}/ready" ]] && _hg_netns_exists "${ns}"; then
    [[ "$(<"${dir}/index")" == "${index}" ]] && return 0
    _hg_err "client ${name} is already up with index $(<"${dir}/index")"
    return 1
  fi
  client_down "${name}" || return 1
  local file
  for file in "${HG_RUN_DIR}"/clients/*/index; do
    [[ -f "${file}" && "$(<"${file}")" == "${index}" ]] || continue
    _hg_err "client index ${index} is taken"
    return 1
  done
  (umask 077 && mkdir -p "${dir}") || return 1
  printf '%s\n' "${index}" >"${dir}/index"
  ip netns add "${ns}" && _hg_attach "${ns}" "c${index}" "${HG_NET}.${index}.3" || return 1
  : >"${dir}/ready"
}

# client_exec NAME CMD...: runs CMD in the client's network namespace.
client_exec() {
  local name="$1"
  shift
  nsenter --net="/run/netns/$(client_netns "${name}")" -- "$@"
}

# client_curl NAME CURL_ARGS...: curl from the client (-sS, --max-time 5
# unless given later in the arguments); returns curl's status.
client_curl() {
  local name="$1"
  shift
  client_exec "${name}" curl -sS --max-time 5 "$@"
}

# client_down NAME: kills what runs in the client and deletes it.
client_down() {
  local name="$1" rc=0
  [[ -n "${HG_RUN_DIR:-}" ]] || return 0
  _hg_netns_destroy "$(client_netns "${name}")" || rc=1
  rm -rf -- "$(_hg_client_dir "${name}")"
  return "${rc}"
}

# --- everything -------------------------------------------------------------

# hosts_down_all: tears down every host, client, the lan namespace (and the
# receiver in it), the root-side veth and the run directory (kept when
# HG_KEEP_RUN_DIR=1). For traps: never stops half-way.
hosts_down_all() {
  local dir rc=0
  [[ -n "${HG_RUN_DIR:-}" && -n "${HG_RUN_ID:-}" ]] || return 0
  for dir in "${HG_RUN_DIR}"/hosts/*/; do
    [[ -d "${dir}" ]] && { host_down "$(basename "${dir}")" || rc=1; }
  done
  for dir in "${HG_RUN_DIR}"/clients/*/; do
    [[ -d "${dir}" ]] && { client_down "$(basename "${dir}")" || rc=1; }
  done
  _hg_netns_destroy "$(lan_netns)" || rc=1
  ip link del "$(_hg_root_if)" 2>/dev/null || true
  if [[ "${HG_KEEP_RUN_DIR:-0}" != 1 ]]; then
    rm -rf -- "${HG_RUN_DIR}"
  fi
  return "${rc}"
}
