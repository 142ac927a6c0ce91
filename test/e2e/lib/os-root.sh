# shellcheck shell=bash
# The filesystem roots of the test hosts' operating systems (sourced by hosts.sh).
#
#   debian12   the machine's own root (hosts are overlays of it; nothing to build)
#   debian13   a Debian 13 (trixie) root made once with mmdebstrap from Debian's
#              registry, kept under HG_OS_ROOT_CACHE and used read-only as the
#              lower directory of each host's overlay
#
# A root is keyed by its suite and package list: changing HG_DEBIAN13_PACKAGES
# builds a new one; `rm -rf` of the cache directory builds it again from
# today's registry. Building takes about a minute and 230 MB, needs root and
# network, and no sandbox lock (it touches nothing of this machine's
# configuration: mmdebstrap writes only the new root).
#
# Reads: HG_E2E_OS (the hosts' OS, default debian12), HOSTGUARD_OS_ROOT_CACHE
# (default ~/.cache/hostguard/os-roots).

HG_OS_ROOT_CACHE="${HOSTGUARD_OS_ROOT_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/os-roots}"
# What a user installs (the README's apt line without docker.io: the hosts'
# container monitor runs against test/helpers/fake-docker) and what a test host
# needs beyond it, each listed with its reason in test/e2e/lib/README.md.
HG_DEBIAN13_PACKAGES=(
  python3 fail2ban nginx cron util-linux iptables
  nftables openssh-server sudo iproute2 procps curl
)

# hg_e2e_os: the hosts' OS, checked.
hg_e2e_os() {
  local os="${HG_E2E_OS:-debian12}"
  case "${os}" in
    debian12 | debian13) printf '%s\n' "${os}" ;;
    *)
      printf 'os-root: HG_E2E_OS=%s is not debian12 or debian13\n' "${os}" >&2
      return 1
      ;;
  esac
}

# os_root OS: prints the root directory of OS's hosts, building it when
# missing; prints nothing for debian12 (the machine's own root).
os_root() {
  case "$1" in
    debian12) return 0 ;;
    debian13) _hg_debian_root trixie "${HG_DEBIAN13_PACKAGES[@]}" ;;
    *)
      printf 'os-root: no root for OS %s\n' "$1" >&2
      return 1
      ;;
  esac
}

# _hg_debian_root SUITE PACKAGE...: the cached root, built under a lock (hosts
# that come up in parallel wait for one build).
_hg_debian_root() {
  local suite="$1" key dir lock_fd rc=0 start
  shift
  key="$(printf '%s\n' mmdebstrap --variant=apt "${suite}" "$@" | sha256sum | cut -c1-16)"
  dir="${HG_OS_ROOT_CACHE}/${suite}-${key}"
  if [[ ! -f "${dir}.done" ]]; then
    mkdir -p "${HG_OS_ROOT_CACHE}" || return 1
    exec {lock_fd}>>"${HG_OS_ROOT_CACHE}/.lock"
    if ! flock -w 900 "${lock_fd}"; then
      printf 'os-root: could not lock %s/.lock within 15 minutes\n' "${HG_OS_ROOT_CACHE}" >&2
      exec {lock_fd}>&-
      return 1
    fi
    if [[ ! -f "${dir}.done" ]]; then
      command -v mmdebstrap >/dev/null || {
        printf 'os-root: mmdebstrap is not installed (tools/setup.bash: hg_setup_debian_packages)\n' >&2
        exec {lock_fd}>&-
        return 1
      }
      printf 'os-root: building the %s root in %s (once; about a minute)\n' "${suite}" "${dir}" >&2
      start="${SECONDS}"
      rm -rf -- "${dir}.tmp" "${dir}"
      if mmdebstrap --quiet --variant=apt --include="$(IFS=,; printf '%s' "$*")" \
        "${suite}" "${dir}.tmp" >"${HG_OS_ROOT_CACHE}/${suite}-${key}.log" 2>&1 &&
        mv -- "${dir}.tmp" "${dir}"; then
        printf 'built in %d s: %s\n' "$((SECONDS - start))" "$*" >"${dir}.done"
      else
        printf 'os-root: mmdebstrap failed for %s:\n' "${suite}" >&2
        tail -n 30 "${HG_OS_ROOT_CACHE}/${suite}-${key}.log" >&2
        rm -rf -- "${dir}.tmp"
        rc=1
      fi
    fi
    exec {lock_fd}>&-
    ((rc == 0)) || return 1
  fi
  printf '%s\n' "${dir}"
}
