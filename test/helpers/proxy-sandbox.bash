# shellcheck shell=bash
# A server's nginx behind a proxy's nginx, in the fail2ban sandbox's network
# namespace (F2B_NS, test/helpers/fail2ban-sandbox.bash): what
# test/payload/proxy-ban.bats and the bench's proxy row (bench/lib/proxyban.bash)
# both run. Sourced, never run.
#
#   proxy_sandbox_nginx DIR ARGS...     nginx with prefix, config and error log under DIR, in F2B_NS
#   proxy_sandbox_write_nginx WEB ROOT SRV PRX SERVER PROXY
#       SRV/nginx.conf: the server on SERVER:80 with part web's files as
#       `install --part web --root WEB` placed them (the conf.d drop-in in the
#       http context, its ban list moved under ROOT; the deny snippet at the
#       top of the server and of its location, as install's include puts
#       it), its access log the jail's (F2B_ACCESS_LOG), and the main-context
#       worker_shutdown_timeout drop-in when install placed it (WEB's
#       nginx.conf includes modules-enabled/); PRX/nginx.conf: the
#       proxy on PROXY:8080 adding X-Forwarded-For, connecting from PROXY;
#       with PROXY_DUAL_STACK=1 it listens on [::]:8080 with ipv6only=off,
#       so an IPv4 client reaches the server as ::ffff:a.b.c.d
#   proxy_sandbox_install_action PAYLOAD ROOT SRV
#       the rendered hostguard-nginx-ban Python action (its package under
#       ROOT, as fail2ban_notifier_in placed it), the jail's action line given
#       nginx's paths in the sandbox
# shellcheck source=nginx-sandbox.bash
source "${BASH_SOURCE[0]%/*}/nginx-sandbox.bash"

proxy_sandbox_nginx() {
  local dir="$1"
  shift
  ip netns exec "${F2B_NS}" nginx -p "${dir}" -c "${dir}/nginx.conf" -e "${dir}/logs/error.log" "$@"
}

proxy_sandbox_write_nginx() {
  local web="$1" root="$2" srv="$3" prx="$4" server="$5" proxy="$6" dir
  for dir in "${srv}" "${prx}"; do
    mkdir -p "${dir}/tmp" "${dir}/logs" "${dir}/www" "${dir}/conf.d"
  done
  printf 'hello\n' >"${srv}/www/index.html"
  ln -s "${F2B_ACCESS_LOG}" "${srv}/logs/access.log"
  cp "${web}/etc/nginx/snippets/hostguard-deny.conf" "${srv}/deny.conf"
  if [[ -f "${web}/etc/nginx/conf.d/hostguard-realip.conf" ]]; then
    sed "s#/var/lib/hostguard/#${root}/var/lib/hostguard/#" "${web}/etc/nginx/conf.d/hostguard-realip.conf" \
      >"${srv}/conf.d/hostguard-realip.conf"
  fi
  local main_include=""
  if [[ -f "${web}/etc/nginx/modules-enabled/hostguard-worker-shutdown.conf" ]]; then
    mkdir -p "${srv}/modules-enabled"
    cp "${web}/etc/nginx/modules-enabled/hostguard-worker-shutdown.conf" "${srv}/modules-enabled/"
    main_include="include ${srv}/modules-enabled/*.conf;"
  fi
  cat >"${srv}/nginx.conf" <<CONF
$(nginx_sandbox_main "${srv}")
${main_include}
http {
$(nginx_sandbox_http_head "${srv}" "${srv}/logs/access.log")
    include ${srv}/conf.d/*.conf;
    server {
        listen ${server}:80;
        root ${srv}/www;
        include ${srv}/deny.conf;
        location / {
            include ${srv}/deny.conf;
            try_files \$uri \$uri/ =404;
        }
    }
}
CONF
  local listen="${proxy}:8080"
  [[ "${PROXY_DUAL_STACK:-}" != 1 ]] || listen="[::]:8080 ipv6only=off"
  cat >"${prx}/nginx.conf" <<CONF
$(nginx_sandbox_main "${prx}")
http {
$(nginx_sandbox_http_head "${prx}" "${prx}/logs/access.log")
    server {
        listen ${listen};
        location / {
            proxy_pass http://${server}:80;
            proxy_bind ${proxy};
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_connect_timeout 2s;
        }
    }
}
CONF
}

proxy_sandbox_install_action() {
  local payload="$1" root="$2" srv="$3"
  cp -r "${payload}/hostguard" "${root}/usr/local/lib/hostguard/"
  cp "${payload}/fail2ban/action.d/hostguard-nginx-ban.py" "${F2B_CONF}/action.d/"
  # The packaged action as is; the jail hands it nginx's paths in the sandbox.
  sed -i "s#^\( *hostguard-nginx-ban\.py\)\$#\1[nginx_pid=\"${srv}/nginx.pid\", nginx_opts=\"-p ${srv} -c ${srv}/nginx.conf -e ${srv}/logs/error.log\"]#" \
    "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local"
}
