# shellcheck shell=bash
# Benchmark 12 (issues 18, 23): install --part web, which reads, edits and
# writes back the users' files (hostguard/install/webedit.py: nginx's lexer and the
# splice of nginxconf.py, the final document of properties.py), on a
# generated site file of BIG bytes and a properties file of 3.8 MiB of key
# lines (the edited file stays under the 4 MiB a later uninstall reads), against a site file of SMALL bytes and a 10 KiB properties file, in
# the same run, from a rendered payload into a temp root (no service is
# touched). A linear install costs at most BIG/SMALL times as much (less:
# the interpreter's start and the part's own files are a fixed cost).
# Checked: every server block gets the include, the properties file ends with the document, and
# uninstall gives back every byte of both files. Sourced by run.sh.

#
# Row 12b (issue 43): the deny rule in a real nginx with `merge_slashes off`
# (the RAW site of test/helpers/nginx-sandbox.bash): N requests of a hostile
# path (`/.env`, 4000 slashes, `x`: the old rule backtracked exponentially
# on it, and nginx's PCRE gave up with a 500) against N requests of a path
# as long (/a 2000 times, then /x), each batch one curl over one kept-alive
# connection.
# Checked: the hostile path is answered 404 every time (not denied, no 500).

# shellcheck source=../../test/helpers/render-payload.bash
source "${BENCH_REPO}/test/helpers/render-payload.bash"
# shellcheck source=../../test/helpers/nginx-sandbox.bash
source "${BENCH_REPO}/test/helpers/nginx-sandbox.bash"
# Prints server blocks (comments and quoted strings with braces and
# semicolons, locations, a regex in quotes) until at least BYTES are out.
bench_nginx_site() {
  local bytes="$1" i=0 block
  # shellcheck disable=SC2016 # nginx's variables, not the shell's
  block='server { # block {} in a comment; "quotes"
    listen 127.0.0.1:8080;
    server_name "s.test" www.s.test;
    add_header X-A "a;b{c}d" always;
    add_header X-B a}b;
    set $v "${host}x";
    location /api/ { proxy_pass http://127.0.0.1:9090; proxy_set_header Host $host; }
    location ~ "^/a{1,2}/(x|y)$" { return 200 '"'"'}{'"'"'; }
    location /static/ { root /var/www/static; expires 7d; try_files $uri =404; }
    location = /health { access_log off; return 200 "ok\n"; }
    # a comment line with ; and } and { and "quotes", padding padding padding
    location / { try_files $uri $uri/ /index.html; }
}
'
  while ((i * ${#block} < bytes)); do
    printf '%s' "${block}"
    i=$((i + 1))
  done
}

# Prints key lines of APP_PROPERTIES (the key set to true, each line its own
# record: the shape that was quadratic) until at least BYTES are out.
bench_props_file() {
  python3 -c 'import sys; n = int(sys.argv[1]) // 39 + 1; sys.stdout.write("spring.web.resources.add-mappings=on\n" * n)' "$1"
}

# VAR <- median microseconds of RUNS installs of part web with the site file
# SITE and the properties file PROPS (each run: a fresh root, then
# uninstall, checked byte for byte).
bench_web_time() {
  local -n _bench_web_out="$1"
  local payload="$2" site="$3" props="$4" runs="$5" k us root
  local -a all=()
  for ((k = 0; k < runs; k++)); do
    root="${payload%/*}/root"
    rm -rf "${root}"
    mkdir -p "${root}/run" "${root}/etc/nginx/sites-enabled" "${root}/opt/app"
    cp "${site}" "${root}/etc/nginx/sites-enabled/site"
    cp "${props}" "${root}/opt/app/application.properties"
    bench_time_us us "${payload}/install" install --part web --root "${root}" --settings "${payload%/*}/web.conf" >/dev/null
    ((BENCH_RC == 0)) || bench_error "nginx: install --part web failed on ${site##*/}"
    all+=("${us}")
    ((k > 0)) || bench_web_check "${payload}" "${root}" "${site}" "${props}"
  done
  _bench_web_out="$(bench_median "${all[@]}")"
}

bench_web_check() {
  local payload="$1" root="$2" site="$3" props="$4" blocks locations added
  blocks="$(grep -c '^server {' "${site}")"
  locations="$(grep -cE '^[[:space:]]+location ' "${site}")"
  added="$(grep -c 'hostguard-deny.conf; # hostguard' "${root}/etc/nginx/sites-enabled/site")"
  ((added == blocks + locations)) ||
    bench_error "nginx: ${added} includes added to ${blocks} server blocks with ${locations} locations"
  [[ "$(tail -n 2 "${root}/opt/app/application.properties")" == $'#---\nspring.web.resources.add-mappings=false' ]] ||
    bench_error "nginx: the properties file does not end with the document install appends"
  "${payload}/install" uninstall --part web --root "${root}" >/dev/null || bench_error "nginx: uninstall failed"
  cmp -s "${site}" "${root}/etc/nginx/sites-enabled/site" || bench_error "nginx: uninstall did not give back the site"
  cmp -s "${props}" "${root}/opt/app/application.properties" || bench_error "nginx: uninstall did not give back the properties"
}

bench_nginx() {
  local work="$1" big="$2" small="$3" runs="$4" dir big_us small_us met=no props_big=$((38 * 1024 * 1024 / 10))
  bench_log "install --part web: a ${big}-byte site file and a ${props_big}-byte properties file against ${small}-byte ones, ${runs} run(s) each"
  dir="${work}/nginx"
  mkdir -p "${dir}"
  render_payload "${dir}/payload" >/dev/null
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site\nAPP_PROPERTIES=/opt/app/application.properties\n' >"${dir}/web.conf"
  bench_nginx_site "${big}" >"${dir}/big"
  bench_nginx_site "${small}" >"${dir}/small"
  bench_props_file "${props_big}" >"${dir}/props-big"
  bench_props_file "${small}" >"${dir}/props-small"
  bench_web_time big_us "${dir}/payload" "${dir}/big" "${dir}/props-big" "${runs}"
  bench_web_time small_us "${dir}/payload" "${dir}/small" "${dir}/props-small" "${runs}"
  ((big_us <= 1000000 * 5)) && ((big_us <= small_us * big / small)) && met=yes
  bench_row "12 web install" \
    "install --part web: $((big / 1024)) KiB site file ($(grep -c '^server {' "${dir}/big") server blocks) and $((props_big / 1024)) KiB of key lines, median of ${runs}" \
    "$(bench_fmt_us "${big_us}")" "$(bench_fmt_us "${small_us}"), $((small / 1024)) KiB each" \
    "$(bench_ratio "${big_us}" "${small_us}")" "<= size ratio ($((big / small))x)" "${met}"
  if command -v nginx >/dev/null; then
    bench_deny_slashes "${work}" 200
  else
    bench_row "12b deny rule, merge_slashes off" "-" "-" "-" "-" "<= 3x" "not measured: nginx is not installed"
  fi
}

# Microseconds into the variable named OUT for N GETs of PATH on the RAW site; checks every status is WANT.
bench_deny_batch() {
  local -n bench_out="$1"
  local n="$2" path="$3" want="$4" url i start end codes
  url="http://127.0.0.1:${NGINX_PORTS[RAW]}${path}"
  local -a args=()
  for ((i = 0; i < n; i++)); do args+=(-o /dev/null "${url}"); done
  bench_now_us start
  codes="$(curl -s --path-as-is --max-time 600 -w '%{http_code}\n' "${args[@]}" | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')"
  bench_now_us end
  [[ "${codes}" == "${want}x${n} " ]] || bench_error "deny rule with merge_slashes off: ${path:0:20}... answered ${codes}, not ${want} every time"
  # shellcheck disable=SC2034 # a name reference: the caller's variable
  bench_out=$((end - start))
}

bench_deny_slashes() {
  local work="$1" n="$2" slashes half hostile_us plain_us met=no
  bench_log "deny rule with merge_slashes off: ${n} requests of a path of 4000 slashes against ${n} of a path as long"
  printf -v slashes '%4000s' ''
  printf -v half '%2000s' ''
  nginx_sandbox_write_sites "${work}/deny-nginx" "${BENCH_REPO}/scripts/nginx/hostguard-deny.conf" >/dev/null
  bench_cleanup_add nginx_sandbox_stop
  if ! nginx_sandbox_start; then
    bench_error "deny rule: the test nginx did not start"
    return 0
  fi
  bench_deny_batch plain_us "${n}" "${half// //a}/x" 404
  bench_deny_batch hostile_us "${n}" "/.env${slashes// //}x" 404
  nginx_sandbox_stop
  BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")
  ((hostile_us <= plain_us * 3)) && met=yes
  bench_row "12b deny rule, merge_slashes off" \
    "${n} GETs of /.env + 4000 slashes + x (one connection); reference: ${n} GETs of a path as long, /a 2000 times + /x" \
    "$(bench_fmt_us "${hostile_us}")" "$(bench_fmt_us "${plain_us}")" \
    "$(bench_ratio "${hostile_us}" "${plain_us}")" "<= 3x" "${met}"
}
