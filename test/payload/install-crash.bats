#!/usr/bin/env bats
# A crash at any point: install and uninstall are killed (SIGKILL to their
# whole process group) at points spread over a run's measured length, then
# the next run must complete exactly: an install resumed after a killed one
# leaves the same tree as an install never killed, and an uninstall (after a
# killed install, or after a killed uninstall) leaves the root exactly as
# before, user files included. No temp file survives the next run, and the
# webhook is never left outside /etc/hostguard.

load helpers/install

readonly HOOK_URL="https://hooks.example.test/services/T000/B000/s3cr3t-crash-4711"

setup() {
  hg_make_payload
  PRISTINE="${BATS_TEST_TMPDIR}/pristine"
  mkdir -p "${PRISTINE}/etc/nginx/sites-enabled" "${PRISTINE}/opt/app" "${PRISTINE}/etc/fail2ban/filter.d"
  printf 'server {\n    listen 80;\n}\nserver { listen 81; }\n' >"${PRISTINE}/etc/nginx/sites-enabled/site"
  printf 'server.port=8080\nspring.web.resources.add-mappings=true\n' >"${PRISTINE}/opt/app/application.properties"
  # A user's own file at a destination (backed up) and a dangling symlink at
  # another (restored as a link).
  printf '# the admin own filter\n' >"${PRISTINE}/etc/fail2ban/filter.d/nginx-bad-request.local"
  mkdir -p "${PRISTINE}/etc/logrotate.d"
  ln -s /nowhere/hostguard "${PRISTINE}/etc/logrotate.d/hostguard"
  SETTINGS="${BATS_TEST_TMPDIR}/settings.conf"
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site\nAPP_PROPERTIES=/opt/app/application.properties\n' >"${SETTINGS}"
  hg_listing "${PRISTINE}" >"${BATS_TEST_TMPDIR}/pristine.list"
}

fresh_root() {
  ROOT="${BATS_TEST_TMPDIR}/root"
  rm -rf "${ROOT}"
  cp -a "${PRISTINE}" "${ROOT}"
}

# Runs the installer with ARGS in its own process group and kills the whole
# group with SIGKILL after SECONDS (unless it ended before).
run_killed_after() {
  local seconds="$1" pid
  shift
  setsid "${PAYLOAD}/install" "$@" --root "${ROOT}" >/dev/null 2>&1 &
  pid=$!
  sleep "${seconds}"
  kill -KILL -- "-${pid}" 2>/dev/null || true
  wait "${pid}" 2>/dev/null || true
}

# Seconds a command takes, as a decimal.
measure() {
  local start end
  start="${EPOCHREALTIME}"
  "$@" >/dev/null
  end="${EPOCHREALTIME}"
  awk -v a="${start}" -v b="${end}" 'BEGIN { printf "%.3f\n", b - a }'
}

assert_pristine() {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/now.list"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/pristine.list" "${BATS_TEST_TMPDIR}/now.list"
}

# How many manifest records the transaction store holds (none: no store).
manifest_records() {
  python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM record").fetchone()[0])' \
    "${ROOT}/var/lib/hostguard/install.db" 2>/dev/null || echo 0
}

no_temp_left() {
  local left
  left="$(find "${ROOT}" -name '.hostguard-tmp.*')"
  [[ -z "${left}" ]] || { echo "temp files left: ${left}" >&2; return 1; }
}

@test "crash: install killed at many points; the next install completes exactly, uninstall restores the root" {
  local points=8 k at length
  fresh_root
  length="$(measure hg_install install --settings "${SETTINGS}")"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/installed.list"
  echo "one install takes ${length} s"
  for ((k = 1; k <= points; k++)); do
    at="$(awk -v l="${length}" -v k="${k}" -v n="${points}" 'BEGIN { printf "%.3f\n", l * k / (n + 1) }')"
    fresh_root
    run_killed_after "${at}" install --settings "${SETTINGS}"
    echo "killed install at ${at} s: $(manifest_records) manifest records"
    if ((k % 2)); then
      # Resumed: the same tree as an install never killed.
      hg_install install --settings "${SETTINGS}" >/dev/null
      hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/resumed.list"
      hg_assert_same_listing "${BATS_TEST_TMPDIR}/installed.list" "${BATS_TEST_TMPDIR}/resumed.list"
    fi
    # Uninstall right after the crash (or after the resumed install).
    hg_install uninstall >/dev/null
    assert_pristine
  done
}

@test "crash: uninstall killed at many points; the next uninstall leaves the root exactly as before" {
  local points=6 k at length
  fresh_root
  hg_install install --settings "${SETTINGS}" >/dev/null
  length="$(measure hg_install uninstall)"
  assert_pristine
  echo "one uninstall takes ${length} s"
  for ((k = 1; k <= points; k++)); do
    at="$(awk -v l="${length}" -v k="${k}" -v n="${points}" 'BEGIN { printf "%.3f\n", l * k / (n + 1) }')"
    fresh_root
    hg_install install --settings "${SETTINGS}" >/dev/null
    run_killed_after "${at}" uninstall
    echo "killed uninstall at ${at} s: $(manifest_records) manifest records left"
    hg_install uninstall >/dev/null
    assert_pristine
  done
}

@test "crash: set-webhook killed at many points leaves the URL nowhere but webhook.conf, and no temp file after the next run" {
  local k
  fresh_root
  hg_install install --part base --settings "${SETTINGS}" >/dev/null
  # The installer's temp directory is the test's own, to be searched too.
  local tmp="${BATS_TEST_TMPDIR}/tmp"
  mkdir -p "${tmp}"
  for ((k = 0; k < 12; k++)); do
    rm -f "${ROOT}/etc/hostguard/webhook.conf"
    printf '%s\n' "${HOOK_URL}" >"${BATS_TEST_TMPDIR}/hook"
    TMPDIR="${tmp}" setsid "${PAYLOAD}/install" set-webhook --root "${ROOT}" <"${BATS_TEST_TMPDIR}/hook" >/dev/null 2>&1 &
    local pid=$!
    sleep "0.0${k}"
    kill -KILL -- "-${pid}" 2>/dev/null || true
    wait "${pid}" 2>/dev/null || true
    rm -f "${BATS_TEST_TMPDIR}/hook"
    # Wherever the URL is, it is inside /etc/hostguard, root-only.
    local holder
    while IFS= read -r holder; do
      [[ "${holder}" == "${ROOT}/etc/hostguard/"* ]] || { echo "URL found in ${holder}" >&2; false; }
      [[ "$(stat -c '%a %u' "${holder}")" == "600 0" ]]
    done < <(grep -rlF 's3cr3t-crash' "${ROOT}" "${tmp}" 2>/dev/null || true)
    [[ "$(stat -c '%a %u' "${ROOT}/etc/hostguard")" == "700 0" ]]
  done
  # The next run of any command removes a half-written temp file.
  hg_install uninstall --part web >/dev/null
  no_temp_left
  printf '%s\n' "${HOOK_URL}" | hg_install set-webhook >/dev/null
  no_temp_left
  hg_install uninstall >/dev/null
  assert_pristine
}

@test "crash between keeping a user's file and writing over it: not taken for an admin's edit, file or dangling link" {
  local dest sum
  fresh_root
  hg_install install --settings "${SETTINGS}" >/dev/null
  # The state such a kill leaves: the backup made and recorded, the
  # destination still the user's (a file, and a dangling symlink).
  for dest in /etc/fail2ban/filter.d/nginx-bad-request.local /etc/logrotate.d/hostguard; do
    sum="$(printf '%s' "${dest}" | sha256sum)"
    rm -f "${ROOT}${dest}"
    cp -a "${ROOT}/var/lib/hostguard/backup/${sum%% *}" "${ROOT}${dest}"
  done
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_not_contains "${output}" "edited"
  [[ ! -e "${ROOT}/var/lib/hostguard/edited" ]]
  cmp "${PAYLOAD}/fail2ban/filter.d/nginx-bad-request.local" "${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  [[ -f "${ROOT}/etc/logrotate.d/hostguard" && ! -L "${ROOT}/etc/logrotate.d/hostguard" ]]
  hg_install uninstall >/dev/null
  assert_pristine
}
