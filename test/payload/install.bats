#!/usr/bin/env bats
# The installer in a temporary root: modes and owners, a second run changes
# nothing, uninstall restores the root exactly (user files included), a bad
# settings file or a failure midway leaves nothing half-applied, set-webhook.

load helpers/install

readonly HOOK_URL="https://hooks.example.test/services/T000/B000/s3cr3t-token-4711"

setup() {
  hg_make_payload
  hg_make_root
  # What a real host already has before hostguard: a user's jail.local, an
  # nginx site (two server blocks, enabled through an absolute symlink) and
  # a Spring properties file owned by the application's user.
  mkdir -p "${ROOT}/etc/fail2ban" "${ROOT}/etc/nginx/sites-available" \
    "${ROOT}/etc/nginx/sites-enabled" "${ROOT}/opt/app"
  printf '[DEFAULT]\nbantime = 1h\n\n[sshd]\nenabled = true\n' >"${ROOT}/etc/fail2ban/jail.local"
  cat >"${ROOT}/etc/nginx/sites-available/site" <<'EOF'
# two virtual hosts
server {
	listen 80;
	server_name a.example;
}

server{
    listen 443 ssl;
    server_name b.example;
    location / { return 200; }
}
EOF
  ln -s /etc/nginx/sites-available/site "${ROOT}/etc/nginx/sites-enabled/site"
  printf '# Spring\n! legacy comment\nserver.port=8080\nspring.web.resources.add-mappings: true\nlogging.level.root=INFO' \
    >"${ROOT}/opt/app/application.properties"
  chown nobody:nogroup "${ROOT}/opt/app/application.properties"
  chmod 0640 "${ROOT}/opt/app/application.properties"
  SETTINGS="${BATS_TEST_TMPDIR}/settings.conf"
  cat >"${SETTINGS}" <<'EOF'
# test settings
NGINX_SERVER_CONF=/etc/nginx/sites-enabled/site
APP_PROPERTIES=/opt/app/application.properties
SLACK_CHANNEL=ops
EOF
}

@test "install places every file with the README's modes and owners" {
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  local dest mode
  while IFS='|' read -r _ _ dest mode; do
    hg_assert_mode_owner "${ROOT}${dest}" "${mode#0} root:root"
  done < <("${PAYLOAD}/install" list)
  hg_assert_mode_owner "${ROOT}/usr/local/lib/hostguard" "755 root:root"
  hg_assert_mode_owner "${ROOT}/etc/hostguard/hostguard.conf" "644 root:root"
  hg_assert_mode_owner "${ROOT}/var/lib/hostguard" "700 root:root"
  hg_assert_mode_owner "${ROOT}/var/spool/hostguard" "700 root:root"
  hg_assert_mode_owner "${ROOT}/var/log/hostguard/host-monitor.log" "640 root:root"
  hg_assert_mode_owner "${ROOT}/var/log/hostguard/container-monitor.log" "640 root:root"
  hg_assert_mode_owner "${ROOT}/etc/cron.d/hostguard" "644 root:root"
  hg_assert_mode_owner "${ROOT}/etc/logrotate.d/hostguard" "644 root:root"
  hg_assert_mode_owner "${ROOT}/etc/nginx/snippets/hostguard-deny.conf" "644 root:root"
  # The installed copy is the script itself, so uninstall can run later.
  cmp "${PAYLOAD}/install" "${ROOT}/usr/local/lib/hostguard/install"
  cmp "${SETTINGS}" "${ROOT}/etc/hostguard/hostguard.conf"
  # The user's file keeps its owner and mode after the edit.
  hg_assert_mode_owner "${ROOT}/opt/app/application.properties" "640 nobody:nogroup"
  # No temp file left behind, in particular none in cron.d.
  local leftovers
  leftovers="$(find "${ROOT}" -name '.hostguard-tmp.*')"
  [[ -z "${leftovers}" ]] || { echo "left: ${leftovers}" >&2; false; }
  # Not the live root: the services are skipped, and say so.
  hg_assert_contains "${output}" "not /: fail2ban-client not tested or reloaded"
  hg_assert_contains "${output}" "not /: nginx not tested or reloaded"
}

@test "the nginx include lands once after each server block, through the symlink" {
  hg_install install --settings "${SETTINGS}"
  local site="${ROOT}/etc/nginx/sites-available/site" count
  [[ -L "${ROOT}/etc/nginx/sites-enabled/site" ]]
  count="$(grep -c '^ *include /etc/nginx/snippets/hostguard-deny.conf; # hostguard [0-9a-f]\{16\}$' "${site}")"
  [[ "${count}" -eq 2 ]] || { cat "${site}" >&2; false; }
  grep -A1 '^server {$' "${site}" | grep -q 'hostguard-deny.conf; # hostguard'
  grep -A1 '^server{$' "${site}" | grep -q 'hostguard-deny.conf; # hostguard'
  [[ "$(tail -n 3 "${ROOT}/opt/app/application.properties")" == $'logging.level.root=INFO\n#---\nspring.web.resources.add-mappings=false' ]]
}

@test "parts installed and uninstalled in parallel, as a deploy runs them, end exactly as one run does" {
  # Two parts that each back up a user's file (so both make the backup dir).
  mkdir -p "${ROOT}/etc/logrotate.d" "${ROOT}/etc/fail2ban/filter.d"
  printf '# the admin own rotation\n' >"${ROOT}/etc/logrotate.d/hostguard"
  printf '# the admin own filter\n' >"${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  local round part pid
  local -a pids
  for round in 1 2 3; do
    hg_install install --part base --settings "${SETTINGS}" >/dev/null
    pids=()
    for part in monitors bantool web; do
      hg_install install --part "${part}" --settings "${SETTINGS}" >"${BATS_TEST_TMPDIR}/${part}.out" 2>&1 &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "${pid}" || { cat "${BATS_TEST_TMPDIR}"/*.out >&2; false; }
    done
    hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/parallel"
    hg_store_records "${ROOT}" >"${BATS_TEST_TMPDIR}/parallel.records"
    pids=()
    for part in monitors bantool web; do
      hg_install uninstall --part "${part}" >"${BATS_TEST_TMPDIR}/${part}.out" 2>&1 &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "${pid}" || { cat "${BATS_TEST_TMPDIR}"/*.out >&2; false; }
    done
    hg_install uninstall --part base >/dev/null
    hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
    hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  done
  # The same as one sequential install. The store's bytes depend on its
  # history (row ids, free pages): its records, part by part, are compared.
  hg_install install --settings "${SETTINGS}" >/dev/null
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/sequential"
  hg_store_records "${ROOT}" >"${BATS_TEST_TMPDIR}/sequential.records"
  hg_assert_same_listing <(grep -v 'install\.db' "${BATS_TEST_TMPDIR}/sequential") \
    <(grep -v 'install\.db' "${BATS_TEST_TMPDIR}/parallel")
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/sequential.records" "${BATS_TEST_TMPDIR}/parallel.records"
}

@test "a second install changes nothing: same listing, mtimes included, nothing reloaded" {
  hg_install install --settings "${SETTINGS}"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/first"
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/second"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/first" "${BATS_TEST_TMPDIR}/second"
  hg_assert_not_contains "${output}" "installed"
  hg_assert_not_contains "${output}" "reloaded"
}

@test "uninstall leaves the root exactly as before, user files included" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  run hg_install uninstall
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "uninstall also removes what the scripts wrote while running (state, locks, spool)" {
  # No alert of the monitor's own on a busy machine: the one message is ours.
  printf 'CPU_THRESHOLD=100\nMEMORY_THRESHOLD=100\nDISK_THRESHOLD=100\n' >>"${SETTINGS}"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  # A real monitor run and a message that cannot be delivered (no webhook
  # file yet) leave state, locks and a spooled message behind.
  HOSTGUARD_ROOT="${ROOT}" timeout 30 "${ROOT}/usr/local/lib/hostguard/host-monitor"
  run env HOSTGUARD_ROOT="${ROOT}" timeout 30 "${ROOT}/usr/local/lib/hostguard/hostguard-notify" text 'left behind'
  [[ "${status}" -eq 78 ]]
  compgen -G "${ROOT}/var/lib/hostguard/cpu.sample" >/dev/null
  local spooled
  spooled="$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM message").fetchone()[0])' \
    "${ROOT}/var/spool/hostguard/spool.db")"
  run hg_install uninstall
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  # The test's message, and any alert this machine's load made the monitor send.
  ((spooled >= 1))
  [[ "${output}" == *"dropped ${spooled} undelivered message(s)"* ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

# A writer killed at any moment of a run: the programs are Python now (no
# `mv` to stand in for), so each run is killed with SIGKILL, its whole process
# group, after 0, 5, 10, 20, 40, 80, 160 and 320 ms: before, during and after
# its state, lock and spool writes. For every program and every moment, on a fresh install:
# whatever the killed run left (a temp file, a claimed message, a lock, a
# hint), uninstall removes it and the root ends exactly as before.
@test "uninstall removes what a writer killed at any moment left behind" {
  cat >>"${SETTINGS}" <<'EOF'
MEMORY_THRESHOLD=1
DISK_THRESHOLD=1
CONTAINER_WATCH=app
NOTIFY_ATTEMPTS=1
NOTIFY_BUDGET=2
NOTIFY_MAX_TIME=1
EOF
  printf '{"containers": [{"name": "web", "state": "running", "cpu": "1.00%%", "mem": "1.00%%"},
    {"name": "app", "state": "exited", "exit_code": 1, "error": "x"}]}\n' >"${BATS_TEST_TMPDIR}/containers.json"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  local ms program pid killed=0
  for program in host-monitor container-monitor hostguard-notify; do
    for ms in 0 5 10 20 40 80 160 320; do
      hg_install install --part base --settings "${SETTINGS}" >/dev/null
      hg_install install --part monitors --settings "${SETTINGS}" >/dev/null
      # Port 9 on loopback: refused at once, so every message stays spooled.
      hg_install set-webhook <<<'https://127.0.0.1:9/services/T0/B0/x' >/dev/null
      # A first, whole run: the killed one starts from a previous sample and state.
      HOSTGUARD_ROOT="${ROOT}" FAKE_DOCKER_STATE="${BATS_TEST_TMPDIR}/containers.json" \
        timeout 60 "${ROOT}/usr/local/lib/hostguard/host-monitor" >/dev/null 2>&1 || true
      local -a args=()
      [[ "${program}" != hostguard-notify ]] || args=(text "killed at ${ms} ms")
      # setsid execs the program as the leader of a new process group (pid = pgid).
      HOSTGUARD_ROOT="${ROOT}" FAKE_DOCKER_STATE="${BATS_TEST_TMPDIR}/containers.json" \
        setsid "${ROOT}/usr/local/lib/hostguard/${program}" "${args[@]}" >/dev/null 2>&1 &
      pid=$!
      sleep "$(printf '0.%03d' "${ms}")"
      if kill -9 -- "-${pid}" 2>/dev/null; then
        killed=$((killed + 1))
      fi
      wait "${pid}" 2>/dev/null || true
      echo "${program} killed at ${ms} ms:" >&3
      find "${ROOT}/var/lib/hostguard" "${ROOT}/var/spool/hostguard" -type f -name '*tmp*' -printf '  left %f\n' >&3
      run hg_install uninstall
      [[ "${status}" -eq 0 ]] || { echo "${output}"; false; }
      hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
      hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
    done
  done
  ((killed >= 6))
}

@test "the installed copy of install can uninstall alone" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  rm -rf "${PAYLOAD}"
  "${ROOT}/usr/local/lib/hostguard/install" uninstall --root "${ROOT}"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "uninstall of one part leaves the other parts in place" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  hg_install uninstall --part web
  [[ ! -e "${ROOT}/etc/nginx/snippets/hostguard-deny.conf" ]]
  run grep -c 'hostguard' "${ROOT}/etc/nginx/sites-available/site"
  [[ "${output}" == 0 ]]
  grep -qx 'spring.web.resources.add-mappings: true' "${ROOT}/opt/app/application.properties"
  [[ -f "${ROOT}/etc/cron.d/hostguard" ]]
  [[ -f "${ROOT}/etc/fail2ban/jail.d/hostguard-nginx-bad-request.local" ]]
  [[ -f "${ROOT}/usr/local/lib/hostguard/hostguard-notify" ]]
  # Reinstalling the part works on top of the others, then everything goes.
  hg_install install --part web --settings "${SETTINGS}"
  hg_install uninstall
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "a user's own file at a destination is backed up and restored by uninstall" {
  mkdir -p "${ROOT}/etc/fail2ban/filter.d"
  printf '# the admin own filter override\n[Definition]\nfailregex = x\n' \
    >"${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  chmod 0600 "${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  cmp "${PAYLOAD}/fail2ban/filter.d/nginx-bad-request.local" \
    "${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  hg_install uninstall
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
  # Compare that file's line only: its mtime, mode and content are back too.
  local line='./etc/fail2ban/filter.d/nginx-bad-request.local|'
  diff <(grep -F "${line}" "${BATS_TEST_TMPDIR}/before") <(grep -F "${line}" "${BATS_TEST_TMPDIR}/after")
  diff <(grep -F 'nginx-bad-request.local' "${BATS_TEST_TMPDIR}/before") \
    <(grep -F 'nginx-bad-request.local' "${BATS_TEST_TMPDIR}/after")
}

@test "a dangling symlink at a destination is kept and put back as the same link" {
  mkdir -p "${ROOT}/etc/logrotate.d"
  ln -s /nowhere/hostguard "${ROOT}/etc/logrotate.d/hostguard"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  [[ -f "${ROOT}/etc/logrotate.d/hostguard" && ! -L "${ROOT}/etc/logrotate.d/hostguard" ]]
  hg_install uninstall
  [[ "$(readlink "${ROOT}/etc/logrotate.d/hostguard")" == /nowhere/hostguard ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "an admin's edit of an installed file: install keeps it as a copy and says so, uninstall leaves it in place" {
  local cron="${ROOT}/etc/cron.d/hostguard" copy
  hg_install install --settings "${SETTINGS}"
  printf '# admin: paused for maintenance\n' >>"${cron}"
  cp "${cron}" "${BATS_TEST_TMPDIR}/edited"
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "/etc/cron.d/hostguard was edited since install: your version is kept at /var/lib/hostguard/edited/"
  copy="${output##*your version is kept at }"
  copy="${copy%%$'\n'*}"
  cmp "${BATS_TEST_TMPDIR}/edited" "${ROOT}${copy}"
  hg_assert_mode_owner "${ROOT}${copy}" "644 root:root"
  # The installed version is back, and a further install changes nothing.
  run grep -c 'paused for maintenance' "${cron}"
  [[ "${output}" == 0 ]]
  run hg_install install --settings "${SETTINGS}"
  hg_assert_not_contains "${output}" "edited"
  # Edited again after install: uninstall leaves it (and the kept copy), says so.
  printf '# admin: paused again\n' >>"${cron}"
  cp "${cron}" "${BATS_TEST_TMPDIR}/edited-again"
  run hg_install uninstall
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "/etc/cron.d/hostguard was edited since install: left in place"
  hg_assert_contains "${output}" "stays at ${copy}"
  cmp "${BATS_TEST_TMPDIR}/edited-again" "${cron}"
  cmp "${BATS_TEST_TMPDIR}/edited" "${ROOT}${copy}"
  [[ ! -e "${ROOT}/usr/local/lib/hostguard/host-monitor" ]]
}

@test "a user's own file that install backed up and the admin then edited stays, with the original kept" {
  mkdir -p "${ROOT}/etc/fail2ban/filter.d"
  printf '# the admin own filter override\n' >"${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  hg_install install --settings "${SETTINGS}"
  printf '# tuned after install\n' >>"${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
  run hg_install uninstall
  echo "${output}"
  hg_assert_contains "${output}" "/etc/fail2ban/filter.d/nginx-bad-request.local was edited since install: left in place; the original is kept at /var/lib/hostguard/backup/"
  grep -q 'tuned after install' "${ROOT}/etc/fail2ban/filter.d/nginx-bad-request.local"
}

@test "a bad settings file fails naming the key and line, and changes nothing" {
  local case key line
  for case in "UNKNOWN_KEY=1|UNKNOWN_KEY" "CPU_THRESHOLD=101|CPU_THRESHOLD" "NOTIFY_MAX_TIME=abc|NOTIFY_MAX_TIME"; do
    line="${case%%|*}"
    key="${case##*|}"
    printf '# bad\n%s\nSLACK_CHANNEL=ops\n' "${line}" >"${BATS_TEST_TMPDIR}/bad.conf"
    # Fresh root, then a root that already has an install: neither changes.
    hg_listing_before
    hg_assert_refused "bad.conf:2:" install --settings "${BATS_TEST_TMPDIR}/bad.conf"
    hg_assert_contains "${output}" "${key}"
  done
  hg_install install --settings "${SETTINGS}"
  hg_listing_before
  hg_assert_refused "bad.conf:2:" install --settings "${BATS_TEST_TMPDIR}/bad.conf"
}

@test "a missing NGINX_SERVER_CONF is refused before anything is written" {
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/nope\n' >"${BATS_TEST_TMPDIR}/nope.conf"
  hg_listing_before
  hg_assert_refused "NGINX_SERVER_CONF" install --settings "${BATS_TEST_TMPDIR}/nope.conf"
}

@test "a destination a part cannot use stops the part before anything is written" {
  # The jail is the part's third file: a plain file where its directory must
  # be is found before the filter and the action are written.
  mkdir -p "${ROOT}/etc/fail2ban"
  printf 'not a directory\n' >"${ROOT}/etc/fail2ban/jail.d"
  hg_listing_before
  hg_assert_refused "/etc/fail2ban/jail.d is not a directory" install --part bantool --settings "${SETTINGS}"
}

@test "a failure in the middle of a part (disk full) rolls that part back" {
  # The jail (the part's third file) goes to a full filesystem: a tmpfs of
  # the test's own, in a private mount namespace, filled to the last block.
  # The filter and the action are placed first; the jail's write fails; the
  # part is undone.
  mkdir -p "${ROOT}/etc/fail2ban/jail.d"
  export -f hg_listing
  run timeout 60 unshare --mount --propagation private bash -euo pipefail -c '
    root="$1" payload="$2" settings="$3" out="$4"
    mount -t tmpfs -o size=16k,mode=0755 tmpfs "${root}/etc/fail2ban/jail.d"
    dd if=/dev/zero of="${root}/etc/fail2ban/jail.d/filler" bs=4k 2>/dev/null || true
    hg_listing "${root}" >"${out}/before"
    status=0
    "${payload}/install" install --part bantool --root "${root}" --settings "${settings}" || status=$?
    hg_listing "${root}" >"${out}/after"
    exit "${status}"' _ "${ROOT}" "${PAYLOAD}" "${SETTINGS}" "${BATS_TEST_TMPDIR}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "installed /etc/fail2ban/action.d/slack-notify.py"
  hg_assert_contains "${output}" "No space left on device"
  hg_assert_contains "${output}" "rolled back"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "a directory at a destination stops the part before anything is written" {
  mkdir -p "${ROOT}/etc/fail2ban/jail.d/hostguard-nginx-bad-request.local"
  hg_listing_before
  hg_assert_refused "/etc/fail2ban/jail.d/hostguard-nginx-bad-request.local is a directory: refused" install --settings "${SETTINGS}"
}

@test "install places exactly the files of the file table, rendered ones as the renderer wrote them" {
  hg_install install --settings "${SETTINGS}"
  local src dest want count=0
  while IFS='|' read -r _ src dest _; do
    # --settings stands in for the bundle's settings file.
    want="${PAYLOAD}/${src}"
    [[ "${dest}" != /etc/hostguard/hostguard.conf ]] || want="${SETTINGS}"
    cmp "${want}" "${ROOT}${dest}"
    count=$((count + 1))
  done < <("${PAYLOAD}/install" list)
  [[ "${count}" -ge 13 ]]
  grep -qx '0-59/10 \* \* \* \* root sh /usr/local/lib/hostguard/at-offset.sh /usr/local/lib/hostguard/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1' \
    "${ROOT}/etc/cron.d/hostguard"
  grep -qx 'maxretry  = 10' "${ROOT}/etc/fail2ban/jail.d/hostguard-nginx-bad-request.local"
  # A malformed table line stops install and list, naming the line; so
  # does a row of the source table's form (a glob, a destination folder):
  # install reads only the expanded table a rendered bundle carries.
  local table row
  table="$(cat "${PAYLOAD}/files.table")"
  for row in 'base only-three-fields /x' 'base hostguard/*.py /usr/local/lib/hostguard/hostguard/ 0644' \
    'base install /usr/local/lib/hostguard/ 0755'; do
    printf '%s\n%s\n' "${table}" "${row}" >"${PAYLOAD}/files.table"
    run "${PAYLOAD}/install" list
    [[ "${status}" -ne 0 ]]
    hg_assert_contains "${output}" "files.table:$(($(wc -l <<<"${table}") + 1)): expected PART SOURCE DESTINATION MODE"
    run hg_install install --part base --settings "${SETTINGS}"
    [[ "${status}" -ne 0 ]]
    hg_assert_contains "${output}" "expected PART SOURCE DESTINATION MODE"
  done
}

@test "set-webhook refuses anything but https:// without echoing the value" {
  hg_install install --part base --settings "${SETTINGS}"
  local input
  for input in 'url=http://hooks.example.test/s3cr3t-plain' 'http://hooks.example.test/s3cr3t-plain' \
    'url = "https://hooks.example.test/s3cr3t-plain"' 'url="https://hooks.example.test/s3cr3t-plain"' \
    'ftp://hooks.example.test/s3cr3t-plain' 'https://hooks.example.test/s3cr3t-pl"ain' '' \
    'https://hooks.example.test/s3cr3t-{a,b}' 'https://hooks.example.test/s3cr3t-[1-2]' \
    'https://hooks.example.test/s3cr3t x' 'https://hooks.example.test/s3cr3t#frag' \
    'https://hooks.example.test/s3cr3t|x' 'https://hooks.example.test/s3cr3t`x`' \
    'https://hooks.example.test/s3cr3t-é' $'https://hooks.example.test/s3cr3t\x01'; do
    run hg_install set-webhook <<<"${input}"
    echo "${output}"
    [[ "${status}" -ne 0 ]]
    hg_assert_contains "${output}" "https://"
    hg_assert_not_contains "${output}" "s3cr3t"
    [[ ! -e "${ROOT}/etc/hostguard/webhook.conf" ]]
  done
}

@test "set-webhook writes a 0600 url= line, never with the URL in any argv" {
  hg_install install --part base --settings "${SETTINGS}"
  command -v strace >/dev/null || { echo "strace not installed (.ci/run installs it): the test cannot run" >&2; false; }
  # Every execve of the run, with its whole argv: the URL must be in none.
  printf 'url=%s\n' "${HOOK_URL}" \
    | strace -f -qq -e trace=execve -s 100000 -o "${BATS_TEST_TMPDIR}/trace" \
      "${PAYLOAD}/install" set-webhook --root "${ROOT}"
  grep -q 'execve("[^"]*python3", \["[^"]*python3", "-I", "-S", "-B"' "${BATS_TEST_TMPDIR}/trace" # the trace does see argv
  if grep -F 's3cr3t-token' "${BATS_TEST_TMPDIR}/trace"; then
    echo "the URL appeared in an argv" >&2
    false
  fi
  hg_assert_mode_owner "${ROOT}/etc/hostguard/webhook.conf" "600 root:root"
  diff <(printf 'url=%s\n' "${HOOK_URL}") "${ROOT}/etc/hostguard/webhook.conf"
  # A bare URL gives the same file; the same URL again does not rewrite it.
  local before after
  before="$(stat -c '%Y.%y' "${ROOT}/etc/hostguard/webhook.conf")"
  run hg_install set-webhook <<<"${HOOK_URL}"
  [[ "${status}" -eq 0 ]]
  hg_assert_not_contains "${output}" "s3cr3t"
  after="$(stat -c '%Y.%y' "${ROOT}/etc/hostguard/webhook.conf")"
  [[ "${before}" == "${after}" ]]
}

@test "set-webhook keeps the format= and routing_key= lines beside the URL; any other line is refused unseen" {
  hg_install install --part base --settings "${SETTINGS}"
  local key="s3cr3tKEY0123456789abcdef0123456"
  printf 'routing_key=%s\nformat=pagerduty\nurl=%s\n' "${key}" "${HOOK_URL}" | hg_install set-webhook
  diff <(printf 'url=%s\nformat=pagerduty\nrouting_key=%s\n' "${HOOK_URL}" "${key}") \
    "${ROOT}/etc/hostguard/webhook.conf"
  local extra
  for extra in 'insecure:line 2: not a url=https://..., format= or routing_key= line' \
    'format=irc:line 2: format= is refused: not one of slack,' \
    'format=discord'$'\n''format=slack:line 3: a second format= line' \
    "routing_key=${key}x:line 2: routing_key= is refused: not 32 letters and digits (value not shown)"; do
    run hg_install set-webhook <<<"url=${HOOK_URL}"$'\n'"${extra%%:line*}"
    [[ "${status}" -ne 0 ]]
    hg_assert_contains "${output}" "set-webhook: refused: stdin line${extra#*:line}"
    hg_assert_not_contains "${output}" "s3cr3t"
  done
  # A format the URL's host contradicts, or PagerDuty without its key: refused before writing, not at every post.
  run hg_install set-webhook <<<'url=https://discord.com/api/webhooks/1/s3cr3t-x'$'\n''format=slack'
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "set it to discord"
  run hg_install set-webhook <<<"url=${HOOK_URL}"$'\n''format=pagerduty'
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "format pagerduty needs a routing_key"
  hg_assert_not_contains "${output}" "s3cr3t"
  diff <(printf 'url=%s\nformat=pagerduty\nrouting_key=%s\n' "${HOOK_URL}" "${key}") \
    "${ROOT}/etc/hostguard/webhook.conf"
  # The heartbeat takes the URL alone.
  run hg_install set-heartbeat <<<"url=${HOOK_URL}"$'\n''format=discord'
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "set-heartbeat: refused: stdin line 2: not a url=https://... line"
  [[ ! -e "${ROOT}/etc/hostguard/heartbeat.conf" ]]
}

@test "uninstall of base removes the webhook file and leaves the root as before" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --settings "${SETTINGS}"
  printf '%s\n' "${HOOK_URL}" | hg_install set-webhook
  [[ -f "${ROOT}/etc/hostguard/webhook.conf" ]]
  hg_install uninstall
  [[ ! -e "${ROOT}/etc/hostguard/webhook.conf" ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "usage errors exit 64" {
  run hg_install frobnicate
  [[ "${status}" -eq 64 ]]
  run hg_install install --part nope
  [[ "${status}" -eq 64 ]]
  run "${PAYLOAD}/install" install --root relative/dir
  [[ "${status}" -eq 64 ]]
}

# Runs a command with root / in the test's sandbox (hg_root_sandbox): the
# real `nginx -t` runs against copies, this machine's own are untouched.
live_sandbox() {
  SANDBOX="${BATS_TEST_TMPDIR}/live"
  hg_root_sandbox_make "${SANDBOX}"
  hg_root_sandbox "${SANDBOX}" "$@"
}

host_nginx_listing() {
  hg_listing /etc/nginx mtime
}

@test "root /: the real nginx -t passes, the include is placed, uninstall restores (sandboxed)" {
  command -v nginx >/dev/null && command -v unshare >/dev/null || { echo "nginx or unshare missing (.ci/run installs it): the test cannot run" >&2; false; }
  [[ -L /etc/nginx/sites-enabled/default ]] || { echo "no default nginx site to edit (.ci/run installs it): the test cannot run" >&2; false; }
  host_nginx_listing >"${BATS_TEST_TMPDIR}/host-before"
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/default\n' >"${BATS_TEST_TMPDIR}/live.conf"
  live_sandbox true
  hg_listing "${SANDBOX}/etc-nginx" >"${BATS_TEST_TMPDIR}/before"
  run live_sandbox "${PAYLOAD}/install" install --part web --root / --settings "${BATS_TEST_TMPDIR}/live.conf"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "nginx configuration tested"
  hg_assert_contains "${output}" "nginx is not running: not reloaded"
  grep -q 'include /etc/nginx/snippets/hostguard-deny.conf; # hostguard' "${SANDBOX}/etc-nginx/sites-available/default"
  cmp "${PAYLOAD}/nginx/hostguard-deny.conf" "${SANDBOX}/etc-nginx/snippets/hostguard-deny.conf"
  [[ -f "${SANDBOX}/varlib/hostguard/install.db" ]]
  # A second run changes nothing, so it neither tests nor reloads.
  run live_sandbox "${PAYLOAD}/install" install --part web --root / --settings "${BATS_TEST_TMPDIR}/live.conf"
  [[ "${status}" -eq 0 ]]
  hg_assert_not_contains "${output}" "nginx configuration tested"
  run live_sandbox "${PAYLOAD}/install" uninstall --part web --root /
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "nginx configuration tested"
  hg_listing "${SANDBOX}/etc-nginx" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  host_nginx_listing >"${BATS_TEST_TMPDIR}/host-after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/host-before" "${BATS_TEST_TMPDIR}/host-after"
}

@test "root /: a snippet nginx -t rejects is rolled back, site file included (sandboxed)" {
  command -v nginx >/dev/null && command -v unshare >/dev/null || { echo "nginx or unshare missing (.ci/run installs it): the test cannot run" >&2; false; }
  [[ -L /etc/nginx/sites-enabled/default ]] || { echo "no default nginx site to edit (.ci/run installs it): the test cannot run" >&2; false; }
  printf 'NGINX_SERVER_CONF=/etc/nginx/sites-enabled/default\n' >"${BATS_TEST_TMPDIR}/live.conf"
  printf 'this_is_not_a_directive on;\n' >"${PAYLOAD}/nginx/hostguard-deny.conf"
  live_sandbox true
  hg_listing "${SANDBOX}/etc-nginx" >"${BATS_TEST_TMPDIR}/before"
  hg_listing "${SANDBOX}/varlib" >"${BATS_TEST_TMPDIR}/varlib-before"
  run live_sandbox "${PAYLOAD}/install" install --part web --root / --settings "${BATS_TEST_TMPDIR}/live.conf"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "this_is_not_a_directive"
  hg_assert_contains "${output}" "nginx -t failed"
  hg_assert_contains "${output}" "rolled back"
  hg_listing "${SANDBOX}/etc-nginx" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  hg_listing "${SANDBOX}/varlib" >"${BATS_TEST_TMPDIR}/varlib-after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/varlib-before" "${BATS_TEST_TMPDIR}/varlib-after"
}

@test "root /: the real fail2ban-client -t, start, then reload on uninstall (sandboxed, own pid and net namespace)" {
  command -v fail2ban-client >/dev/null && command -v unshare >/dev/null || { echo "fail2ban or unshare missing (.ci/run installs it): the test cannot run" >&2; false; }
  local s="${BATS_TEST_TMPDIR}/f2b"
  mkdir -p "${s}/varlib" "${s}/varlog/nginx" "${s}/run"
  : >"${s}/varlog/nginx/access.log"
  cp -a /etc/fail2ban "${s}/etc-fail2ban"
  # Only hostguard's jail: the distribution's sshd jail needs a real sshd log.
  rm -f "${s}/etc-fail2ban/jail.d/defaults-debian.conf"
  hg_listing "${s}/etc-fail2ban" >"${BATS_TEST_TMPDIR}/before"
  hg_listing /etc/fail2ban mtime >"${BATS_TEST_TMPDIR}/host-before"
  hg_make_payload banAction=nftables-multiport
  : >"${BATS_TEST_TMPDIR}/live.conf"
  # The pid namespace ends with this command: the server started inside goes too.
  run timeout 90 unshare --mount --propagation private --net --pid --fork --mount-proc \
    bash -euo pipefail -c '
    s="$1" payload="$2" settings="$3"
    mount --bind "${s}/etc-fail2ban" /etc/fail2ban
    mount --bind "${s}/varlib" /var/lib
    mount --bind "${s}/varlog" /var/log
    mount --bind "${s}/run" /run
    mkdir -p /run/fail2ban /var/lib/fail2ban
    "${payload}/install" install --part bantool --root / --settings "${settings}"
    fail2ban-client status nginx-bad-request
    "${payload}/install" uninstall --part bantool --root /
    echo "jails after uninstall: $(fail2ban-client status | grep "Jail list")"
    fail2ban-client stop >/dev/null' _ "${s}" "${PAYLOAD}" "${BATS_TEST_TMPDIR}/live.conf"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "fail2ban configuration tested and reloaded"
  hg_assert_contains "${output}" "File list:"
  # The reload after uninstall really dropped the jail from the running server.
  grep -qE '^jails after uninstall: .*Jail list:[[:space:]]*$' <<<"${output}"
  hg_listing "${s}/etc-fail2ban" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  hg_listing /etc/fail2ban mtime >"${BATS_TEST_TMPDIR}/host-after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/host-before" "${BATS_TEST_TMPDIR}/host-after"
}
