# shellcheck shell=bash
# shellcheck disable=SC2034 # SAFE_TMP_PREFIX is read by the script that sources this file
# No privileged write through a path someone else controls: hostguard's own
# files go only into directories root owns and only root may write to
# (safe_root_dir). Users' files (the web part's) are resolved, read and
# written by the host agent (hostguard/safepath.py, hostguard/userio.py),
# with their controller's rights. The root prefix itself (--root) is
# trusted. Sourced by install.

readonly SAFE_TMP_PREFIX=.hostguard-tmp.

# Dies when more than its owner may write to directory host path DIR (MODE
# is its octal mode): then nobody alone controls what is in it.
safe_dir_owner_only() {
  local label="$1" dir="$2" mode="$3"
  if (((8#${mode} & 8#022) != 0)); then
    hg_die "${label:+${label}: }${dir} is writable by a group or by all users: refused (make it writable by its owner only)"
  fi
}

# Directories safe_root_dir found root's in this run: only root can change
# that, so each is checked once.
declare -A SAFE_ROOT_DIRS=()

# Dies unless every existing directory on host path DIR is root's and no
# symbolic link: hostguard's own files go only where only root can write.
safe_root_dir() {
  local dir="$1" cur="" comp uid mode type k
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
    read -r uid _ mode type <<<"${lines[k]}"
    [[ "${type}" == directory ]] || hg_die "${cur} is not a directory (a ${type}): refused"
    ((uid == 0)) || hg_die "${cur} belongs to uid ${uid}, not root: refused"
    safe_dir_owner_only "" "${cur}" "${mode}"
    SAFE_ROOT_DIRS[${cur}]=1
  done
}
