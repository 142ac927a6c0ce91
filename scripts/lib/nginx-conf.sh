# shellcheck shell=bash
# shellcheck disable=SC2034 # NGX_* results are read by the script that sources this file
# The nginx edit of `install --part web`: the deny include goes at the top of
# every `server` block of the http context nginx loads from NGINX_SERVER_CONF
# and of every `location` block inside one: the file's own blocks and those
# of every file it includes where a server block may stand (its top level,
# or http {} of a main file), followed as nginx follows them (a relative
# path against the conf prefix, globs). Blocks are found by nginx's own
# lexer (ngx_conf_read_token: comments, quotes, escapes, `${`, `{` `}` `;`
# inside words), run by awk in one linear pass, never by line patterns;
# `server` in upstream, stream or mail blocks is left alone. Files are
# spliced by byte offset in one awk pass, so every byte nginx accepts (a NUL
# in a comment too) goes through untouched. Each added line carries a token
# (a hash of the file before the edit), kept in the manifest: uninstall
# removes those lines and no other, not even an identical line an admin
# wrote. The do (ngx_install_include) and the undo (ngx_uninstall_include)
# sit side by side. Sourced by install, never run.

readonly NGX_SNIPPET=/etc/nginx/snippets/hostguard-deny.conf
# The line added after a block's `{` line ends with the marker, then the
# install's token; when the `{` has more on its line (a one-line block) that
# rest starts a new line, and "(line split)" tells the undo to join it back.
readonly NGX_INCLUDE_LINE="include ${NGX_SNIPPET}; # hostguard"
readonly NGX_SPLIT_SUFFIX=" (line split)"
# ... and "(location)" marks the line added to a location block.
readonly NGX_LOCATION_SUFFIX=" (location)"
# How many files one NGINX_SERVER_CONF may pull in through includes.
readonly NGX_MAX_FILES=1000

# nginx's lexer (src/core/ngx_conf_file.c, ngx_conf_read_token) and the
# block structure on top of it. Input: the file, NUL bytes turned into \001
# (same offsets). Variables: ctx (auto: a main file when a block only the
# main context has stands at its top level, else a site file included in
# http {}; http; main), snippet. Output, TAB-separated:
#   C ctx                                      the context decided
#   S open insert split has line indent        a server block of the http context
#   L open insert split has line indent        a location block inside one
#   I line ctx path                            an include where servers may stand
#   R line directive                           a rewrite or try_files the checks
#                                              cannot see after (README)
#   E line: message                            refused as nginx would (exit 1)
# open: byte offset of its `{`; insert: where the include goes (end of the
# `{` line, or after the `{` when split is 1); has: it already includes the
# snippet at its own level; indent: the blanks before its first word, each
# written s (space) or t (tab), after an i.
# shellcheck disable=SC2016 # awk's own $ fields
read -r -d '' NGX_SCAN_AWK <<'AWK' || true
BEGIN {
  ls = 1; lineno = 1; off = 0; depth = 0; path[0] = ""; owner[0] = 0; srv[0] = 0; inloc[0] = 0
  # Character classes: 1 blank, 2 ; or {, 3 }, 4 #, 5 \, 6 ", 7 ', 8 $.
  cls[" "] = 1; cls["\t"] = 1; cls["\r"] = 1; cls["\n"] = 1
  cls[";"] = 2; cls["{"] = 2; cls["}"] = 3; cls["#"] = 4
  cls["\\"] = 5; cls["\""] = 6; cls["'"] = 7; cls["$"] = 8
}
function fail(msg) {
  if (err == "") err = "line " lineno ": " msg
}
function unescape(w,   out, i, c) {
  if (index(w, "\\") == 0) return w
  out = ""
  for (i = 1; i <= length(w); i++) {
    c = substr(w, i, 1)
    if (c == "\\" && i < length(w)) {
      c = substr(w, i + 1, 1)
      if (c == "\"" || c == "'" || c == "\\") { out = out c; i++; continue }
      if (c == "t") { out = out "\t"; i++; continue }
      if (c == "r") { out = out "\r"; i++; continue }
      if (c == "n") { out = out "\n"; i++; continue }
      c = "\\"
    }
    out = out c
  }
  return out
}
function push(w) {
  nargs++
  if (nargs <= 4) arg[nargs] = unescape(w)
  if (arg[1] == "try_files" && nargs > 2 && !tf_safe(prev)) tfbad = 1
  if (nargs > 1) prev = unescape(w)
  wbuf = ""; inw = 0
}
# A try_files file argument the deny rule still covers: the URI itself, its
# directory form (index: an internal redirect, checked again) or the URI
# plus a plain extension that is none of the denied endings.
function tf_safe(a) {
  if (a !~ /^[$]uri(\/|[.][A-Za-z0-9]+)?$/) return 0
  return tolower(a) !~ /[.](env|git|bak|old|dist|dev|local)$/
}
function reset() {
  nargs = 0; arg[1] = ""; arg[2] = ""; arg[3] = ""; arg[4] = ""; prev = ""; tfbad = 0
  ls = 1; ns = 0; v = 0; inw = 0; wbuf = ""; q = 0; sq = 0; dq = 0
}
function stmt_end() {
  if (arg[1] == "include" && nargs == 2) {
    if (owner[depth] > 0 && arg[2] == snippet) shas[owner[depth]] = 1
    ninc++; iline[ninc] = sline; iparent[ninc] = path[depth]; iarg[ninc] = arg[2]
  }
  if (arg[1] == "rewrite" || (arg[1] == "try_files" && tfbad)) {
    nrw++; rline[nrw] = sline; rpath[nrw] = path[depth]; rname[nrw] = arg[1]
    rsrv[nrw] = srv[depth]; rloc[nrw] = inloc[depth]; rflag[nrw] = (nargs >= 4) ? arg[4] : ""
  }
  reset()
}
# How far a skip goes when no character within 256 may end the word: to
# the end of the line at most (its newline is read as a character).
function skipmax() {
  if (p >= L) return 0
  return (L - p < 256) ? L - p : 256
}
# Whether a block path lies inside a server block of the http context.
function inserver(pth) {
  return pth == srvpath || substr(pth, 1, length(srvpath) + 1) == srvpath " "
}
function block_start(at,   name) {
  name = arg[1]
  if (depth == 0 && (name == "http" || name == "events" || name == "stream" || name == "mail")) main = 1
  depth++
  path[depth] = (depth == 1) ? name : path[depth - 1] " " name
  owner[depth] = 0; srv[depth] = srv[depth - 1]; inloc[depth] = inloc[depth - 1]
  # Server blocks, and location blocks (candidates: kept at the end when
  # they sit inside a server block of the http context).
  if ((name == "server" && nargs == 1) || (name == "location" && srv[depth - 1] > 0)) {
    nsrv++; sopen[nsrv] = at; sparent[nsrv] = path[depth - 1]; sl[nsrv] = sline
    sind[nsrv] = sindent; shas[nsrv] = 0; skind[nsrv] = (name == "server") ? "S" : "L"
    owner[depth] = nsrv
    pend = nsrv
    if (name == "server") srv[depth] = nsrv
    else { inloc[depth] = 1; slocs[srv[depth - 1]]++ }
  }
  reset()
}
{
  line = $0; L = length(line)
  match(line, /^[ \t]*/); indent = substr(line, 1, RLENGTH)
  if (inw) wst = 1
  for (p = 1; p <= L + 1; p++) {
    ch = (p <= L) ? substr(line, p, 1) : "\n"
    if (pend) {
      # Where the include of the server block just opened goes: at the end
      # of its `{` line when nothing but blanks or a comment follows, else
      # right after the `{` (the rest moves to a line of its own).
      if (ch == "\n" || ch == "#") { sins[pend] = off + L; ssplit[pend] = 0; pend = 0 }
      else if (ch != " " && ch != "\t" && ch != "\r") { sins[pend] = off + p - 1; ssplit[pend] = 1; pend = 0 }
    }
    if (sharp) {
      if (ch != "\n") { p = L; continue }
      sharp = 0
    }
    if (q) { q = 0; continue }
    c = cls[ch]
    if (ns) {
      if (c == 1) { ls = 1; ns = 0; continue }
      if (ch == ";") { stmt_end(); continue }
      if (ch == "{") { block_start(off + p - 1); continue }
      if (ch != ")") { fail("unexpected \"" ch "\""); exit 1 }
      ls = 1; ns = 0
    }
    if (ls) {
      if (c == 1) { p += match(substr(line, p + 1, 256), /[^ \t\r]/) ? RSTART - 1 : skipmax(); continue }
      if (nargs == 0) { sline = lineno; sindent = indent }
      if (c == 2) {
        if (nargs == 0) { fail("unexpected \"" ch "\""); exit 1 }
        if (ch == "{") block_start(off + p - 1); else stmt_end()
        continue
      }
      if (c == 3) {
        if (nargs != 0) { fail("unexpected \"}\""); exit 1 }
        if (depth == 0) { fail("unexpected \"}\""); exit 1 }
        depth--
        reset()
        continue
      }
      if (c == 4) { sharp = 1; p = L; continue }
      ls = 0; inw = 1; wbuf = ""; wst = p
      if (c == 5) { q = 1; continue }
      if (c == 6) { dq = 1; wst = p + 1; continue }
      if (c == 7) { sq = 1; wst = p + 1; continue }
      if (c == 8) v = 1
      continue
    }
    if (ch == "{" && v) continue
    v = 0
    if (c == 5) { q = 1; continue }
    if (c == 8) { v = 1; continue }
    # Inside a word: what cannot end it is skipped up to the next character
    # that may (at most 256 at a time, so the copy stays short).
    if (dq) {
      if (c != 6) { p += match(substr(line, p + 1, 256), /["\\$]/) ? RSTART - 1 : skipmax(); continue }
      dq = 0; ns = 1
    } else if (sq) {
      if (c != 7) { p += match(substr(line, p + 1, 256), /['\\$]/) ? RSTART - 1 : skipmax(); continue }
      sq = 0; ns = 1
    } else if (c == 1 || c == 2) {
      ls = 1
    } else { p += match(substr(line, p + 1, 256), /[ \t\r;{\\$]/) ? RSTART - 1 : skipmax(); continue }
    # The word ends before this character.
    push(wbuf substr(line, wst, p - wst))
    if (ch == ";") stmt_end()
    else if (ch == "{") block_start(off + p - 1)
  }
  # A word (a quoted string) going on past the end of the line.
  if (inw) { wbuf = wbuf substr(line, wst) "\n"; wst = 1 }
  off += L + 1; lineno++
}
END {
  if (err != "") { print "E\t" err; exit 1 }
  lineno--
  if (nargs > 0 || inw || ns || q) { fail("unexpected end of file, expecting \";\" or \"}\""); print "E\t" err; exit 1 }
  if (depth > 0) { fail("unexpected end of file, expecting \"}\""); print "E\t" err; exit 1 }
  if (ctx == "auto") ctx = main ? "main" : "http"
  want = (ctx == "main") ? "http" : ""
  print "C\t" ctx
  srvpath = (want == "") ? "server" : "http server"
  for (k = 1; k <= nsrv; k++) {
    if (skind[k] == "S" && sparent[k] != want) continue
    if (skind[k] == "L" && !inserver(sparent[k])) continue
    ind = sind[k]; gsub(/ /, "s", ind); gsub(/\t/, "t", ind)
    print skind[k] "\t" sopen[k] "\t" sins[k] "\t" ssplit[k] "\t" shas[k] "\t" sl[k] "\ti" ind
  }
  for (k = 1; k <= ninc; k++) {
    if (iparent[k] == "") ictx = ctx
    else if (iparent[k] == "http" && ctx == "main") ictx = "http"
    else continue
    if (iarg[k] ~ /[[:cntrl:]]/) { print "E\tline " iline[k] ": an include path with a control character"; exit 1 }
    print "I\t" iline[k] "\t" ictx "\t" iarg[k]
  }
  # What the checks at the top of the server and of each location cannot
  # see: a rewrite with `break` inside a location (the location then serves
  # the new URI without another check), a rewrite in a server block without
  # locations, a try_files serving another file.
  for (k = 1; k <= nrw; k++) {
    if (!inserver(rpath[k])) continue
    if (rname[k] == "rewrite" && rloc[k] && rflag[k] != "break") continue
    if (rname[k] == "rewrite" && !rloc[k] && slocs[rsrv[k]] > 0) continue
    print "R\t" rline[k] "\t" rname[k] (rflag[k] == "break" ? " ... break" : "")
  }
}
AWK
readonly NGX_SCAN_AWK

# Marks what ngx_add_include added with TOKEN: prints "offset length" of
# each byte range to delete (a marked line with the newline before it; a
# split line also with the newline after it). Variables: mark, and the
# suffixes smark (line split) and lmark (location).
read -r -d '' NGX_UNMARK_AWK <<'AWK' || true
{
  t = $0; sub(/^[ \t]*/, "", t)
  if (NR > 1 && (t == mark || t == mark lmark)) print off - 1 "\t" length($0) + 1
  else if (NR > 1 && (t == mark smark || t == mark lmark smark)) print off - 1 "\t" length($0) + 2
  off += length($0) + 1
}
AWK
readonly NGX_UNMARK_AWK

# Filled by ngx_scan: the server blocks of the http context of one file and
# the location blocks inside them (at any depth), in the order of the file.
NGX_CTX=""
NGX_SERVERS=0       # how many of the blocks are server blocks
NGX_BLOCK_KIND=()   # S: a server block of the http context; L: a location in one
NGX_BLOCK_INSERT=() # byte offset where the include goes
NGX_BLOCK_SPLIT=()  # 1 when the rest of the `{` line moves to a new line
NGX_BLOCK_HAS=()    # 1 when it already includes NGX_SNIPPET at its own level
NGX_BLOCK_LINE=()
NGX_BLOCK_INDENT=() # leading blanks of the line of its first word
NGX_INCLUDES=()      # "line<TAB>context<TAB>path" of includes to follow
NGX_REWRITES=()      # "line<TAB>directive" of rewrites (try_files) the rule cannot see
NGX_ERROR=""

# Scans the config text on stdin as nginx reads it, as a file of context CTX
# (auto, http, main). Returns 1 with NGX_ERROR ("line N: what") on text
# nginx would refuse. Linear in the size of the text.
ngx_scan() {
  local ctx="${1:-auto}" records
  if ! records="$(ngx_scan_file - "${ctx}")"; then
    NGX_ERROR="$(ngx_scan_error "${records}")"
    return 1
  fi
  ngx_parse_records "${records}"
}

# Prints the refusal in the scan RECORDS ("line N: what"), or that the file
# could not be read when the scan did not finish.
ngx_scan_error() {
  if [[ "$1" == *E$'\t'* ]]; then
    printf '%s\n' "${1##*E$'\t'}"
  else
    printf 'could not be read\n'
  fi
}

ngx_parse_records() {
  local records="$1" kind a b c d e f indent
  NGX_CTX=""
  NGX_SERVERS=0
  NGX_BLOCK_KIND=()
  NGX_BLOCK_INSERT=()
  NGX_BLOCK_SPLIT=()
  NGX_BLOCK_HAS=()
  NGX_BLOCK_LINE=()
  NGX_BLOCK_INDENT=()
  NGX_INCLUDES=()
  NGX_REWRITES=()
  NGX_ERROR=""
  while IFS=$'\t' read -r kind a b c d e f; do
    case "${kind}" in
      C) NGX_CTX="${a}" ;;
      S | L)
        NGX_BLOCK_KIND+=("${kind}")
        [[ "${kind}" == L ]] || NGX_SERVERS=$((NGX_SERVERS + 1))
        NGX_BLOCK_INSERT+=("${b}")
        NGX_BLOCK_SPLIT+=("${c}")
        NGX_BLOCK_HAS+=("${d}")
        NGX_BLOCK_LINE+=("${e}")
        indent="${f#i}"
        indent="${indent//s/ }"
        NGX_BLOCK_INDENT+=("${indent//t/$'\t'}")
        ;;
      I) NGX_INCLUDES+=("${a}"$'\t'"${b}"$'\t'"${c}${d:+$'\t'${d}}") ;;
      R) NGX_REWRITES+=("${a}"$'\t'"${b}") ;;
    esac
  done <<<"${records}"
}

# Byte ranges to change, ascending: offset, bytes to delete there, text to
# put there instead.
NGX_EDIT_AT=()
NGX_EDIT_DEL=()
NGX_EDIT_TEXT=()

# Applies edits to a file in one pass, byte for byte elsewhere (awk keeps
# NUL and any other byte; the caller checks the size of what comes out).
# Input: first the edits on stdin, "offset<TAB>bytes to delete<TAB>text"
# (text with \n and \t written as such), then a line "." ; then the file.
# Variable: size, the file's size (whether its last line has a newline).
read -r -d '' NGX_SPLICE_AWK <<'AWK' || true
BEGIN { ORS = ""; n = 0; e = 1; skip = 0; editing = 1 }
editing {
  if ($0 == ".") { editing = 0; next }
  split($0, f, "\t")
  n++; eat[n] = f[1] + 0; edel[n] = f[2] + 0; t = f[3]
  gsub(/\\n/, "\n", t); gsub(/\\t/, "\t", t); etext[n] = t
  next
}
function emit(chunk, cstart, from, to) {
  if (from < skip - cstart + 1) from = skip - cstart + 1
  if (from <= to) print substr(chunk, from, to - from + 1)
}
{
  chunk = $0
  if (off + length($0) < size) chunk = chunk "\n"
  i = 1
  while (e <= n && eat[e] < off + length(chunk)) {
    rel = eat[e] - off
    emit(chunk, off, i, rel)
    print etext[e]
    if (eat[e] + edel[e] > skip) skip = eat[e] + edel[e]
    i = rel + 1
    e++
  }
  emit(chunk, off, i, length(chunk))
  off += length(chunk)
}
END { for (; e <= n; e++) print etext[e] }
AWK
readonly NGX_SPLICE_AWK

# Writes file SRC with the NGX_EDIT_* changes (ascending offsets) applied to
# file OUT, byte for byte elsewhere. Returns 1 when OUT is not exactly as
# long as it must be (nothing may then be written from it).
ngx_splice() {
  local src="$1" out="$2" k text size
  local -i want
  size="$(stat -c %s -- "${src}")"
  want=${size}
  for ((k = 0; k < ${#NGX_EDIT_AT[@]}; k++)); do
    want+=$((${#NGX_EDIT_TEXT[k]} - NGX_EDIT_DEL[k]))
  done
  {
    for ((k = 0; k < ${#NGX_EDIT_AT[@]}; k++)); do
      text="${NGX_EDIT_TEXT[k]//$'\n'/\\n}"
      printf '%s\t%s\t%s\n' "${NGX_EDIT_AT[k]}" "${NGX_EDIT_DEL[k]}" "${text//$'\t'/\\t}"
    done
    printf '.\n'
  } | LC_ALL=C awk -v size="${size}" "${NGX_SPLICE_AWK}" - "${src}" >"${out}"
  (($(stat -c %s -- "${out}") == want)) || {
    NGX_ERROR="the edited copy has not the expected size"
    return 1
  }
}

# Adds the include marked with TOKEN to every block ngx_scan found without
# it: sets NGX_EDIT_* and NGX_ADDED (how many).
NGX_ADDED=0
ngx_plan_add() {
  local token="$1" k line
  NGX_EDIT_AT=()
  NGX_EDIT_DEL=()
  NGX_EDIT_TEXT=()
  NGX_ADDED=0
  for ((k = 0; k < ${#NGX_BLOCK_INSERT[@]}; k++)); do
    ((NGX_BLOCK_HAS[k])) && continue
    line="${NGX_BLOCK_INDENT[k]}    ${NGX_INCLUDE_LINE} ${token}"
    [[ "${NGX_BLOCK_KIND[k]}" == S ]] || line+="${NGX_LOCATION_SUFFIX}"
    NGX_EDIT_AT+=("${NGX_BLOCK_INSERT[k]}")
    NGX_EDIT_DEL+=(0)
    if ((NGX_BLOCK_SPLIT[k])); then
      NGX_EDIT_TEXT+=($'\n'"${line}${NGX_SPLIT_SUFFIX}"$'\n')
    else
      NGX_EDIT_TEXT+=($'\n'"${line}")
    fi
    NGX_ADDED=$((NGX_ADDED + 1))
  done
}

# File SRC with the include added to every server block of the http context
# of a file of context CTX, into file OUT. Returns 1 (NGX_ERROR set) on text
# nginx would refuse.
ngx_add_include() {
  local src="$1" out="$2" token="$3" ctx="${4:-auto}"
  ngx_scan "${ctx}" <"${src}" || return 1
  ngx_plan_add "${token}"
  ngx_splice "${src}" "${out}" || return 1
}

# File SRC without the lines marked with TOKEN (an empty TOKEN: the lines
# of versions that wrote no token), into file OUT; NGX_REMOVED is how many.
NGX_REMOVED=0
ngx_remove_include() {
  local src="$1" out="$2" token="$3" mark at len ranges size
  mark="${NGX_INCLUDE_LINE}${token:+ ${token}}"
  NGX_EDIT_AT=()
  NGX_EDIT_DEL=()
  NGX_EDIT_TEXT=()
  ranges="$(LC_ALL=C tr '\0' '\1' <"${src}" \
    | LC_ALL=C awk -v mark="${mark}" -v smark="${NGX_SPLIT_SUFFIX}" -v lmark="${NGX_LOCATION_SUFFIX}" "${NGX_UNMARK_AWK}")"
  size="$(stat -c %s -- "${src}")"
  while read -r at len; do
    [[ -n "${at}" ]] || continue
    # A split line that ends the file has no newline after it.
    ((at + len <= size)) || len=$((size - at))
    NGX_EDIT_AT+=("${at}")
    NGX_EDIT_DEL+=("${len}")
    NGX_EDIT_TEXT+=("")
  done <<<"${ranges}"
  NGX_REMOVED=${#NGX_EDIT_AT[@]}
  ngx_splice "${src}" "${out}" || return 1
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
# may stand. Fills NGX_FILES (host paths, symlinks resolved), NGX_FILE_CTX,
# NGX_FILE_LABEL and NGX_FILE_RECORDS (the scan of each); NGX_FILE_COPY
# holds a root-only copy of each when a work directory is given. Dies on a
# file nginx would refuse or one unsafe to read, naming the include that
# pulls it in; also when no file has a server block of the http context.
NGX_FILES=()
NGX_FILE_CTX=()
NGX_FILE_LABEL=()
NGX_FILE_COPY=()
NGX_FILE_RECORDS=()
ngx_walk() {
  local conf="$1" work="${2:-}" path ctx label copy records entry line ictx ipath target
  local -i servers=0 k=0
  local -a todo=("${conf}") todo_ctx=(auto) todo_label=(NGINX_SERVER_CONF)
  local -A seen=()
  NGX_FILES=()
  NGX_FILE_CTX=()
  NGX_FILE_LABEL=()
  NGX_FILE_COPY=()
  NGX_FILE_RECORDS=()
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
      records="$(ngx_scan_file "${copy}" "${ctx}")" \
        || hg_die "${label}: ${SAFE_REAL}: $(ngx_scan_error "${records}"): the deny include cannot be placed"
    else
      # Bounded like safe_read: the size was checked when the path was
      # resolved, a file grown since then is cut here and refused by the
      # install's own safe_read.
      records="$(safe_as_owner cat -- "${HG_ROOT}${SAFE_REAL}" </dev/null 2>/dev/null \
        | head -c "$((SAFE_READ_MAX + 1))" | ngx_scan_file - "${ctx}")" \
        || hg_die "${label}: ${SAFE_REAL}: $(ngx_scan_error "${records}"): the deny include cannot be placed"
    fi
    ngx_parse_records "${records}"
    NGX_FILES+=("${SAFE_REAL}")
    NGX_FILE_CTX+=("${NGX_CTX}")
    NGX_FILE_LABEL+=("${label}")
    NGX_FILE_COPY+=("${copy}")
    NGX_FILE_RECORDS+=("${records}")
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

# Prints the scan records of FILE (- for stdin) read as context CTX; on
# refusal prints the E record and returns 1.
ngx_scan_file() {
  local file="$1" ctx="$2"
  [[ "${file}" != - ]] || file=/dev/stdin
  LC_ALL=C tr '\0' '\1' <"${file}" | LC_ALL=C awk -v ctx="${ctx}" -v snippet="${NGX_SNIPPET}" "${NGX_SCAN_AWK}"
}

# Warns about rewrites the deny rule cannot see (README: what it covers).
ngx_warn_rewrites() {
  local real="$1" entry line name
  for entry in "${NGX_REWRITES[@]}"; do
    IFS=$'\t' read -r line name <<<"${entry}"
    hg_log WARN "${real} line ${line}: this ${name} serves another URI than the one the deny rule checked; the rule does not cover what it serves (scripts/README.md: the nginx include)"
  done
}

# ---- the edit (needs lib/safe-path.sh, lib/txn.sh) ----

# Checks NGINX_SERVER_CONF and what it includes before anything is written.
ngx_preflight() {
  [[ -n "${HG_NGINX_SERVER_CONF}" ]] || return 0
  ngx_walk "${HG_NGINX_SERVER_CONF}"
}

# The token of the lines added to host path REAL whose content before the
# edit is file COPY: 16 hex digits of their sha256. A line an admin wrote
# before cannot carry it (it would be part of what is hashed), and the same
# file gives the same token, so a resumed or repeated install writes the
# same bytes.
ngx_token() {
  local real="$1" copy="$2" sum
  sum="$({ printf '%s\0' "${real}" && cat -- "${copy}"; } | sha256sum)"
  printf '%s\n' "${sum:0:16}"
}

ngx_install_include() {
  local conf="${HG_NGINX_SERVER_CONF}" token content k total=0
  [[ -n "${conf}" ]] || return 0
  ngx_walk "${conf}" "${WORK_DIR}"
  for ((k = 0; k < ${#NGX_FILES[@]}; k++)); do
    ngx_parse_records "${NGX_FILE_RECORDS[k]}"
    ngx_warn_rewrites "${NGX_FILES[k]}"
    token="$(ngx_token "${NGX_FILES[k]}" "${NGX_FILE_COPY[k]}")"
    ngx_plan_add "${token}"
    ((NGX_ADDED > 0)) || continue
    content="$(mktemp "${WORK_DIR}/nginx.XXXXXX")"
    ngx_splice "${NGX_FILE_COPY[k]}" "${content}" \
      || hg_die "NGINX_SERVER_CONF: ${NGX_FILES[k]}: ${NGX_ERROR}: refused"
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
