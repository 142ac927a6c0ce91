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

# Adds, checks the count WANT, that nginx accepts the result, that a second
# add adds nothing, and that removing gives back TEXT byte for byte.
round_trip() {
  local text="$1" want="$2" added
  ngx_add_include "${text}" || { echo "refused: ${NGX_ERROR}" >&2; return 1; }
  added="${NGX_TEXT}"
  [[ "${NGX_ADDED}" -eq "${want}" ]] || { printf 'added %s, want %s in:\n%s\n' "${NGX_ADDED}" "${want}" "${added}" >&2; return 1; }
  nginx_accepts "${added}" || { printf 'nginx -t refuses:\n%s\n' "${added}" >&2; return 1; }
  ngx_add_include "${added}"
  [[ "${NGX_ADDED}" -eq 0 && "${NGX_TEXT}" == "${added}" ]]
  ngx_remove_include "${added}"
  [[ "${NGX_REMOVED}" -eq "${want}" ]]
  [[ "${NGX_TEXT}" == "${text}" ]] || { printf 'not restored:\n%q\n%q\n' "${text}" "${NGX_TEXT}" >&2; return 1; }
}

@test "nginx-conf: blocks found by structure, every byte given back" {
  round_trip $'server {\n    listen 8001;\n}\n' 1
  round_trip $'server\n{\n    listen 8001;\n}' 1
  round_trip $'server{listen 8001;}' 1
  round_trip $'server { # a comment { with braces }\n    listen 8001;\n}\n' 1
  round_trip $'server {\r\n    listen 8001;\r\n}\r\n' 1
  round_trip $'server { listen 8001; location / { return 200 "a \\" { b"; } }\nserver { listen 8002; }\n' 2
  round_trip $'server {\n    listen 8001;\n    set $a "${uri}x";\n    return 200 \'}\';\n}\n' 1
  round_trip $'upstream u { server 127.0.0.1:1; }\nserver { listen 8001; location / { proxy_pass http://u; } }\n' 1
  round_trip $'map $uri $m { default 0; server 1; }\nserver { listen 8001; }\n' 1
  round_trip $'server { listen 8001; server_name a#b; }\n' 1
  round_trip $'# server { listen 1; }\nserver { listen 8001; }  # trailing\n' 1
  round_trip $'server {\n    include /etc/nginx/snippets/hostguard-deny.conf;\n    listen 8001;\n}\nserver { listen 8002; }\n' 1
}

@test "nginx-conf: text nginx refuses is refused with its line" {
  local text
  for text in $'server {\n listen 1;\n' $'server { listen 1 }' $'}\n' $'server { return 200 "x; }' \
    $'server { set $a ${b; }' $';' $'server { location ~ ^/a{1,2}$ { return 204; } }'; do
    run ngx_add_include "${text}"
    [[ "${status}" -ne 0 ]] || { printf 'accepted: %q\n' "${text}" >&2; false; }
    ngx_add_include "${text}" || true
    [[ "${NGX_ERROR}" == "line "* ]] || { printf '%q -> %s\n' "${text}" "${NGX_ERROR}" >&2; false; }
  done
  ngx_add_include $'stream { server { listen 1; proxy_pass a:1; } }\n' && false
  [[ "${NGX_ERROR}" == "no server block of the http context" ]]
}
