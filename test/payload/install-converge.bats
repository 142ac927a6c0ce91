#!/usr/bin/env bats
# Host settings converge (issue 41): an install with changed settings undoes the
# edits of users' files the old settings made (the include lines of
# NGINX_SERVER_CONF, the Spring document of APP_PROPERTIES) in the same run,
# so the root ends as a fresh install of the new settings would leave it, the
# old files byte for byte as before hostguard, and uninstall still undoes
# exactly what remains. In a temporary root, and once with root / in a sandbox
# where the real nginx -t checks the result.

load helpers/install

setup() {
  hg_make_payload
  hg_make_root
  mkdir -p "${ROOT}/etc/nginx/sites-available" "${ROOT}/etc/nginx/sites-enabled" "${ROOT}/etc/nginx/conf.d" \
    "${ROOT}/opt/app"
  printf 'server {\n\tlisten 80;\n\tserver_name a.example;\n}\n\nserver{\n    listen 443 ssl;\n    location / { return 200; }\n}\n' \
    >"${ROOT}/etc/nginx/sites-available/site"
  ln -s /etc/nginx/sites-available/site "${ROOT}/etc/nginx/sites-enabled/site"
  printf '# another app\nserver {\n    listen 8080;\n    server_name b.example;\n}\n' >"${ROOT}/etc/nginx/conf.d/other.conf"
  printf '# Spring\nserver.port=8080\nlogging.level.root=INFO\n' >"${ROOT}/opt/app/application.properties"
  chown nobody:nogroup "${ROOT}/opt/app/application.properties"
  chmod 0640 "${ROOT}/opt/app/application.properties"
  OLD="${BATS_TEST_TMPDIR}/old.conf"
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site\nAPP_PROPERTIES=/opt/app/application.properties\nSLACK_CHANNEL=ops\n' >"${OLD}"
  NEW="${BATS_TEST_TMPDIR}/new.conf"
  printf 'NGINX_SERVER_CONF=/etc/nginx/conf.d/other.conf\nSLACK_CHANNEL=ops\n' >"${NEW}"
  NONE="${BATS_TEST_TMPDIR}/none.conf"
  printf 'SLACK_CHANNEL=ops\n' >"${NONE}"
}

# The listing of a root without the store's records, and its web part's records apart.
files_of() {
  hg_listing "$1" | grep -v '^record|'
}

web_records_of() {
  hg_store_records "$1" | grep '^web|' || true
}

@test "moving NGINX_SERVER_CONF and emptying APP_PROPERTIES: the old edits go in the same install, as a fresh install of the new settings" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/pristine"
  cp -a "${ROOT}" "${BATS_TEST_TMPDIR}/fresh"
  cp -p "${ROOT}/etc/nginx/sites-available/site" "${BATS_TEST_TMPDIR}/site.before"
  cp -p "${ROOT}/opt/app/application.properties" "${BATS_TEST_TMPDIR}/props.before"
  hg_install install --settings "${OLD}" >/dev/null
  grep -q 'hostguard-deny.conf; # hostguard' "${ROOT}/etc/nginx/sites-available/site"
  grep -q '^#---$' "${ROOT}/opt/app/application.properties"
  run hg_install install --settings "${NEW}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "removed the deny include from /etc/nginx/sites-available/site"
  hg_assert_contains "${output}" "removed the final document spring.web.resources.add-mappings=false from /opt/app/application.properties; restart the application to apply it"
  hg_assert_contains "${output}" "added the deny include to 1 server and location block(s) of /etc/nginx/conf.d/other.conf"
  # The old files as they were before hostguard, owner and mode included.
  cmp "${BATS_TEST_TMPDIR}/site.before" "${ROOT}/etc/nginx/sites-available/site"
  cmp "${BATS_TEST_TMPDIR}/props.before" "${ROOT}/opt/app/application.properties"
  hg_assert_mode_owner "${ROOT}/opt/app/application.properties" "640 nobody:nogroup"
  # The same tree and web records as a fresh install of the new settings.
  local converged="${ROOT}"
  ROOT="${BATS_TEST_TMPDIR}/fresh"
  hg_install install --settings "${NEW}" >/dev/null
  hg_assert_same_listing <(files_of "${ROOT}") <(files_of "${converged}")
  hg_assert_same_listing <(web_records_of "${ROOT}") <(web_records_of "${converged}")
  # A second install changes nothing; uninstall undoes exactly what remains.
  ROOT="${converged}"
  run hg_install install --settings "${NEW}"
  [[ "${status}" -eq 0 ]]
  hg_assert_not_contains "${output}" "removed"
  hg_assert_not_contains "${output}" "added the deny include"
  hg_install uninstall >/dev/null
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/pristine" <(hg_listing "${ROOT}")
}

@test "emptying both settings takes every edit out; setting them again puts them back" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/pristine"
  hg_install install --settings "${OLD}" >/dev/null
  hg_install install --settings "${NONE}" >/dev/null
  ! grep -q 'hostguard' "${ROOT}/etc/nginx/sites-available/site"
  ! grep -q '^#---$' "${ROOT}/opt/app/application.properties"
  [[ -z "$(hg_store_records "${ROOT}" | grep -E '^web\|(include|props)\|')" ]]
  run hg_install install --settings "${OLD}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "appended a final document spring.web.resources.add-mappings=false to /opt/app/application.properties; restart the application to apply it"
  [[ "$(grep -c 'hostguard-deny.conf; # hostguard' "${ROOT}/etc/nginx/sites-available/site")" -eq 3 ]]
  hg_install uninstall >/dev/null
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/pristine" <(hg_listing "${ROOT}")
}

@test "a file the site no longer includes loses its include; the site keeps its own" {
  printf 'server {\n    listen 8081;\n}\n' >"${ROOT}/etc/nginx/conf.d/part.conf"
  printf 'include /etc/nginx/conf.d/part.conf;\n' >>"${ROOT}/etc/nginx/sites-available/site"
  cp -p "${ROOT}/etc/nginx/conf.d/part.conf" "${BATS_TEST_TMPDIR}/part.before"
  hg_install install --settings "${OLD}" >/dev/null
  grep -q 'hostguard-deny.conf; # hostguard' "${ROOT}/etc/nginx/conf.d/part.conf"
  local site_lines
  site_lines="$(grep -c 'hostguard-deny.conf; # hostguard' "${ROOT}/etc/nginx/sites-available/site")"
  # The admin drops the include line (the file stays): the next install takes the edit out of it.
  sed -i '/conf.d\/part.conf/d' "${ROOT}/etc/nginx/sites-available/site"
  run hg_install install --settings "${OLD}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "removed the deny include from /etc/nginx/conf.d/part.conf"
  cmp "${BATS_TEST_TMPDIR}/part.before" "${ROOT}/etc/nginx/conf.d/part.conf"
  [[ "$(grep -c 'hostguard-deny.conf; # hostguard' "${ROOT}/etc/nginx/sites-available/site")" -eq "${site_lines}" ]]
}

@test "a new NGINX_SERVER_CONF that cannot take the include is refused before the old edits are undone" {
  hg_install install --settings "${OLD}" >/dev/null
  # The new site cannot take the include (no server block).
  printf '# nothing served here\n' >"${ROOT}/etc/nginx/conf.d/other.conf"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/installed"
  run hg_install install --part web --settings "${NEW}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "no server block"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/installed" <(hg_listing "${ROOT}")
}

@test "root /: moving NGINX_SERVER_CONF to another file, the real nginx -t checks the result and the default site is as before (sandboxed)" {
  command -v nginx >/dev/null && command -v unshare >/dev/null || { echo "nginx or unshare missing (.ci/run installs it): the test cannot run" >&2; false; }
  [[ -L /etc/nginx/sites-enabled/default ]] || { echo "no default nginx site to edit (.ci/run installs it): the test cannot run" >&2; false; }
  SANDBOX="${BATS_TEST_TMPDIR}/live"
  hg_root_sandbox_make "${SANDBOX}"
  printf 'server {\n    listen 8081;\n    server_name other.example;\n}\n' >"${SANDBOX}/etc-nginx/conf.d/hg-other.conf"
  hg_listing "${SANDBOX}/etc-nginx" >"${BATS_TEST_TMPDIR}/before"
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/default\n' >"${BATS_TEST_TMPDIR}/live.conf"
  printf 'NGINX_SERVER_CONF=/etc/nginx/conf.d/hg-other.conf\n' >"${BATS_TEST_TMPDIR}/moved.conf"
  hg_root_sandbox "${SANDBOX}" "${PAYLOAD}/install" install --part web --root / --settings "${BATS_TEST_TMPDIR}/live.conf" >/dev/null
  grep -q 'hostguard-deny.conf; # hostguard' "${SANDBOX}/etc-nginx/sites-available/default"
  run hg_root_sandbox "${SANDBOX}" "${PAYLOAD}/install" install --part web --root / --settings "${BATS_TEST_TMPDIR}/moved.conf"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "removed the deny include from /etc/nginx/sites-available/default"
  hg_assert_contains "${output}" "nginx configuration tested"
  cmp "/etc/nginx/sites-available/default" "${SANDBOX}/etc-nginx/sites-available/default"
  grep -q 'hostguard-deny.conf; # hostguard' "${SANDBOX}/etc-nginx/conf.d/hg-other.conf"
  run hg_root_sandbox "${SANDBOX}" "${PAYLOAD}/install" uninstall --part web --root /
  [[ "${status}" -eq 0 ]]
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" <(hg_listing "${SANDBOX}/etc-nginx")
}

@test "containerMonitor switched off: the empty log its install made goes, a log with lines stays" {
  hg_install install --settings "${NONE}" >/dev/null
  [[ -f "${ROOT}/var/log/hostguard/container-monitor.log" ]]
  printf 'CONTAINER_MONITOR=false\nSLACK_CHANNEL=ops\n' >"${BATS_TEST_TMPDIR}/off.conf"
  run hg_install install --settings "${BATS_TEST_TMPDIR}/off.conf"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ ! -e "${ROOT}/var/log/hostguard/container-monitor.log" ]]
  [[ -z "$(hg_store_records "${ROOT}" | grep -F 'container-monitor.log')" ]]
  # On again, it has lines, off again: it is kept (and uninstall keeps it too).
  hg_install install --settings "${NONE}" >/dev/null
  printf 'a line\n' >>"${ROOT}/var/log/hostguard/container-monitor.log"
  hg_install install --settings "${BATS_TEST_TMPDIR}/off.conf" >/dev/null
  [[ -s "${ROOT}/var/log/hostguard/container-monitor.log" ]]
}
