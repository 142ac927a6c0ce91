# shellcheck shell=bash
# shellcheck disable=SC2034 # CHANGED and the tables are read by the script that sources this file
# Transaction core of install: the per-part manifest, written ahead of every
# change so that a crash (kill -9, disk full) at any line leaves a state the
# next install or uninstall completes exactly; the in-run undo journal that
# rolls a failed part back; atomic writes; backups of what install replaces;
# admins' edits of installed files (sha256 in the manifest).
#
# Manifest records (TAB-separated, one per line, in
# /var/lib/hostguard/install-<part>.manifest, root 0600):
#   dir PATH                      a directory install created
#   mode PATH MODE UID:GID        a directory's mode and owner before install
#   file PATH HASHES              a file install placed where none was
#   backup PATH COPY HASHES       a file install replaced; the original is COPY
#   pending PATH COPY             COPY is being made; PATH is still the original
#   edited PATH COPY              an admin's edit of PATH kept at COPY
#   log PATH                      a log install created empty
#   include PATH / prop ... / propadd ...   edits of user files (nginx, properties)
#   reload pending                a change a service has not reloaded yet
# HASHES is a comma list of sha256 sums of what install wrote there ("-": not
# kept, e.g. the webhook); any of them means "not edited since".
# Sourced by install, never run; needs lib/safe-path.sh.

readonly TXN_STATE="${HG_STATE_PATH}"
readonly TXN_BACKUP_DIR="${TXN_STATE}/backup"
readonly TXN_EDITED_DIR="${TXN_STATE}/edited"
readonly TXN_WORK_NAME="${SAFE_TMP_PREFIX}work"

MANIFEST=()
MANIFEST_PART=""
# Undo journal of the running part (in-run rollback only; a crash is
# handled by the manifest): "f<TAB>path<TAB>copy or empty", "u<TAB>label<TAB>
# user file<TAB>copy", "d<TAB>dir created", "r<TAB>dir removed<TAB>mode",
# "m<TAB>path<TAB>mode<TAB>uid:gid", "w" (work dir made).
JOURNAL=()
TXN_ACTIVE=0
# Whether the running part changed anything a service reads.
CHANGED=0
# Root-only scratch space of the run, inside the state directory (never
# /tmp: it holds copies of user files, which may hold passwords), and the
# state directory's mtime before it was made.
WORK_DIR=""
WORK_PARENT_MTIME=""
MANIFEST_WRITTEN=0
# Whether the undo journal holds the manifest as the part found it.
MANIFEST_SAVED=0

# ---- manifest ---------------------------------------------------------------

manifest_path() {
  printf '%s/install-%s.manifest\n' "${HG_STATE_DIR}" "$1"
}

manifest_load() {
  local file
  MANIFEST_PART="$1"
  file="$(manifest_path "$1")"
  MANIFEST=()
  [[ -f "${file}" ]] && mapfile -t MANIFEST <"${file}"
  return 0
}

# Writes MANIFEST to disk now: temp file, then rename (no fork but mv).
# Everything that changes the host calls this before it acts.
manifest_write() {
  local file tmp
  file="$(manifest_path "${MANIFEST_PART}")"
  tmp="${file%/*}/${SAFE_TMP_PREFIX}${file##*/}"
  # The undo journal keeps the manifest as the part found it, once.
  if ((TXN_ACTIVE && !MANIFEST_SAVED)); then
    txn_save "${file}"
    MANIFEST_SAVED=1
  fi
  MANIFEST_WRITTEN=1
  ((!TXN_ACTIVE)) || JOURNAL+=("f"$'\t'"${tmp}"$'\t')
  if ((${#MANIFEST[@]} == 0)); then
    rm -f -- "${file}"
    return 0
  fi
  printf '%s\n' "${MANIFEST[@]}" >"${tmp}"
  mv -fT -- "${tmp}" "${file}"
}

# Index of the first record of KIND for PATH, or -1.
manifest_find() {
  local kind="$1" path="$2" i
  for ((i = 0; i < ${#MANIFEST[@]}; i++)); do
    if [[ "${MANIFEST[i]}" == "${kind}"$'\t'"${path}" || "${MANIFEST[i]}" == "${kind}"$'\t'"${path}"$'\t'* ]]; then
      printf '%d\n' "${i}"
      return 0
    fi
  done
  printf '%d\n' -1
}

manifest_has() {
  (($(manifest_find "$1" "$2") >= 0))
}

# Appends the record made of the arguments unless it is already there.
manifest_add() {
  local IFS=$'\t' record existing
  record="$*"
  for existing in "${MANIFEST[@]}"; do
    [[ "${existing}" == "${record}" ]] && return 0
  done
  MANIFEST+=("${record}")
  manifest_write
}

# Appends each RECORD (a whole record, TAB-separated) not already there, in
# one write: a step's records at once, not the whole manifest once per record.
manifest_add_all() {
  local record existing
  local -A have=()
  for existing in "${MANIFEST[@]}"; do
    have["${existing}"]=1
  done
  for record in "$@"; do
    [[ -z "${have["${record}"]+x}" ]] || continue
    have["${record}"]=1
    MANIFEST+=("${record}")
  done
  manifest_write
}

# Drops every record of the KINDs given, in one write.
manifest_drop_kinds() {
  local record kind
  local -a kept=()
  for record in "${MANIFEST[@]}"; do
    kind="${record%%$'\t'*}"
    [[ " $* " == *" ${kind} "* ]] || kept+=("${record}")
  done
  MANIFEST=("${kept[@]}")
  manifest_write
}

# Replaces record I with the arguments (or appends when I is -1).
manifest_put() {
  local i="$1" IFS=$'\t'
  shift
  if ((i < 0)); then
    MANIFEST+=("$*")
  else
    MANIFEST[i]="$*"
  fi
  manifest_write
}

manifest_drop() {
  local i="$1"
  MANIFEST=("${MANIFEST[@]:0:i}" "${MANIFEST[@]:i+1}")
  manifest_write
}

manifest_owns_file() {
  manifest_has file "$1" || manifest_has backup "$1" || manifest_has log "$1"
}

# ---- lock, state directory, work directory, recovery ---------------------------

readonly TXN_LOCK_WAIT=600
# The install lock: a root-only file (0600) in /run, root's directory (a
# tmpfs every host has before the first install; created, 0755, only in a
# test's --root that lacks it). flock(2) needs only a descriptor, and any
# user can open a directory or a world-readable file: a lock on the root
# directory (as before) let any local user hold it and fail every deploy.
readonly TXN_LOCK_DIR=/run
readonly TXN_LOCK_FILE="${TXN_LOCK_DIR}/hostguard-install.lock"
TXN_LOCK_FD=""

# One run at a time per root: a deploy runs the parts' installs in parallel
# (they share directories, the state directory and its work directory, and
# each run's recovery removes what a dead run left). The lock file is never
# removed (a waiting run would lock a file nobody else sees); a killed run's
# lock goes with its processes.
txn_lock() {
  local file="${HG_ROOT}${TXN_LOCK_FILE}" owner_mode
  if [[ -n "${HG_ROOT}" && ! -e "${HG_ROOT}${TXN_LOCK_DIR}" ]]; then
    mkdir -m 0755 -- "${HG_ROOT}${TXN_LOCK_DIR}"
  fi
  # Only root can have made anything in it: a link or a non-file there is
  # root's mistake, refused rather than followed.
  safe_root_dir "${TXN_LOCK_DIR}"
  if [[ -L "${file}" ]] || [[ -e "${file}" && ! -f "${file}" ]]; then
    hg_die "${TXN_LOCK_FILE} is not a regular file: refused (remove it)"
  fi
  exec {TXN_LOCK_FD}>>"${file}"
  owner_mode="$(stat -c '%u %a' -- "${file}")"
  if [[ "${owner_mode}" != "0 600" ]]; then
    chown 0:0 -- "${file}"
    chmod 0600 -- "${file}"
  fi
  flock -w "${TXN_LOCK_WAIT}" "${TXN_LOCK_FD}" \
    || hg_die "another install run kept ${TXN_LOCK_FILE} locked for ${TXN_LOCK_WAIT} s"
}

# Removes what a killed run left: the work directory and a half-built or
# half-removed state directory staged beside its topmost new ancestor.
txn_recover() {
  local cur="" comp
  local -a parts
  IFS=/ read -r -a parts <<<"${TXN_STATE#/}"
  for comp in "${parts[@]}"; do
    if [[ -d "${HG_ROOT}${cur}" && ! -L "${HG_ROOT}${cur}" && -e "${HG_ROOT}${cur}/${SAFE_TMP_PREFIX}${comp}" ]]; then
      safe_root_dir "${cur:-/}"
      rm -rf -- "${HG_ROOT}${cur}/${SAFE_TMP_PREFIX:?}${comp}"
    fi
    cur+="/${comp}"
  done
  if [[ -d "${HG_STATE_DIR}" && ! -L "${HG_STATE_DIR}" ]]; then
    rm -rf -- "${HG_STATE_DIR}/${TXN_WORK_NAME:?}"
    rm -f -- "${HG_STATE_DIR}/${SAFE_TMP_PREFIX}"install-*.manifest
  fi
  # The webhook's temp file (set-webhook killed between write and rename).
  if [[ -d "${HG_CONF_DIR}" && ! -L "${HG_CONF_DIR}" ]]; then
    safe_root_dir "${HG_CONF_PATH}"
    rm -f -- "${HG_CONF_DIR}/${SAFE_TMP_PREFIX}"*
  fi
  return 0
}

# Makes sure the state directory (which holds the manifests) exists, then
# the run's work directory in it. A missing state directory is built under
# a temp name beside its topmost missing ancestor, with the part's manifest
# recording it, then renamed into place: a crash leaves either nothing
# (txn_recover removes the stage) or the directory and its record.
txn_open() {
  local cur="" comp top="" stage="" path manifest
  local -a parts created=()
  safe_root_dir "${TXN_STATE}"
  manifest="$(manifest_path "${MANIFEST_PART}")"
  if [[ ! -d "${HG_STATE_DIR}" ]]; then
    IFS=/ read -r -a parts <<<"${TXN_STATE#/}"
    for comp in "${parts[@]}"; do
      if [[ -z "${top}" && -d "${HG_ROOT}${cur}/${comp}" ]]; then
        cur+="/${comp}"
        continue
      fi
      if [[ -z "${top}" ]]; then
        top="${cur}/${comp}"
        stage="${HG_ROOT}${cur}/${SAFE_TMP_PREFIX}${comp}"
        path="${stage}"
      else
        path+="/${comp}"
      fi
      cur+="/${comp}"
      mkdir -m 0755 -- "${path}"
      created+=("${cur}")
      MANIFEST+=("dir"$'\t'"${cur}")
    done
    chmod 0700 -- "${path}"
    printf '%s\n' "${MANIFEST[@]}" >"${path}/${manifest##*/}"
    mv -T -- "${stage}" "${HG_ROOT}${top}"
    for path in "${created[@]}"; do
      JOURNAL+=("d"$'\t'"${HG_ROOT}${path}")
    done
    # Undone before the directories: the manifest did not exist.
    JOURNAL+=("f"$'\t'"${manifest}"$'\t')
    txn_open_work
    MANIFEST_SAVED=1
    return 0
  fi
  txn_open_work
  MANIFEST_SAVED=0
}

txn_open_work() {
  MANIFEST_WRITTEN=0
  WORK_PARENT_MTIME="$(stat -c %.9Y -- "${HG_STATE_DIR}")"
  WORK_DIR="${HG_STATE_DIR}/${TXN_WORK_NAME}"
  rm -rf -- "${WORK_DIR}"
  mkdir -m 0700 -- "${WORK_DIR}"
  JOURNAL+=("w")
}

# Removes the work directory; a run that recorded nothing leaves the state
# directory's mtime as it found it (a run that changes nothing leaves no trace).
txn_close_work() {
  [[ -n "${WORK_DIR}" ]] || return 0
  rm -rf -- "${WORK_DIR}"
  WORK_DIR=""
  if ((!MANIFEST_WRITTEN)) && [[ -d "${HG_STATE_DIR}" ]]; then
    touch -m -d "@${WORK_PARENT_MTIME}" -- "${HG_STATE_DIR}"
  fi
}

# ---- undo journal -------------------------------------------------------------

txn_begin() {
  JOURNAL=()
  TXN_ACTIVE=1
  CHANGED=0
}

txn_commit() {
  JOURNAL=()
  TXN_ACTIVE=0
}

# Call before PATH (absolute, in the root, in a root's directory) is created,
# replaced or removed.
txn_save() {
  local path="$1" copy=""
  if [[ -e "${path}" || -L "${path}" ]]; then
    copy="$(mktemp "${WORK_DIR}/saved.XXXXXX")"
    cp -a -- "${path}" "${copy}"
  fi
  JOURNAL+=("f"$'\t'"${path}"$'\t'"${copy}")
}

# Call before the user file REAL (host path, as resolved) is replaced; COPY
# (in the work directory) holds its content as read. LABEL is the setting
# that named the file, for the rollback's write (lib/web.sh).
txn_record_user() {
  local label="$1" real="$2" copy="$3"
  JOURNAL+=("u"$'\t'"${label}"$'\t'"${real}"$'\t'"${copy}")
}

# Call before the mode or owner of host directory DIR changes.
txn_record_mode() {
  local dir="${HG_ROOT}$1"
  JOURNAL+=("m"$'\t'"${dir}"$'\t'"$(stat -c %a -- "${dir}")"$'\t'"$(stat -c %u:%g -- "${dir}")")
}

txn_rollback() {
  local i kind path extra owner
  TXN_ACTIVE=0
  for ((i = ${#JOURNAL[@]} - 1; i >= 0; i--)); do
    IFS=$'\t' read -r kind path extra owner <<<"${JOURNAL[i]}"
    case "${kind}" in
      f)
        if [[ -n "${extra}" ]]; then
          rm -f -- "${path}" || true
          cp -a -- "${extra}" "${path}" || true
        else
          rm -f -- "${path}" || true
        fi
        ;;
      u)
        # A fresh bound: the run's own may be what was spent.
        web_deadline
        printf '%s\t%s\t%s\n' "${path}" "${extra}" "${owner}" | web_write || true
        ;;
      d) rmdir -- "${path}" 2>/dev/null || true ;;
      r) mkdir -m "${extra}" -- "${path}" 2>/dev/null || true ;;
      m)
        chmod "${extra}" -- "${path}" || true
        chown "${owner}" -- "${path}" || true
        ;;
      w)
        rm -rf -- "${WORK_DIR}"
        WORK_DIR=""
        ;;
    esac
  done
  JOURNAL=()
}

# Something a service reads is about to change: recorded first, so that a
# run killed before the reload reloads next time (install_part drops it).
txn_changed() {
  CHANGED=1
  manifest_add reload pending
}

# A service must reload at the end of this run, with no record: a pending
# reload found in the manifest, or an uninstall (whose manifest empties).
txn_reload_needed() {
  CHANGED=1
}

# ---- files ----------------------------------------------------------------------

mode_owner() {
  stat -c '%a:%u:%g' -- "$1"
}

wanted_mode_owner() {
  printf '%o:0:0\n' "$((8#$1))"
}

file_hash() {
  local sum
  sum="$(sha256sum <"$1")"
  printf '%s\n' "${sum%% *}"
}

# Writes SRC's content to DEST (absolute, in the root, in a root's
# directory): fixed temp name beside DEST, owner and mode set, then renamed,
# so readers see the old file or the new one.
write_atomic() {
  local src="$1" dest="$2" mode="$3" owner="$4" tmp
  txn_save "${dest}"
  tmp="${dest%/*}/${SAFE_TMP_PREFIX}${dest##*/}"
  # A failed write (disk full) leaves no temp file: the undo removes it.
  JOURNAL+=("f"$'\t'"${tmp}"$'\t')
  rm -f -- "${tmp}"
  cat -- "${src}" >"${tmp}"
  chown "${owner}" -- "${tmp}"
  chmod "${mode}" -- "${tmp}"
  mv -fT -- "${tmp}" "${dest}"
}

# Creates host directory DIR under the root (parents 0755), recording every
# directory it creates before creating it. With MODE (hostguard's own
# directories only) it also sets mode and root ownership on DIR, remembering
# an old mode for uninstall.
ensure_dir() {
  local dir="$1" mode="${2:-}" path="" part old
  local -a parts
  safe_root_dir "${dir}"
  IFS='/' read -r -a parts <<<"${dir#/}"
  for part in "${parts[@]}"; do
    path+="/${part}"
    [[ -d "${HG_ROOT}${path}" ]] && continue
    manifest_add dir "${path}"
    JOURNAL+=("d"$'\t'"${HG_ROOT}${path}")
    mkdir -m 0755 -- "${HG_ROOT}${path}"
    chown 0:0 -- "${HG_ROOT}${path}"
  done
  [[ -n "${mode}" ]] || return 0
  old="$(mode_owner "${HG_ROOT}${dir}")"
  if [[ "${old}" != "$(wanted_mode_owner "${mode}")" ]]; then
    if ! manifest_has dir "${dir}" && ! manifest_has mode "${dir}"; then
      manifest_add mode "${dir}" "${old%%:*}" "${old#*:}"
    fi
    JOURNAL+=("m"$'\t'"${HG_ROOT}${dir}"$'\t'"${old%%:*}"$'\t'"${old#*:}")
    chown 0:0 -- "${HG_ROOT}${dir}"
    chmod "${mode}" -- "${HG_ROOT}${dir}"
  fi
}

# Host path of the copy kept for host path DEST in directory DIR (TAG tells
# copies of one file apart).
txn_copy_path() {
  local dir="$1" dest="$2" tag="${3:-}" sum
  sum="$(printf '%s' "${dest}" | sha256sum)"
  printf '%s/%s%s\n' "${dir}" "${sum%% *}" "${tag:+.${tag}}"
}

# Copies host path FROM (file, dangling symlink included) to host path TO
# in a root's directory: temp name, then rename.
txn_copy() {
  local from="${HG_ROOT}$1" to="${HG_ROOT}$2" tmp
  tmp="${to%/*}/${SAFE_TMP_PREFIX}${to##*/}"
  JOURNAL+=("f"$'\t'"${tmp}"$'\t')
  rm -f -- "${tmp}"
  cp -a -- "${from}" "${tmp}"
  mv -fT -- "${tmp}" "${to}"
}

# True when host path PATH is a regular file whose sha256 is in HASHES (or
# HASHES is "-" or empty: not kept).
txn_unedited() {
  local path="${HG_ROOT}$1" hashes="${2:--}" hash
  [[ "${hashes}" == - ]] && return 0
  [[ -f "${path}" && ! -L "${path}" ]] || return 1
  hash="$(file_hash "${path}")"
  [[ ",${hashes}," == *",${hash},"* ]]
}

# True when host paths A and B hold the same: equal regular files, or
# symlinks with the same target.
txn_same() {
  local a="${HG_ROOT}$1" b="${HG_ROOT}$2"
  if [[ -L "${a}" && -L "${b}" ]]; then
    [[ "$(readlink -- "${a}")" == "$(readlink -- "${b}")" ]]
  elif [[ -f "${a}" && ! -L "${a}" && -f "${b}" && ! -L "${b}" ]]; then
    cmp -s -- "${a}" "${b}"
  else
    return 1
  fi
}

# Places CONTENT (a prepared file) at host path DEST with MODE, root-owned.
# Unchanged content, mode and owner: nothing is written (mtimes stay). What
# was at DEST is kept first: a user's own file (or symlink, dangling or not)
# as a backup that uninstall puts back, an admin's edit of the installed file
# as a copy it says about. HASH "-" keeps no hash (a secret's file).
install_file() {
  local content="$1" dest="$2" mode="$3" hash_mode="${4:-}" path="${HG_ROOT}$2"
  local want i kind hashes copy
  ensure_dir "${dest%/*}"
  [[ ! -d "${path}" || -L "${path}" ]] || hg_die "${dest} is a directory: refused"
  if [[ -f "${path}" && ! -L "${path}" ]] && cmp -s -- "${content}" "${path}" \
    && [[ "$(mode_owner "${path}")" == "$(wanted_mode_owner "${mode}")" ]]; then
    return 0
  fi
  want=-
  [[ "${hash_mode}" == - ]] || want="$(file_hash "${content}")"
  kind="file"
  i="$(manifest_find file "${dest}")"
  if ((i < 0)); then
    kind=backup
    i="$(manifest_find backup "${dest}")"
  fi
  if ((i >= 0)); then
    if [[ "${kind}" == backup ]]; then
      IFS=$'\t' read -r _ _ copy hashes <<<"${MANIFEST[i]}"
    else
      IFS=$'\t' read -r _ _ hashes <<<"${MANIFEST[i]}"
    fi
    # Neither what install wrote nor (a run killed before its write) the
    # original it kept: someone edited it.
    if [[ -e "${path}" || -L "${path}" ]] && ! txn_unedited "${dest}" "${hashes}" \
      && ! { [[ "${kind}" == backup ]] && txn_same "${dest}" "${copy}"; }; then
      txn_keep_edited "${dest}"
    fi
    # The new hash first, the previous one kept: a run killed between this
    # record and the write leaves a file that is still "not edited".
    if [[ "${want}" != - && ",${hashes}," != *",${want},"* ]]; then
      hashes="${want}${hashes:+,${hashes%%,*}}"
    fi
    if [[ "${kind}" == backup ]]; then
      manifest_put "${i}" backup "${dest}" "${copy}" "${hashes}"
    else
      manifest_put "${i}" file "${dest}" "${hashes}"
    fi
  elif [[ -e "${path}" || -L "${path}" ]]; then
    txn_backup "${dest}" "${want}"
  else
    manifest_add file "${dest}" "${want}"
  fi
  txn_changed
  write_atomic "${content}" "${path}" "${mode}" 0:0
  hg_log INFO "installed ${dest}"
}

# backup/ and edited/ in the state directory are shared by the parts: in no
# manifest (the part that made one may be uninstalled before another that
# uses it); every part's uninstall removes them once empty.
txn_state_subdir() {
  local dir="${HG_ROOT}$1"
  [[ -d "${dir}" ]] && return 0
  JOURNAL+=("d"$'\t'"${dir}")
  mkdir -m 0700 -- "${dir}"
}

# A user's own file at host path DEST, about to be replaced by content with
# hash WANT: recorded as pending, copied, then recorded as the backup.
txn_backup() {
  local dest="$1" want="$2" copy
  copy="$(txn_copy_path "${TXN_BACKUP_DIR}" "${dest}")"
  txn_state_subdir "${TXN_BACKUP_DIR}"
  manifest_add pending "${dest}" "${copy}"
  txn_save "${HG_ROOT}${copy}"
  txn_copy "${dest}" "${copy}"
  manifest_put "$(manifest_find pending "${dest}")" backup "${dest}" "${copy}" "${want}"
}

# The installed file at host path DEST was changed by someone since install:
# the changed version is kept (and said so) before install writes its own.
txn_keep_edited() {
  local dest="$1" copy
  copy="$(txn_copy_path "${TXN_EDITED_DIR}" "${dest}" "$(date -u +%Y%m%dT%H%M%SZ)")"
  txn_state_subdir "${TXN_EDITED_DIR}"
  manifest_add edited "${dest}" "${copy}"
  txn_save "${HG_ROOT}${copy}"
  txn_copy "${dest}" "${copy}"
  hg_log WARN "${dest} was edited since install: your version is kept at ${copy}"
}

# A pending backup (a crash between recording and copying): the original is
# still at its place, so the half-made copy goes.
txn_drop_pending() {
  local i kind path copy
  for ((i = ${#MANIFEST[@]} - 1; i >= 0; i--)); do
    IFS=$'\t' read -r kind path copy _ <<<"${MANIFEST[i]}"
    [[ "${kind}" == pending ]] || continue
    rm -f -- "${HG_ROOT}${copy}"
    manifest_drop "${i}"
  done
}

# ---- uninstall of files -----------------------------------------------------------

# Removes host path PATH (and a temp file a killed run left beside it).
remove_file() {
  local path="${HG_ROOT}$1"
  safe_root_dir "${1%/*}"
  rm -f -- "${path%/*}/${SAFE_TMP_PREFIX}${path##*/}"
  [[ -e "${path}" || -L "${path}" ]] || return 0
  txn_save "${path}"
  rm -f -- "${path}"
  CHANGED=1
  hg_log INFO "removed $1"
}

# A file install placed: removed unless someone edited it since.
uninstall_file() {
  local dest="$1" hashes="$2" path="${HG_ROOT}$1"
  if [[ -e "${path}" || -L "${path}" ]] && ! txn_unedited "${dest}" "${hashes}"; then
    hg_log WARN "${dest} was edited since install: left in place"
    return 0
  fi
  remove_file "${dest}"
  remove_bytecode "${dest}"
}

# The bytecode Python wrote for an installed module DEST (*.py) in the
# __pycache__ beside it: derived from the file, so it goes with it; the
# folder goes when empty.
remove_bytecode() {
  local dest="$1" dir stem pyc
  [[ "${dest}" == *.py ]] || return 0
  dir="${dest%/*}/__pycache__"
  stem="${dest##*/}"
  stem="${stem%.py}"
  [[ -d "${HG_ROOT}${dir}" && ! -L "${HG_ROOT}${dir}" ]] || return 0
  safe_root_dir "${dir}"
  for pyc in "${HG_ROOT}${dir}/${stem}".*.pyc; do
    [[ -f "${pyc}" && ! -L "${pyc}" ]] || continue
    rm -f -- "${pyc}"
  done
  rmdir -- "${HG_ROOT}${dir}" 2>/dev/null || true
}

# A user's file install replaced: put back unless the installed one was
# edited since (then both stay, and say where).
restore_backup() {
  local dest="$1" backup="$2" hashes="$3" path="${HG_ROOT}$1"
  if [[ ! -e "${HG_ROOT}${backup}" && ! -L "${HG_ROOT}${backup}" ]]; then
    hg_log WARN "backup of ${dest} is missing: left as it is"
    return 0
  fi
  if [[ -e "${path}" || -L "${path}" ]] && ! txn_unedited "${dest}" "${hashes}" \
    && ! txn_same "${dest}" "${backup}"; then
    hg_log WARN "${dest} was edited since install: left in place; the original is kept at ${backup}"
    return 0
  fi
  safe_root_dir "${dest%/*}"
  rm -f -- "${path%/*}/${SAFE_TMP_PREFIX}${path##*/}"
  txn_save "${path}"
  txn_save "${HG_ROOT}${backup}"
  mv -fT -- "${HG_ROOT}${backup}" "${path}"
  CHANGED=1
  hg_log INFO "restored ${dest}"
}

remove_dir_if_empty() {
  local path="${HG_ROOT}$1" mode
  [[ -d "${path}" && ! -L "${path}" ]] || return 0
  if [[ -n "$(ls -A -- "${path}")" ]]; then
    hg_log INFO "kept $1: not empty"
    return 0
  fi
  mode="$(stat -c '%a' -- "${path}")"
  rmdir -- "${path}"
  JOURNAL+=("r"$'\t'"${path}"$'\t'"${mode}")
}

# The end of a part's uninstall, once only dir records are left: the
# directories go (deepest first, when empty), then the manifest. When the
# state directory would be left empty, the manifest and the state
# directories this part created go in one rename (then a removal that
# txn_recover finishes after a crash).
txn_close_uninstall() {
  local i kind path top="" file
  file="$(manifest_path "${MANIFEST_PART}")"
  for ((i = ${#MANIFEST[@]} - 1; i >= 0; i--)); do
    IFS=$'\t' read -r kind path _ <<<"${MANIFEST[i]}"
    [[ "${kind}" == dir ]] || continue
    [[ "${TXN_STATE}/" == "${path}/"* ]] && continue
    remove_dir_if_empty "${path}"
    manifest_drop "${i}"
  done
  txn_close_work
  rmdir -- "${HG_ROOT}${TXN_BACKUP_DIR}" "${HG_ROOT}${TXN_EDITED_DIR}" 2>/dev/null || true
  # Topmost state directory of this part whose whole content is the chain
  # down to the state directory and this manifest.
  if [[ "$(ls -A -- "${HG_STATE_DIR}")" == "${file##*/}" ]]; then
    top="${TXN_STATE}"
    for ((i = 0; i < ${#MANIFEST[@]}; i++)); do
      IFS=$'\t' read -r kind path _ <<<"${MANIFEST[i]}"
      [[ "${kind}" == dir && "${TXN_STATE}/" == "${path}/"* ]] || continue
      txn_chain_only "${path}" && { top="${path}"; break; }
    done
    if manifest_has dir "${top}"; then
      mv -T -- "${HG_ROOT}${top}" "${HG_ROOT}${top%/*}/${SAFE_TMP_PREFIX}${top##*/}"
      rm -rf -- "${HG_ROOT}${top%/*}/${SAFE_TMP_PREFIX:?}${top##*/}"
      MANIFEST=()
      return 0
    fi
  fi
  rm -f -- "${file}"
  MANIFEST=()
}

# True when every directory from host path TOP down to the state directory
# holds nothing but the next one.
txn_chain_only() {
  local dir="$1" next rest
  while [[ "${dir}" != "${TXN_STATE}" ]]; do
    rest="${TXN_STATE#"${dir}"/}"
    next="${rest%%/*}"
    [[ "$(ls -A -- "${HG_ROOT}${dir}")" == "${next}" ]] || return 1
    dir+="/${next}"
  done
  return 0
}
