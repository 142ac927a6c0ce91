#!/usr/bin/env bats
# lib/nginx-conf.sh on its own: which blocks are the http context's server
# blocks under nginx's tokenizing rules, and that removing the include is the
# exact inverse of adding it (every byte back, twice adding is adding once).
# Each accepted case is also checked with the real `nginx -t`.

setup() {
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  # shellcheck source=../../scripts/lib/nginx-conf.sh
  source "${REPO}/scripts/lib/nginx-conf.sh"
  mkdir -p "${BATS_TEST_TMPDIR}/snippets"
  printf 'if ($uri ~ "/x$") { return 403; }\n' >"${BATS_TEST_TMPDIR}/snippets/deny.conf"
}

# nginx -t on TEXT as the content of http {} (the snippet path rewritten to
# the test's copy; nothing is written under /etc/nginx).
nginx_accepts() {
  local dir="${BATS_TEST_TMPDIR}/t"
  mkdir -p "${dir}"
  printf '%s' "${1//${NGX_SNIPPET}/${BATS_TEST_TMPDIR}/snippets/deny.conf}" >"${dir}/site"
  printf 'pid %s/pid;\nerror_log %s/error.log;\nevents {}\nhttp {\naccess_log off;\ninclude %s/site;\n}\n' \
    "${dir}" "${dir}" "${dir}" >"${dir}/nginx.conf"
  nginx -t -q -p "${dir}" -c "${dir}/nginx.conf" -e "${dir}/error.log"
}

# Adds, checks the count (SERVERS, LOCATIONS: 0 unless given), that nginx accepts the result, that a second
# add adds nothing, and that removing gives back TEXT byte for byte.
round_trip() {
  local text="$1" want=$(($2 + ${3:-0})) dir="${BATS_TEST_TMPDIR}/rt"
  mkdir -p "${dir}"
  printf '%s' "${text}" >"${dir}/orig"
  ngx_add_include "${dir}/orig" "${dir}/added" 0123abcd || { echo "refused: ${NGX_ERROR}" >&2; return 1; }
  [[ "${NGX_ADDED}" -eq "${want}" ]] || { printf 'added %s, want %s in:\n' "${NGX_ADDED}" "${want}" >&2; cat "${dir}/added" >&2; return 1; }
  nginx_accepts "$(cat "${dir}/added")" || { printf 'nginx -t refuses:\n' >&2; cat "${dir}/added" >&2; return 1; }
  ngx_add_include "${dir}/added" "${dir}/twice" 4567cdef
  [[ "${NGX_ADDED}" -eq 0 ]]
  cmp "${dir}/added" "${dir}/twice"
  ngx_remove_include "${dir}/added" "${dir}/removed" 0123abcd
  [[ "${NGX_REMOVED}" -eq "${want}" ]]
  cmp "${dir}/orig" "${dir}/removed" || { printf 'not restored:\n%q\n' "${text}" >&2; cat -A "${dir}/removed" >&2; return 1; }
}

# Prints the first line of what ngx_scan says about TEXT ("ok" or its error).
scan_verdict() {
  if printf '%s' "$1" | ngx_scan auto; then
    echo ok
  else
    echo "${NGX_ERROR}"
  fi
}

@test "nginx-conf: blocks found by structure, every byte given back" {
  round_trip $'server {\n    listen 8001;\n}\n' 1
  round_trip $'server\n{\n    listen 8001;\n}' 1
  round_trip $'server{listen 8001;}' 1
  round_trip $'server { # a comment { with braces }\n    listen 8001;\n}\n' 1
  round_trip $'server {\r\n    listen 8001;\r\n}\r\n' 1
  round_trip $'server { listen 8001; location / { return 200 "a \\" { b"; } }\nserver { listen 8002; }\n' 2 1
  round_trip $'server {\n    listen 8001;\n    set $a "${uri}x";\n    return 200 \'}\';\n}\n' 1
  round_trip $'upstream u { server 127.0.0.1:1; }\nserver { listen 8001; location / { proxy_pass http://u; } }\n' 1 1
  round_trip $'map $uri $m { default 0; server 1; }\nserver { listen 8001; }\n' 1
  round_trip $'server { listen 8001; server_name a#b; }\n' 1
  round_trip $'# server { listen 1; }\nserver { listen 8001; }  # trailing\n' 1
  round_trip $'server {\n    include /etc/nginx/snippets/hostguard-deny.conf;\n    listen 8001;\n}\nserver { listen 8002; }\n' 1
}

@test "nginx-conf: { } ; inside words and quotes are read as nginx's lexer reads them (issue 18, 11)" {
  local long
  long="$(printf 'x%.0s' {1..700})"
  # A } inside a word is part of it; `${` keeps its brace; quotes mid-word
  # are plain characters; a quoted keyword is the keyword.
  round_trip $'server {\n    add_header X-A a}b;\n    add_header X-B x}}x} always;\n}\n' 1
  round_trip $'server { add_header X-C ${host}}; add_header X-D a"b\'c; }\n' 1
  round_trip $'"server" { listen 8001; }\n\'server\'\n{ listen 8002; }\n' 2
  # Words and quoted strings longer than the scanner's 256-byte steps, and
  # one quoted string over several lines.
  round_trip "server { add_header X-L ${long}}; add_header X-M \"${long}\\\"}{;\"; }"$'\n' 1
  round_trip $'server {\n    return 200 "line one }\n    line two {\n";\n}\nserver { listen 8002; }\n' 2
  # A quoted string may be followed by `)` (an if condition), as nginx allows.
  round_trip $'server {\n    if ($uri = "/x") { return 204; }\n    if ($host ~* \'^a}\') { return 204; }\n}\n' 1
  # Against nginx itself: accepted and refused alike (refusals the lexer
  # makes; nginx -t also refuses what its directives do not allow).
  local text
  for text in $'server { add_header X a{b; }' $'server { return 200 "a"}; }' $'server { listen 1; }}' \
    $'server { set $a "x"y; }' $'server { listen 1 }'; do
    printf '%s' "${text}" >"${BATS_TEST_TMPDIR}/bad"
    ngx_add_include "${BATS_TEST_TMPDIR}/bad" "${BATS_TEST_TMPDIR}/out" 0 && { printf 'accepted: %q\n' "${text}" >&2; false; }
    ! nginx_accepts "${text}"
  done
}

@test "nginx-conf: every byte (NUL, CR, 0x80-0xff) goes through add and remove untouched (issue 18, 8)" {
  local dir="${BATS_TEST_TMPDIR}/bytes" b
  mkdir -p "${dir}"
  {
    printf 'server { # every byte but the newline:'
    for b in $(seq 0 255); do
      ((b == 10)) || printf "\\$(printf '%03o' "${b}")"
    done
    printf '\r\n    listen 8001;\r\n}\r\nserver { listen 8002; } # \0 and no newline at the end'
  } >"${dir}/orig"
  [[ "$(stat -c %s "${dir}/orig")" -gt 300 ]]
  ngx_add_include "${dir}/orig" "${dir}/added" 0123abcd
  [[ "${NGX_ADDED}" -eq 2 ]]
  # One block opens a line with more on it: split, and joined back.
  [[ "$(grep -a -c 'line split' "${dir}/added")" -eq 1 ]]
  ngx_remove_include "${dir}/added" "${dir}/removed" 0123abcd
  [[ "${NGX_REMOVED}" -eq 2 ]]
  cmp "${dir}/orig" "${dir}/removed"
  # nginx reads the installed file the same way.
  sed "s|${NGX_SNIPPET}|${BATS_TEST_TMPDIR}/snippets/deny.conf|" "${dir}/added" >"${dir}/site"
  printf 'pid %s/pid;\nerror_log %s/error.log;\nevents {}\nhttp {\naccess_log off;\ninclude %s/site;\n}\n' \
    "${dir}" "${dir}" "${dir}" >"${dir}/nginx.conf"
  nginx -t -q -p "${dir}" -c "${dir}/nginx.conf" -e "${dir}/error.log"
}

@test "nginx-conf: text nginx refuses is refused with its line" {
  local text
  for text in $'server {\n listen 1;\n' $'server { listen 1 }' $'}\n' $'server { return 200 "x; }' \
    $';' $'server { location ~ ^/a{1,2}$ { return 204; } }' $'server { return 200 "a"b; }'; do
    ngx_scan auto <<<"${text}" && { printf 'accepted: %q\n' "${text}" >&2; false; }
    [[ "${NGX_ERROR}" == "line "* ]] || { printf '%q -> %s\n' "${text}" "${NGX_ERROR}" >&2; false; }
    ! nginx_accepts "${text}"
  done
  printf 'stream { server { listen 1; proxy_pass a:1; } }\n' >"${BATS_TEST_TMPDIR}/stream"
  ngx_scan auto <"${BATS_TEST_TMPDIR}/stream"
  [[ "${#NGX_BLOCK_INSERT[@]}" -eq 0 ]]
}

@test "nginx-conf: removing takes only the lines with the install's token; an empty token, those of versions without one (issue 18, 10)" {
  local dir="${BATS_TEST_TMPDIR}/tok"
  mkdir -p "${dir}"
  printf '%s\n' 'server {' \
    '    include /etc/nginx/snippets/hostguard-deny.conf; # hostguard' \
    '    listen 8001;' '}' 'server {' \
    '    include /etc/nginx/snippets/hostguard-deny.conf; # hostguard 1111111111111111' \
    '    listen 8002;' '    location / {' \
    '        include /etc/nginx/snippets/hostguard-deny.conf; # hostguard 2222222222222222 (location)' \
    '        return 204;' '    }' '}' >"${dir}/site"
  ngx_remove_include "${dir}/site" "${dir}/one" 2222222222222222
  [[ "${NGX_REMOVED}" -eq 1 ]]
  [[ "$(grep -c hostguard "${dir}/one")" -eq 2 ]]
  ! grep -q 2222222222222222 "${dir}/one"
  ngx_remove_include "${dir}/one" "${dir}/two" ""
  [[ "${NGX_REMOVED}" -eq 1 ]]
  grep -q '# hostguard 1111111111111111$' "${dir}/two"
  [[ "$(grep -c hostguard "${dir}/two")" -eq 1 ]]
}
