# shellcheck shell=bash
# shellcheck disable=SC2034 # SAFE_* results are read by the script that sources this file
# No privileged write through a path someone else controls, by construction.
# A directory is root's when root owns it and nobody else may write to it;
# a directory another user owns (and only that user may write to) is that
# user's, and so is everything under it. Root follows a symbolic link only
# where only root could have made it, and reads and writes a file under a
# user's directory only with that user's own identity (setpriv: its uid, its
# primary group from the password database and its supplementary groups,
# never the file's group), so no swap of a temp file, the file or a
# directory for a symlink can make root write, chown or read anything that
# user could not. That helper runs as the user, so the user may stop or trace
# it: it only ever writes into a pipe root reads (at most SAFE_READ_MAX
# bytes) or reads from a pipe root fills, holds no descriptor of root's, and
# root waits for it at most SAFE_HELPER_TIMEOUT seconds. Anything else (a directory
# writable by a group or by all, two users on one path, a symlink in a
# user's directory, a file another user owns there) is refused, naming the
# path. The root prefix itself (--root) is trusted. Sourced by install.

readonly SAFE_TMP_PREFIX=.hostguard-tmp.
# The most bytes root reads from a file a user may control (APP_PROPERTIES,
# NGINX_SERVER_CONF, and what install reads back for uninstall): a larger
# file, a sparse one included, is refused before anything is written.
readonly SAFE_READ_MAX=$((4 * 1024 * 1024))
# Seconds root waits for a helper running with a user's rights (reading or
# writing at most SAFE_READ_MAX bytes takes milliseconds; a stopped helper
# must not hold the install lock for ever).
readonly SAFE_HELPER_TIMEOUT=60
# A clean environment for what runs with a user's rights.
readonly SAFE_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C)

SAFE_LABEL=""     # the setting that named the file, for errors
SAFE_REAL=""      # host path of the file, symlinks resolved
SAFE_UID=0        # who may write it: 0, or the user controlling its directory
SAFE_GID=0        # that user's primary group (password database), never the file's
SAFE_FILE_OWNER="" # uid:gid of the file
SAFE_FILE_MODE=""

# Prints "uid gid octal-mode size type" of host path PATH (in the root),
# without following a final symlink; nothing when it does not exist.
safe_stat() {
  stat -c '%u %g %a %s %F' -- "${HG_ROOT}$1" 2>/dev/null || true
}

# SAFE_GID <- the primary group of uid UID in the password database (the
# host's: setpriv runs on the host). A uid without an account is refused:
# root would not know which groups are that user's own.
safe_account() {
  local label="$1" dir="$2" uid="$3" line
  line="$(getent passwd "${uid}" 2>/dev/null)" || line=""
  [[ "${line}" =~ ^[^:]*:[^:]*:${uid}:([0-9]+): ]] \
    || hg_die "${label}: ${dir} belongs to uid ${uid}, which has no account in the password database: refused (a user's file is edited with that user's own groups only)"
  SAFE_GID="${BASH_REMATCH[1]}"
}

# Dies when more than its owner may write to directory host path DIR (MODE
# is its octal mode): then nobody alone controls what is in it.
safe_dir_owner_only() {
  local label="$1" dir="$2" mode="$3"
  if (((8#${mode} & 8#022) != 0)); then
    hg_die "${label:+${label}: }${dir} is writable by a group or by all users: refused (make it writable by its owner only)"
  fi
}

# Resolves the existing regular file at host path PATH for an edit (LABEL
# names the setting in errors). Sets SAFE_REAL, SAFE_UID/SAFE_GID (who writes
# it), SAFE_FILE_OWNER and SAFE_FILE_MODE.
safe_resolve_file() {
  local label="$1" path="$2" cur="" comp next uid gid mode size type target hops=0 controller=0
  local -a todo
  SAFE_LABEL="${label}"
  SAFE_GID=0
  IFS=/ read -r -a todo <<<"${path#/}"
  [[ "${path}" == /* ]] || hg_die "${label}: ${path} is not an absolute path"
  while ((${#todo[@]} > 0)); do
    comp="${todo[0]}"
    todo=("${todo[@]:1}")
    case "${comp}" in
      "" | .) continue ;;
      ..)
        cur="${cur%/*}"
        continue
        ;;
    esac
    next="${cur}/${comp}"
    read -r uid gid mode size type <<<"$(safe_stat "${next}")"
    [[ -n "${uid:-}" ]] || hg_die "${label}: ${path} is not a file under the root (${next} is missing)"
    if [[ "${type}" == "symbolic link" ]]; then
      ((controller == 0)) || hg_die "${label}: ${next} is a symbolic link in a directory of uid ${controller}: refused (root follows links only in root's directories)"
      ((++hops <= 40)) || hg_die "${label}: ${path}: too many symbolic links"
      target="$(readlink -- "${HG_ROOT}${next}")"
      [[ "${target}" == /* ]] && cur=""
      local -a more
      IFS=/ read -r -a more <<<"${target#/}"
      todo=("${more[@]}" "${todo[@]}")
      continue
    fi
    if ((${#todo[@]} > 0)); then
      [[ "${type}" == directory ]] || hg_die "${label}: ${next} is not a directory"
      safe_dir_owner_only "${label}" "${next}" "${mode}"
      if ((uid != 0)); then
        ((controller == 0 || controller == uid)) \
          || hg_die "${label}: ${next} belongs to uid ${uid} under a directory of uid ${controller}: refused"
        ((controller == uid)) || safe_account "${label}" "${next}" "${uid}"
        controller="${uid}"
      fi
      cur="${next}"
      continue
    fi
    [[ "${type}" == "regular file" || "${type}" == "regular empty file" ]] \
      || hg_die "${label}: ${next} is not a regular file"
    if ((controller != 0 && uid != controller)); then
      hg_die "${label}: ${next} belongs to uid ${uid} but its directory to uid ${controller}: refused"
    fi
    ((size <= SAFE_READ_MAX)) \
      || hg_die "${label}: ${next} is ${size} bytes, over the limit of ${SAFE_READ_MAX} bytes root reads from such a file: refused"
    SAFE_REAL="${next}"
    SAFE_UID="${controller}"
    ((controller != 0)) || SAFE_GID=0
    SAFE_FILE_OWNER="${uid}:${gid}"
    SAFE_FILE_MODE="${mode}"
    return 0
  done
  hg_die "${label}: ${path} is not a file"
}

# Runs a command as the user SAFE_UID with that user's own identity (primary
# group SAFE_GID and the supplementary groups of the password database, no
# capability, clean environment, no descriptor of root's but the standard
# three, which the callers make pipes or /dev/null); as root when SAFE_UID
# is 0. Root's `timeout` ends it (the user may have stopped it).
safe_as_owner() {
  if ((SAFE_UID == 0)); then
    "$@"
    return
  fi
  (
    safe_close_fds
    exec timeout --kill-after=5 "${SAFE_HELPER_TIMEOUT}" \
      setpriv --reuid="${SAFE_UID}" --regid="${SAFE_GID}" --init-groups --inh-caps=-all \
      "${SAFE_ENV[@]}" "$@"
  )
}

# Closes every descriptor above stderr in this (sub)shell: the install lock
# and whatever the deploy's session passed to install stay root's.
safe_close_fds() {
  local path fd
  for path in /proc/self/fd/*; do
    fd="${path##*/}"
    if [[ "${fd}" =~ ^[0-9]+$ ]] && ((fd > 2)); then
      exec {fd}>&- 2>/dev/null || true
    fi
  done
}

# Copies the file resolved by safe_resolve_file to OUT (a root-only file),
# read with its controller's rights into a pipe root reads, at most
# SAFE_READ_MAX bytes: a file that grew past it since it was resolved (or a
# helper made to write more) is refused, and so is one it could not read.
safe_read() {
  local out="$1" size
  local -a codes=()
  {
    safe_as_owner cat -- "${HG_ROOT}${SAFE_REAL}" </dev/null 2>/dev/null \
      | head -c "$((SAFE_READ_MAX + 1))" >"${out}"
    codes=("${PIPESTATUS[@]}")
  } || true
  size="$(stat -c %s -- "${out}")"
  ((size <= SAFE_READ_MAX)) \
    || hg_die "${SAFE_LABEL}: ${SAFE_REAL} is over the limit of ${SAFE_READ_MAX} bytes root reads from such a file: refused"
  ((${codes[1]:-1} == 0)) || hg_die "${SAFE_LABEL}: ${SAFE_REAL}: could not keep its copy (disk full?)"
  case "${codes[0]:-1}" in
    0) ;;
    124 | 137) hg_die "${SAFE_LABEL}: ${SAFE_REAL}: reading it as uid ${SAFE_UID} did not end within ${SAFE_HELPER_TIMEOUT} s: refused" ;;
    *) hg_die "${SAFE_LABEL}: ${SAFE_REAL} could not be read as uid ${SAFE_UID} (with that user's own groups): refused" ;;
  esac
}

# Replaces the file resolved by safe_resolve_file with the content of SRC,
# keeping its owner and mode: temp file beside it, then rename, written by
# its controller (root in a root's directory, where nobody else can plant a
# link; the user in the user's directory, with nothing more than the user's
# rights). The temp name is fixed so that a crash leaves nothing a next run
# does not clean.
safe_replace() {
  local src="$1" path="${HG_ROOT}${SAFE_REAL}"
  local dir="${path%/*}" base="${path##*/}"
  if ((SAFE_UID == 0)); then
    local tmp="${dir}/${SAFE_TMP_PREFIX}${base}"
    rm -f -- "${tmp}"
    if ! { cat -- "${src}" >"${tmp}" && chown "${SAFE_FILE_OWNER}" -- "${tmp}" \
      && chmod "${SAFE_FILE_MODE}" -- "${tmp}" && mv -fT -- "${tmp}" "${path}"; }; then
      rm -f -- "${tmp}"
      hg_die "${SAFE_REAL}: could not be written"
    fi
  else
    # The content comes through a pipe root fills; the file keeps its group
    # only where the user may give it that group (chgrp as the user).
    # shellcheck disable=SC2016 # expanded by the user's shell, not here
    cat -- "${src}" | safe_as_owner bash -c 'set -eu; umask 077; tmp="$1/$4$2"; trap "rm -f -- \"\${tmp}\"" EXIT
      rm -f -- "${tmp}"; cat >"${tmp}"; chgrp "$5" -- "${tmp}" 2>/dev/null || true
      chmod "$3" -- "${tmp}"; mv -fT -- "${tmp}" "$1/$2"' \
      _ "${dir}" "${base}" "${SAFE_FILE_MODE}" "${SAFE_TMP_PREFIX}" "${SAFE_FILE_OWNER#*:}" >/dev/null 2>&1 \
      || hg_die "${SAFE_LABEL}: ${SAFE_REAL}: could not be written as uid ${SAFE_UID}"
  fi
}

# Directories safe_root_dir found root's in this run: only root can change
# that, so each is checked once.
declare -A SAFE_ROOT_DIRS=()

# Dies unless every existing directory on host path DIR is root's and no
# symbolic link: hostguard's own files go only where only root can write.
safe_root_dir() {
  local dir="$1" cur="" comp uid gid mode type k
  local -a parts todo=() lines=()
  IFS=/ read -r -a parts <<<"${dir#/}"
  for comp in "${parts[@]}"; do
    [[ -n "${comp}" ]] || continue
    cur+="/${comp}"
    [[ -v "SAFE_ROOT_DIRS[${cur}]" ]] || todo+=("${cur}")
  done
  ((${#todo[@]} > 0)) || return 0
  # One stat for the whole path: a missing directory ends the output, and
  # every one below it is missing too.
  mapfile -t lines < <(stat -c '%u %g %a %F' -- "${todo[@]/#/${HG_ROOT}}" 2>/dev/null || true)
  for ((k = 0; k < ${#lines[@]}; k++)); do
    cur="${todo[k]}"
    read -r uid gid mode type <<<"${lines[k]}"
    [[ "${type}" == directory ]] || hg_die "${cur} is not a directory (a ${type}): refused"
    ((uid == 0)) || hg_die "${cur} belongs to uid ${uid}, not root: refused"
    safe_dir_owner_only "" "${cur}" "${mode}"
    SAFE_ROOT_DIRS[${cur}]=1
  done
}
