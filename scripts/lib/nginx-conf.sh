# shellcheck shell=bash
# shellcheck disable=SC2034 # NGX_* results are read by the script that sources this file
# The nginx edit of `install --part web`: the deny include goes at the top of
# every `server` block of the http context nginx loads from NGINX_SERVER_CONF
# and of every `location` block inside one: the file's own blocks and those
# of every file it includes where a server block may stand (its top level,
# or http {} of a main file), followed as nginx follows them (a relative
# path against the conf prefix, globs). Blocks are found, and the include
# added and removed, by the host agent's hostguard/nginxconf.py (nginx's own
# lexer in one linear pass, splices by byte offset, the null location);
# this file walks the files and keeps the transaction. Each added line carries a token
# (a hash of the file before the edit), kept in the manifest: uninstall
# removes those lines and no other, not even an identical line an admin
# wrote. The do (ngx_install_include) and the undo (ngx_uninstall_include)
# sit side by side. Sourced by install, never run.

readonly NGX_SNIPPET=/etc/nginx/snippets/hostguard-deny.conf
# How many files one NGINX_SERVER_CONF may pull in through includes.
readonly NGX_MAX_FILES=1000
# The host agent's package: beside lib/ in a bundle and on the host.
NGX_AGENT_DIR="$(cd "${BASH_SOURCE[0]%/*}/.." && pwd -P)"
readonly NGX_AGENT_DIR

# Runs hostguard/nginxconf.py (stdin to stdout) with ARGS; its records go
# to stderr, one per line, TAB-separated: C ctx, S servers, A added, T token,
# R removed, I line ctx path, W line text, E line N: what.
ngx_agent() {
  "${HOSTGUARD_PYTHON:-/usr/bin/python3}" -I -B -c \
    'import sys; sys.path.insert(0, sys.argv[1]); from hostguard.nginxconf import main; sys.exit(main(sys.argv[2:]))' \
    "${NGX_AGENT_DIR}" "$@"
}

# Filled by ngx_scan from a file's records.
NGX_CTX=""
NGX_SERVERS=0       # how many server blocks of the http context
NGX_ADDED=0         # lines the last add put in
NGX_TOKEN=""        # and the token it marked them with
NGX_REMOVED=0       # lines the last remove took out
NGX_INCLUDES=()     # "line<TAB>context<TAB>path" of includes to follow
NGX_WARNINGS=()     # "line<TAB>text": what the rule cannot see (README)
NGX_ERROR=""

ngx_parse_records() {
  local records="$1" kind a b c
  NGX_CTX=""
  NGX_SERVERS=0
  NGX_ADDED=0
  NGX_REMOVED=0
  NGX_INCLUDES=()
  NGX_WARNINGS=()
  NGX_ERROR="could not be read"
  while IFS=$'\t' read -r kind a b c; do
    case "${kind}" in
      C) NGX_CTX="${a}" ;;
      S) NGX_SERVERS="${a}" ;;
      A) NGX_ADDED="${a}" ;;
      T) NGX_TOKEN="${a}" ;;
      R) NGX_REMOVED="${a}" ;;
      I) NGX_INCLUDES+=("${a}"$'\t'"${b}"$'\t'"${c}") ;;
      W) NGX_WARNINGS+=("${a}"$'\t'"${b}${c:+$'\t'${c}}") ;;
      E) NGX_ERROR="${a}${b:+$'\t'${b}}" ;;
    esac
  done <<<"${records}"
}

# Scans the config text on stdin as nginx reads it, as a file of context CTX
# (auto, http, main). Returns 1 with NGX_ERROR ("line N: what") on text
# nginx would refuse. Linear in the size of the text.
ngx_scan() {
  local ctx="${1:-auto}" records status=0
  records="$(ngx_agent scan "${ctx}" 2>&1 >/dev/null)" || status=1
  ngx_parse_records "${records}"
  return "${status}"
}

# File SRC with the include added to every server block of the http context
# (and every location in one) of a file of context CTX, as host path REAL
# (its token), into file OUT. Returns 1 (NGX_ERROR set) on text nginx would
# refuse.
ngx_add_include() {
  local src="$1" out="$2" real="$3" ctx="${4:-auto}" records status=0
  records="$(ngx_agent add "${ctx}" "${real}" <"${src}" 2>&1 >"${out}")" || status=1
  ngx_parse_records "${records}"
  return "${status}"
}

# File SRC without the lines marked with TOKEN (an empty TOKEN: the lines
# of versions that wrote no token), into file OUT; NGX_REMOVED is how many.
ngx_remove_include() {
  local src="$1" out="$2" token="$3" records status=0
  records="$(ngx_agent remove "${token}" <"${src}" 2>&1 >"${out}")" || status=1
  ngx_parse_records "${records}"
  return "${status}"
}

# ---- the files nginx loads from NGINX_SERVER_CONF (needs lib/safe-path.sh) ----

# The directory relative include paths are resolved against: nginx's conf
# prefix, the directory of its --conf-path (Debian: /etc/nginx).
ngx_conf_prefix() {
  local conf=""
  if command -v nginx >/dev/null 2>&1; then
    conf="$(nginx -V 2>&1 | tr ' ' '\n' | sed -n 's/^--conf-path=//p' | head -n1)" || conf=""
  fi
  [[ "${conf}" == /*/* ]] || conf=/etc/nginx/nginx.conf
  printf '%s\n' "${conf%/*}"
}

# Sets NGX_TARGETS to the host paths `include PATTERN` loads (LABEL names
# the include in errors), as nginx resolves it: relative to the conf prefix;
# a glob expanded, sorted, in a directory only root can write to (else a
# user could choose what root reads as nginx config).
NGX_TARGETS=()
NGX_PREFIX=""
ngx_include_targets() {
  local label="$1" pattern="$2" dir base msg restore
  NGX_TARGETS=()
  if [[ "${pattern}" != /* ]]; then
    [[ -n "${NGX_PREFIX}" ]] || NGX_PREFIX="$(ngx_conf_prefix)"
    pattern="${NGX_PREFIX}/${pattern}"
  fi
  if [[ "${pattern}" != *[*?[]* ]]; then
    NGX_TARGETS=("${pattern}")
    return 0
  fi
  dir="${pattern%/*}"
  base="${pattern##*/}"
  [[ "${dir}" != *[*?[]* ]] \
    || hg_die "${label}: ${pattern}: a wildcard in a directory name is not followed: refused (name the directories)"
  msg="$(safe_root_dir "${dir:-/}" 2>&1)" \
    || hg_die "${label}: ${pattern}: the files a wildcard picks must be in a directory only root can write to: ${msg#hostguard: }"
  restore="$(shopt -p nullglob dotglob extglob nocaseglob failglob globstar || true)"
  shopt -s nullglob
  shopt -u dotglob extglob nocaseglob failglob globstar
  local IFS=
  # shellcheck disable=SC2206 # the pattern is a glob on purpose
  NGX_TARGETS=("${HG_ROOT}${dir}"/${base})
  eval "${restore}"
  NGX_TARGETS=("${NGX_TARGETS[@]#"${HG_ROOT}"}")
}

# Walks NGINX_SERVER_CONF and every file it includes where a server block
# may stand. Fills NGX_FILES (host paths, symlinks resolved), NGX_FILE_CTX
# and NGX_FILE_LABEL; NGX_FILE_COPY holds a root-only copy of each when a
# work directory is given. Dies on a file nginx would refuse or one unsafe to
# read, naming the include that pulls it in; also when no file has a server
# block of the http context.
NGX_FILES=()
NGX_FILE_CTX=()
NGX_FILE_LABEL=()
NGX_FILE_COPY=()
ngx_walk() {
  local conf="$1" work="${2:-}" path ctx label copy entry line ictx ipath target records
  local -i servers=0 k=0 status=0
  local -a todo=("${conf}") todo_ctx=(auto) todo_label=(NGINX_SERVER_CONF)
  local -A seen=()
  NGX_FILES=()
  NGX_FILE_CTX=()
  NGX_FILE_LABEL=()
  NGX_FILE_COPY=()
  while ((k < ${#todo[@]})); do
    path="${todo[k]}" ctx="${todo_ctx[k]}" label="${todo_label[k]}"
    k+=1
    safe_resolve_file "${label}" "${path}"
    [[ ! -v "seen[${SAFE_REAL}]" ]] || continue
    seen[${SAFE_REAL}]=1
    ((${#NGX_FILES[@]} < NGX_MAX_FILES)) \
      || hg_die "NGINX_SERVER_CONF: ${conf}: includes more than ${NGX_MAX_FILES} files: refused"
    copy=""
    if [[ -n "${work}" ]]; then
      copy="$(mktemp "${work}/nginx.XXXXXX")"
      safe_read "${copy}"
      ngx_scan "${ctx}" <"${copy}" \
        || hg_die "${label}: ${SAFE_REAL}: ${NGX_ERROR}: the deny include cannot be placed"
    else
      # Bounded like safe_read: the size was checked when the path was
      # resolved, a file grown since then is cut here and refused by the
      # install's own safe_read.
      records="$(safe_as_owner cat -- "${HG_ROOT}${SAFE_REAL}" </dev/null 2>/dev/null \
        | head -c "$((SAFE_READ_MAX + 1))" | ngx_agent scan "${ctx}" 2>&1 >/dev/null)" || status=1
      ngx_parse_records "${records}"
      ((status == 0)) || hg_die "${label}: ${SAFE_REAL}: ${NGX_ERROR}: the deny include cannot be placed"
    fi
    NGX_FILES+=("${SAFE_REAL}")
    NGX_FILE_CTX+=("${NGX_CTX}")
    NGX_FILE_LABEL+=("${label}")
    NGX_FILE_COPY+=("${copy}")
    servers+=${NGX_SERVERS}
    for entry in "${NGX_INCLUDES[@]}"; do
      IFS=$'\t' read -r line ictx ipath <<<"${entry}"
      ngx_include_targets "NGINX_SERVER_CONF: ${SAFE_REAL} line ${line}: include ${ipath}" "${ipath}"
      for target in "${NGX_TARGETS[@]}"; do
        todo+=("${target}")
        todo_ctx+=("${ictx}")
        todo_label+=("NGINX_SERVER_CONF: ${SAFE_REAL} line ${line}: include ${ipath}")
      done
    done
  done
  ((servers > 0)) \
    || hg_die "NGINX_SERVER_CONF: ${conf}: no server block of the http context (in it or the files it includes): the deny include cannot be placed"
}

# Warns about what the deny rule cannot see (README: what it covers).
ngx_warn_rewrites() {
  local real="$1" entry line text
  for entry in "${NGX_WARNINGS[@]}"; do
    IFS=$'\t' read -r line text <<<"${entry}"
    hg_log WARN "${real} line ${line}: ${text}"
  done
}

# ---- the edit (needs lib/safe-path.sh, lib/txn.sh) ----

# Checks NGINX_SERVER_CONF and what it includes before anything is written.
ngx_preflight() {
  [[ -n "${HG_NGINX_SERVER_CONF}" ]] || return 0
  ngx_walk "${HG_NGINX_SERVER_CONF}"
}

ngx_install_include() {
  local conf="${HG_NGINX_SERVER_CONF}" token content k total=0
  [[ -n "${conf}" ]] || return 0
  ngx_walk "${conf}" "${WORK_DIR}"
  for ((k = 0; k < ${#NGX_FILES[@]}; k++)); do
    content="$(mktemp "${WORK_DIR}/nginx.XXXXXX")"
    # The token: 16 hex digits of the sha256 of the path and the file
    # before the edit; a line an admin wrote before cannot carry it, and the
    # same file gives the same token (a resumed install writes the same bytes).
    ngx_add_include "${NGX_FILE_COPY[k]}" "${content}" "${NGX_FILES[k]}" "${NGX_FILE_CTX[k]}" \
      || hg_die "NGINX_SERVER_CONF: ${NGX_FILES[k]}: ${NGX_ERROR}: refused"
    ngx_warn_rewrites "${NGX_FILES[k]}"
    token="${NGX_TOKEN}"
    ((NGX_ADDED > 0)) || continue
    safe_resolve_file "${NGX_FILE_LABEL[k]}" "${NGX_FILES[k]}"
    [[ "${SAFE_REAL}" == "${NGX_FILES[k]}" ]] || hg_die "${NGX_FILES[k]} moved while install read it: refused"
    manifest_add include "${SAFE_REAL}" "${token}"
    txn_changed
    txn_record_user NGINX_SERVER_CONF "${NGX_FILE_COPY[k]}"
    safe_replace "${content}"
    total=$((total + NGX_ADDED))
    hg_log INFO "added the deny include to ${NGX_ADDED} server and location block(s) of ${SAFE_REAL}"
  done
  ((total > 0)) || hg_log INFO "every server block nginx loads from ${conf} has the deny include"
}

# Removes the lines install added to REAL with TOKEN (none: a manifest of a
# version that wrote no token), and only those.
ngx_uninstall_include() {
  local real="$1" token="${2:-}" copy content
  if [[ ! -e "${HG_ROOT}${real}" ]]; then
    hg_log WARN "${real} is gone: no deny include to remove"
    return 0
  fi
  safe_resolve_file NGINX_SERVER_CONF "${real}"
  copy="$(mktemp "${WORK_DIR}/nginx.XXXXXX")"
  safe_read "${copy}"
  content="$(mktemp "${WORK_DIR}/nginx.XXXXXX")"
  ngx_remove_include "${copy}" "${content}" "${token}" \
    || hg_die "NGINX_SERVER_CONF: ${real}: ${NGX_ERROR}: the deny include was not removed"
  ((NGX_REMOVED > 0)) || return 0
  txn_record_user NGINX_SERVER_CONF "${copy}"
  safe_replace "${content}"
  txn_reload_needed
  hg_log INFO "removed the deny include from ${real}"
}
