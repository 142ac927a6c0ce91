# shellcheck shell=bash
# The Spring properties edit of `install --part web`: sets
# spring.web.resources.add-mappings=false in APP_PROPERTIES. An existing key's
# value is replaced in place (its own separator kept), else the line is
# appended; uninstall gives back the exact original bytes. The file is read
# and written with the rights of whoever controls it (lib/safe-path.sh); the
# do (properties_install) and the undo (properties_restore) sit side by side.
# Sourced by install, never run; needs lib/common.sh, lib/safe-path.sh and lib/txn.sh.

readonly PROP_KEY=spring.web.resources.add-mappings
readonly PROP_VALUE=false

LINES=()
EOL=1

# Reads FILE into LINES; EOL=0 when its last line has no newline.
read_lines() {
  local last
  mapfile -t LINES <"$1"
  EOL=1
  if [[ -s "$1" ]]; then
    last="$(tail -c1 -- "$1")"
    [[ -z "${last}" ]] || EOL=0
  fi
}

write_lines() {
  local out="$1" eol="$2"
  shift 2
  : >"${out}"
  (($# > 0)) || return 0
  printf '%s\n' "$@" >"${out}"
  if [[ "${eol}" == 0 ]]; then
    truncate -s -1 -- "${out}"
  fi
}

# Prints 1 when LINE ends in an odd number of backslashes (a properties
# continuation), else 0.
line_continues() {
  local line="$1" tail
  tail="${line##*[!\\]}"
  [[ "${line}" =~ ^\\+$ ]] && tail="${line}"
  printf '%d\n' "$((${#tail} % 2))"
}

# Reads the user file (already resolved by safe_resolve_file) into a work
# copy and LINES; prints the copy's path.
properties_read() {
  local copy
  copy="$(mktemp "${WORK_DIR}/properties.XXXXXX")"
  safe_read "${copy}"
  printf '%s\n' "${copy}"
}

# Writes LINE... (EOL 0: no final newline) over the user file, keeping the
# work COPY of its old content for the undo journal.
properties_write() {
  local label="$1" copy="$2" eol="$3" content
  shift 3
  content="$(mktemp "${WORK_DIR}/properties.XXXXXX")"
  write_lines "${content}" "${eol}" "$@"
  txn_record_user "${label}" "${copy}"
  safe_replace "${content}"
}

# Dies when host path PATH names a YAML file: a key=value line would make
# the YAML unparseable (an application.yml stops the application), and
# editing YAML safely (merged into an existing spring: tree, comments and
# every other byte kept, an exact undo) needs a YAML parser a host may not
# have. Refused before anything is written.
properties_refuse_yaml() {
  local path="$1" name
  name="${1##*/}"
  case "${name,,}" in
    *.yml | *.yaml)
      hg_die "APP_PROPERTIES: ${path} is a YAML file: refused (only the .properties format is edited; set spring: web: resources: add-mappings: false in it by hand, or name an application.properties)"
      ;;
  esac
}

# Checks APP_PROPERTIES before anything is written: safe to edit, and a
# .properties file (the name given, and the file a symlink leads to).
properties_preflight() {
  [[ -n "${HG_APP_PROPERTIES}" ]] || return 0
  properties_refuse_yaml "${HG_APP_PROPERTIES}"
  safe_resolve_file APP_PROPERTIES "${HG_APP_PROPERTIES}"
  properties_refuse_yaml "${SAFE_REAL}"
}

properties_install() {
  local conf="${HG_APP_PROPERTIES}" real copy i line key_re prefix sep value new continued=0 found=0 old_eol
  local -a new_lines=() records=()
  [[ -n "${conf}" ]] || return 0
  properties_preflight
  real="${SAFE_REAL}"
  copy="$(properties_read)"
  read_lines "${copy}"
  old_eol="${EOL}"
  key_re="^([[:space:]]*${PROP_KEY//./\\.})([[:space:]]*[=:][[:space:]]*|[[:space:]]+|$)(.*)$"
  for ((i = 0; i < ${#LINES[@]}; i++)); do
    line="${LINES[i]}"
    new_lines+=("${line}")
    if ((continued)); then
      continued="$(line_continues "${line}")"
      continue
    fi
    [[ "${line}" =~ ^[[:space:]]*[#!] ]] && continue
    continued="$(line_continues "${line}")"
    [[ "${line}" =~ ${key_re} ]] || continue
    found=1
    prefix="${BASH_REMATCH[1]}"
    sep="${BASH_REMATCH[2]}"
    value="$(trim "${BASH_REMATCH[3]}")"
    [[ "${value}" == "${PROP_VALUE}" ]] && continue
    ((!continued)) || hg_die "${real}: ${PROP_KEY} has a multi-line value; edit it by hand"
    [[ -n "${sep}" ]] || sep="="
    new="${prefix}${sep}${PROP_VALUE}"
    new_lines[${#new_lines[@]} - 1]="${new}"
    records+=("prop"$'\t'"${real}"$'\t'"$(b64 "${line}")"$'\t'"$(b64 "${new}")")
  done
  if ((!found)); then
    new="${PROP_KEY}=${PROP_VALUE}"
    new_lines+=("${new}")
    EOL=1
    records+=("propadd"$'\t'"${real}"$'\t'"$(b64 "${new}")"$'\t'"${old_eol}")
  fi
  ((${#records[@]} > 0)) || return 0
  for line in "${records[@]}"; do
    manifest_add "${line}"
  done
  properties_write APP_PROPERTIES "${copy}" "${EOL}" "${new_lines[@]}"
  hg_log INFO "set ${PROP_KEY}=${PROP_VALUE} in ${real}; restart the application to apply it"
}

# Undoes one properties record: a replaced line gets its old text back, an
# appended line goes (and with it the newline install had to add).
properties_restore() {
  local kind="$1" real="$2" first="$3" second="$4"
  local old new copy i at=-1
  if [[ ! -e "${HG_ROOT}${real}" ]]; then
    hg_log WARN "${real} is gone: ${PROP_KEY} not restored"
    return 0
  fi
  safe_resolve_file APP_PROPERTIES "${real}"
  copy="$(properties_read)"
  read_lines "${copy}"
  if [[ "${kind}" == prop ]]; then
    old="$(unb64 "${first}")"
    new="$(unb64 "${second}")"
    for ((i = 0; i < ${#LINES[@]}; i++)); do
      [[ "${LINES[i]}" == "${new}" ]] && { at=${i}; break; }
    done
    if ((at < 0)); then
      hg_log WARN "${real}: the line install set was changed since: left as it is"
      return 0
    fi
    LINES[at]="${old}"
  else
    new="$(unb64 "${first}")"
    for ((i = ${#LINES[@]} - 1; i >= 0; i--)); do
      [[ "${LINES[i]}" == "${new}" ]] && { at=${i}; break; }
    done
    if ((at < 0)); then
      hg_log WARN "${real}: the line install appended is gone: nothing to remove"
      return 0
    fi
    ((at != ${#LINES[@]} - 1)) || EOL="${second}"
    LINES=("${LINES[@]:0:at}" "${LINES[@]:at+1}")
  fi
  properties_write APP_PROPERTIES "${copy}" "${EOL}" "${LINES[@]}"
  hg_log INFO "restored ${PROP_KEY} in ${real}"
}

b64() {
  printf '%s' "$1" | base64 -w0
}

unb64() {
  printf '%s' "$1" | base64 -d
}
