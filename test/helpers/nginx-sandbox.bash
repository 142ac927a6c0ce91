# shellcheck shell=bash
# Bats helpers: a real nginx on 127.0.0.1 with a temporary prefix, config,
# pid, logs and temp dirs (nothing under /etc/nginx or /var is touched).
# Load with `load ../helpers/nginx-sandbox`.
#
#   nginx_sandbox_main DIR              prints the main context (one worker,
#       pid and error log under DIR)
#   nginx_sandbox_http_head DIR [LOG]   prints the http block's common head
#   nginx_sandbox_write_sites DIR SNIPPET   writes DIR/nginx.conf (combined
#       access log DIR/logs/access.log; sets NGINX_DIR, NGINX_ACCESS_LOG) and
#       DIR/www, with four servers on free loopback ports whose locations
#       could skip a location-based rule: PLAIN (the snippet first), STATIC (`location ^~ /static/`), PHP (`location ~
#       \.php$` and its own `location /.well-known/` before the snippet) and
#       HTTPS (ssl, self-signed certificate made here), and RAW (a site with
#       `merge_slashes off`: $uri keeps every slash); sets NGINX_PORTS
#       (name -> port) and NGINX_PORT (PLAIN)
#   nginx_sandbox_test               `nginx -t` on that config
#   nginx_sandbox_start              starts it, waits (at most 10 s) until it answers
#   nginx_sandbox_stop               stops it (safe to call twice; use in teardown)
# shellcheck source=process.bash
source "${BASH_SOURCE[0]%/*}/process.bash"

nginx_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The main context of a test nginx: one worker, run as root, pid and error
# log under DIR.
nginx_sandbox_main() {
  local dir="$1"
  cat <<CONF
worker_processes 1;
user root;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log info;
events { worker_connections 64; }
CONF
}

# The http block's common head (temp paths under DIR, combined access log
# LOG, by default NGINX_ACCESS_LOG).
nginx_sandbox_http_head() {
  local dir="$1" log="${2:-${NGINX_ACCESS_LOG:-}}"
  cat <<CONF
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path ${dir}/tmp/body;
    proxy_temp_path ${dir}/tmp/proxy;
    fastcgi_temp_path ${dir}/tmp/fastcgi;
    scgi_temp_path ${dir}/tmp/scgi;
    uwsgi_temp_path ${dir}/tmp/uwsgi;
    access_log ${log} combined;
CONF
}

nginx_sandbox_write_sites() {
  local dir="$1" snippet="$2" name
  mkdir -p "${dir}/www/.well-known/acme-challenge" "${dir}/www/static" "${dir}/tmp" "${dir}/logs"
  printf 'hello\n' >"${dir}/www/index.html"
  printf 'token\n' >"${dir}/www/.well-known/acme-challenge/x"
  printf 'Contact: mailto:security@example.test\n' >"${dir}/www/.well-known/security.txt"
  printf 'app\n' >"${dir}/www/static/app.js"
  # Files the rule must hide even though they exist and a location serves them.
  printf 'SECRET=1\n' >"${dir}/www/static/.env"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -keyout "${dir}/key.pem" -out "${dir}/cert.pem" 2>/dev/null
  NGINX_DIR="${dir}"
  NGINX_ACCESS_LOG="${dir}/logs/access.log"
  declare -gA NGINX_PORTS=()
  for name in PLAIN STATIC PHP HTTPS RAW; do
    NGINX_PORTS[${name}]="$(nginx_free_port)"
  done
  NGINX_PORT="${NGINX_PORTS[PLAIN]}"
  cat >"${dir}/nginx.conf" <<CONF
# Test-only nginx: everything under ${dir}.
$(nginx_sandbox_main "${dir}")
http {
$(nginx_sandbox_http_head "${dir}")
    server {
        listen 127.0.0.1:${NGINX_PORTS[PLAIN]};
        root ${dir}/www;
        include ${snippet};
        location / {
            try_files \$uri \$uri/ =404;
        }
    }
    server {
        listen 127.0.0.1:${NGINX_PORTS[STATIC]};
        root ${dir}/www;
        include ${snippet};
        location ^~ /static/ {
            try_files \$uri =404;
        }
        location ~ /\. {
            return 200 "a later regex location\n";
        }
        location / {
            try_files \$uri \$uri/ =404;
        }
    }
    server {
        listen 127.0.0.1:${NGINX_PORTS[PHP]};
        root ${dir}/www;
        location ~ \.php\$ {
            return 200 "php\n";
        }
        location /.well-known/ {
            try_files \$uri =404;
        }
        include ${snippet};
        location / {
            try_files \$uri \$uri/ =404;
        }
    }
    server {
        listen 127.0.0.1:${NGINX_PORTS[HTTPS]} ssl;
        ssl_certificate ${dir}/cert.pem;
        ssl_certificate_key ${dir}/key.pem;
        root ${dir}/www;
        include ${snippet};
        location ^~ /static/ {
            try_files \$uri =404;
        }
        location / {
            try_files \$uri \$uri/ =404;
        }
    }
    server {
        listen 127.0.0.1:${NGINX_PORTS[RAW]};
        merge_slashes off;
        root ${dir}/www;
        include ${snippet};
        location / {
            include ${snippet};
            try_files \$uri \$uri/ =404;
        }
    }
}
CONF
}

nginx_sandbox_cmd() {
  nginx -p "${NGINX_DIR}" -c "${NGINX_DIR}/nginx.conf" -e "${NGINX_DIR}/logs/error.log" "$@"
}

nginx_sandbox_test() {
  nginx_sandbox_cmd -t
}

nginx_sandbox_start() {
  nginx_sandbox_cmd 3>&- || return 1
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:${NGINX_PORT}/" && return 0
    sleep 0.1
  done
  echo "nginx did not answer on 127.0.0.1:${NGINX_PORT} within 10 s" >&2
  cat "${NGINX_DIR}/logs/error.log" >&2
  return 1
}

nginx_sandbox_stop() {
  [[ -n "${NGINX_DIR:-}" && -s "${NGINX_DIR}/nginx.pid" ]] || return 0
  local pid
  pid="$(<"${NGINX_DIR}/nginx.pid")"
  stop_process "${pid}" QUIT
  rm -f "${NGINX_DIR}/nginx.pid"
}
