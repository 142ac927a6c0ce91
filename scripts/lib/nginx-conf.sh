# shellcheck shell=bash
# shellcheck disable=SC2034 # NGX_* results are read by the script that sources this file
# The nginx edit of `install --part web`: the deny include goes into every
# `server` block of the http context of a site file, found by nginx's own
# block structure (a tokenizer: comments, quoted strings, escapes, ${var},
# `{` on another line, one-line blocks, nested blocks), never by line
# patterns; `server` in upstream, stream or mail blocks is left alone. The
# do (ngx_add_include) and the undo (ngx_remove_include) sit side by side and
# are exact inverses. Pure text functions: the caller reads and writes files.
# Sourced by install, never run.

readonly NGX_SNIPPET=/etc/nginx/snippets/hostguard-deny.conf
# The line added after a block's `{` line, and the one used when the `{` has
# more on its line (a one-line block): that rest then starts a new line, and
# the marker tells the undo to join it back.
readonly NGX_INCLUDE_LINE="include ${NGX_SNIPPET}; # hostguard"
readonly NGX_INCLUDE_SPLIT_LINE="include ${NGX_SNIPPET}; # hostguard (line split)"
# Blocks only the main context has: a file with one of them at its top level
# is a main file (nginx.conf), else it is a site file included in http {}.
readonly NGX_MAIN_BLOCKS=" http events stream mail "

# Filled by ngx_scan: one entry per server block of the http context.
NGX_SERVER_OPEN=()   # byte offset of its `{`
NGX_SERVER_INDENT=() # leading blanks of the line of its `server` keyword
NGX_SERVER_HAS=()    # 1 when it already includes NGX_SNIPPET at its own level
NGX_ERROR=""

# Scans TEXT (a whole config file) the way nginx's ngx_conf_read_token reads
# it. Returns 1 with NGX_ERROR ("line N: what") on text nginx would refuse.
ngx_scan() {
  local text="$1" LC_ALL=C
  local -i i=0 n=${#text} line=1 line_start=0 word_line_start=0 stmt_line_start=0 open=0
  local c word="" in_word=0 quote="" main=0 name
  local -a stmt=() blocks=() block_server=() servers_parent=() servers_open=() servers_indent=() servers_has=()
  NGX_SERVER_OPEN=()
  NGX_SERVER_INDENT=()
  NGX_SERVER_HAS=()
  NGX_ERROR=""
  while ((i < n)); do
    c="${text:i:1}"
    if [[ -n "${quote}" ]]; then
      if [[ "${c}" == "\\" ]]; then
        word+="${text:i:2}"
        ((i += 2))
        continue
      fi
      [[ "${c}" == $'\n' ]] && { line+=1; line_start=$((i + 1)); }
      if [[ "${c}" == "${quote}" ]]; then
        quote=""
        _ngx_end_word
      else
        word+="${c}"
      fi
      ((i += 1))
      continue
    fi
    case "${c}" in
      $'\n' | ' ' | $'\t' | $'\r')
        _ngx_end_word
        if [[ "${c}" == $'\n' ]]; then
          line+=1
          line_start=$((i + 1))
        fi
        ;;
      '#')
        if ((in_word)); then
          word+="${c}"
        else
          while ((i < n)) && [[ "${text:i:1}" != $'\n' ]]; do ((i += 1)); done
          continue
        fi
        ;;
      '"' | "'")
        if ((in_word)); then
          word+="${c}"
        else
          _ngx_start_word
          quote="${c}"
        fi
        ;;
      "\\")
        ((in_word)) || _ngx_start_word
        word+="${text:i:2}"
        ((i += 1))
        ;;
      '$')
        ((in_word)) || _ngx_start_word
        if [[ "${text:i+1:1}" == '{' ]]; then
          # ${var}: its braces are part of the word, not a block.
          while ((i < n)) && [[ "${text:i:1}" != '}' ]]; do
            word+="${text:i:1}"
            ((i += 1))
          done
          ((i < n)) || { NGX_ERROR="line ${line}: unterminated \${ in a variable"; return 1; }
        fi
        word+="${text:i:1}"
        ;;
      ';')
        _ngx_end_word
        ((${#stmt[@]} > 0)) || { NGX_ERROR="line ${line}: unexpected \";\""; return 1; }
        _ngx_statement_done
        stmt=()
        ;;
      '{')
        _ngx_end_word
        ((${#stmt[@]} > 0)) || { NGX_ERROR="line ${line}: unexpected \"{\""; return 1; }
        name="${stmt[0]}"
        ((${#blocks[@]} == 0)) && [[ "${NGX_MAIN_BLOCKS}" == *" ${name} "* ]] && main=1
        if [[ "${name}" == server && ${#stmt[@]} -eq 1 ]]; then
          open=${#servers_open[@]}
          servers_open+=("${i}")
          servers_parent+=("${blocks[*]}")
          servers_has+=(0)
          _ngx_indent "${stmt_line_start}"
          block_server+=("${open}")
        else
          block_server+=(-1)
        fi
        blocks+=("${name}")
        stmt=()
        ;;
      '}')
        _ngx_end_word
        ((${#stmt[@]} == 0)) || { NGX_ERROR="line ${line}: \"${stmt[0]}\" has no \";\" before \"}\""; return 1; }
        ((${#blocks[@]} > 0)) || { NGX_ERROR="line ${line}: unexpected \"}\""; return 1; }
        unset 'blocks[-1]' 'block_server[-1]'
        ;;
      *)
        ((in_word)) || _ngx_start_word
        word+="${c}"
        ;;
    esac
    ((i += 1))
  done
  [[ -z "${quote}" ]] || { NGX_ERROR="line ${line}: unterminated quoted string"; return 1; }
  _ngx_end_word
  ((${#stmt[@]} == 0)) || { NGX_ERROR="line ${line}: unexpected end of file, expecting \";\" or \"}\""; return 1; }
  ((${#blocks[@]} == 0)) || { NGX_ERROR="line ${line}: unexpected end of file, expecting \"}\""; return 1; }
  # A server block is of the http context when it sits at the top of a site
  # file, or directly inside http {} of a main file.
  local k want=""
  ((main)) && want=http
  for ((k = 0; k < ${#servers_open[@]}; k++)); do
    [[ "${servers_parent[k]}" == "${want}" ]] || continue
    NGX_SERVER_OPEN+=("${servers_open[k]}")
    NGX_SERVER_INDENT+=("${servers_indent[k]}")
    NGX_SERVER_HAS+=("${servers_has[k]}")
  done
  return 0
}

# Helpers of ngx_scan (they share its locals: bash's dynamic scope).
_ngx_start_word() {
  in_word=1
  word=""
  word_line_start=${line_start}
}

_ngx_end_word() {
  ((in_word)) || return 0
  ((${#stmt[@]} > 0)) || stmt_line_start=${word_line_start}
  stmt+=("${word}")
  in_word=0
  word=""
}

# Marks the enclosing server block when the statement is the deny include.
_ngx_statement_done() {
  ((${#block_server[@]} > 0)) || return 0
  local owner="${block_server[-1]}"
  ((owner >= 0)) || return 0
  [[ "${stmt[0]}" == include && "${stmt[1]:-}" == "${NGX_SNIPPET}" && ${#stmt[@]} -eq 2 ]] || return 0
  servers_has[owner]=1
}

_ngx_indent() {
  local from="$1" rest
  rest="${text:from}"
  rest="${rest%%[![:blank:]]*}"
  servers_indent+=("${rest}")
}

# Sets NGX_TEXT to TEXT with the include added to every http server block
# that lacks it (a variable, not stdout: $(...) would eat final newlines);
# NGX_ADDED is how many were added. Returns 1 (NGX_ERROR set) on text
# nginx would refuse or when the file has no server block of the http context.
NGX_TEXT=""
NGX_ADDED=0
ngx_add_include() {
  local text="$1" LC_ALL=C k at rest indent
  NGX_ADDED=0
  ngx_scan "${text}" || return 1
  if ((${#NGX_SERVER_OPEN[@]} == 0)); then
    NGX_ERROR="no server block of the http context"
    return 1
  fi
  # Last block first: earlier offsets stay valid.
  for ((k = ${#NGX_SERVER_OPEN[@]} - 1; k >= 0; k--)); do
    ((NGX_SERVER_HAS[k])) && continue
    at=$((NGX_SERVER_OPEN[k] + 1))
    indent="${NGX_SERVER_INDENT[k]}"
    rest="${text:at}"
    rest="${rest%%$'\n'*}"
    if [[ "${rest}" =~ ^[[:blank:]$'\r']*(#.*)?$ ]]; then
      at=$((at + ${#rest}))
      text="${text:0:at}"$'\n'"${indent}    ${NGX_INCLUDE_LINE}${text:at}"
    else
      text="${text:0:at}"$'\n'"${indent}    ${NGX_INCLUDE_SPLIT_LINE}"$'\n'"${text:at}"
    fi
    NGX_ADDED=$((NGX_ADDED + 1))
  done
  NGX_TEXT="${text}"
}

# Sets NGX_TEXT to TEXT without what ngx_add_include added: a marked line goes with the
# newline before it; a split line also with the newline after it.
# NGX_REMOVED is how many were removed.
NGX_REMOVED=0
ngx_remove_include() {
  local text="$1" LC_ALL=C kept="" line sep
  local -i first=1
  NGX_REMOVED=0
  while [[ -n "${text}" ]]; do
    if [[ "${text}" == *$'\n'* ]]; then
      line="${text%%$'\n'*}"
      text="${text#*$'\n'}"
      sep=$'\n'
    else
      line="${text}"
      text=""
      sep=""
    fi
    if ((!first)) && [[ "${line}" =~ ^[[:blank:]]*(.*)$ ]]; then
      case "${BASH_REMATCH[1]}" in
        "${NGX_INCLUDE_LINE}")
          # Drop "\n<line>": the separator printed before it goes.
          kept="${kept%$'\n'}${sep}"
          NGX_REMOVED=$((NGX_REMOVED + 1))
          continue
          ;;
        "${NGX_INCLUDE_SPLIT_LINE}")
          kept="${kept%$'\n'}"
          NGX_REMOVED=$((NGX_REMOVED + 1))
          continue
          ;;
      esac
    fi
    first=0
    kept+="${line}${sep}"
  done
  NGX_TEXT="${kept}"
}

# ---- the edit of NGINX_SERVER_CONF (needs lib/safe-path.sh, lib/txn.sh) ----

# Reads the file resolved by safe_resolve_file (with its controller's
# rights) into a work copy and NGX_FILE_TEXT; sets NGX_COPY.
NGX_COPY=""
NGX_FILE_TEXT=""
ngx_read_file() {
  NGX_COPY="$(mktemp "${WORK_DIR}/nginx.XXXXXX")"
  safe_read "${NGX_COPY}"
  NGX_FILE_TEXT=""
  IFS= read -r -d '' NGX_FILE_TEXT <"${NGX_COPY}" || true
}

# Records (ahead), then writes NGX_TEXT over the file.
ngx_write_file() {
  local content
  content="$(mktemp "${WORK_DIR}/nginx.XXXXXX")"
  printf '%s' "${NGX_TEXT}" >"${content}"
  JOURNAL+=("u"$'\t'"NGINX_SERVER_CONF"$'\t'"${SAFE_REAL}"$'\t'"${NGX_COPY}")
  safe_replace "${content}"
}

# Checks NGINX_SERVER_CONF before anything is written: safe to edit, and
# every server block of its http context can take the include.
ngx_preflight() {
  local conf="${HG_NGINX_SERVER_CONF}"
  [[ -n "${conf}" ]] || return 0
  safe_resolve_file NGINX_SERVER_CONF "${conf}"
  local text
  safe_read_text text
  ngx_add_include "${text}" || hg_die "NGINX_SERVER_CONF: ${SAFE_REAL}: ${NGX_ERROR}: the deny include cannot be placed"
}

ngx_install_include() {
  local conf="${HG_NGINX_SERVER_CONF}" real
  [[ -n "${conf}" ]] || return 0
  safe_resolve_file NGINX_SERVER_CONF "${conf}"
  real="${SAFE_REAL}"
  ngx_read_file
  ngx_add_include "${NGX_FILE_TEXT}" || hg_die "NGINX_SERVER_CONF: ${real}: ${NGX_ERROR}: the deny include cannot be placed"
  ((NGX_ADDED > 0)) || return 0
  manifest_add include "${real}"
  txn_changed
  ngx_write_file
  hg_log INFO "added the deny include to ${NGX_ADDED} server block(s) of ${real}"
}

ngx_uninstall_include() {
  local real="$1"
  if [[ ! -e "${HG_ROOT}${real}" ]]; then
    hg_log WARN "${real} is gone: no deny include to remove"
    return 0
  fi
  safe_resolve_file NGINX_SERVER_CONF "${real}"
  ngx_read_file
  ngx_remove_include "${NGX_FILE_TEXT}"
  ((NGX_REMOVED > 0)) || return 0
  ngx_write_file
  CHANGED=1
  hg_log INFO "removed the deny include from ${real}"
}
