# shellcheck shell=bash
# Benchmark 12 (issue 18): the nginx include's scan and edit of a large site
# file. scripts/lib/nginx-conf.sh's ngx_add_include (hostguard/nginxconf.py:
# nginx's lexer, then the splice) on a generated site file of BIG bytes
# against one of SMALL bytes, the same blocks repeated: a linear scan costs
# about BIG/SMALL times as much (less: the interpreter's start is a fixed cost). Checked: every
# server block gets the include and removing it gives back every byte.
# Sourced by run.sh.

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

# VAR <- median microseconds of RUNS runs of ngx_add_include on FILE.
bench_nginx_time() {
  local -n _bench_nginx_out="$1"
  local file="$2" runs="$3" k us
  local -a all=()
  for ((k = 0; k < runs; k++)); do
    bench_time_us us ngx_add_include "${file}" "${file}.added" /etc/nginx/sites-enabled/bench
    ((BENCH_RC == 0)) || bench_error "nginx: ngx_add_include refused ${file##*/}: ${NGX_ERROR}"
    all+=("${us}")
  done
  _bench_nginx_out="$(bench_median "${all[@]}")"
}

bench_nginx() {
  local work="$1" big="$2" small="$3" runs="$4" dir big_us small_us blocks locations met=no
  bench_log "nginx include: a ${big}-byte site file against a ${small}-byte one, ${runs} run(s) each"
  dir="${work}/nginx"
  mkdir -p "${dir}"
  # shellcheck source=../../scripts/lib/nginx-conf.sh
  declare -F ngx_add_include >/dev/null || source "${BENCH_REPO}/scripts/lib/nginx-conf.sh"
  bench_nginx_site "${big}" >"${dir}/big"
  bench_nginx_site "${small}" >"${dir}/small"
  bench_nginx_time big_us "${dir}/big" "${runs}"
  # One include at the top of every server block and of every location in it.
  blocks="$(grep -c '^server {' "${dir}/big")"
  locations="$(grep -cE '^[[:space:]]+location ' "${dir}/big")"
  ((NGX_ADDED == blocks + locations)) ||
    bench_error "nginx: ${NGX_ADDED} includes added to ${blocks} server blocks with ${locations} locations"
  ngx_remove_include "${dir}/big.added" "${dir}/big.removed" "${NGX_TOKEN}"
  cmp -s "${dir}/big" "${dir}/big.removed" || bench_error "nginx: removing the include did not give back every byte"
  bench_nginx_time small_us "${dir}/small" "${runs}"
  ((big_us <= 1000000)) && ((big_us <= small_us * 100)) && met=yes
  bench_row "12 nginx include" \
    "scan and edit of a $((big / 1024)) KiB site file (${blocks} server blocks), median of ${runs} (bytes: $(($(stat -c %s "${dir}/big") / $(stat -c %s "${dir}/small")))x the reference)" \
    "$(bench_fmt_us "${big_us}")" "$(bench_fmt_us "${small_us}"), $((small / 1024)) KiB" \
    "$(bench_ratio "${big_us}" "${small_us}")" "<= 1 s and <= 100x" "${met}"
}
