#!/usr/bin/env bats
# Part bantool on Debian 12 as its packages leave it: fail2ban's stock sshd
# jail (jail.d/defaults-debian.conf) reads /var/log/auth.log, which a host
# without rsyslog does not have, so `fail2ban-client -t` fails and fail2ban
# does not start (fail2ban#3292). Install then makes that jail read the
# journal (hostguard/install/sshjournal.py), a user's own [sshd] settings win, and
# uninstall puts /etc/fail2ban back byte for byte. A failing test prints
# fail2ban's own lines and what to do. Each test runs the real fail2ban and
# systemd-journald with root / in private mount, pid and net namespaces over
# a copy of this machine's /etc/fail2ban (the machine's own is compared
# before and after).

load helpers/install

DROPIN=/etc/fail2ban/jail.d/00-hostguard-sshd-journal.conf

setup() {
  command -v fail2ban-client >/dev/null && command -v unshare >/dev/null || { echo "fail2ban or unshare missing (.ci/run installs it): the test cannot run" >&2; false; }
  [[ -f /etc/fail2ban/jail.d/defaults-debian.conf ]] || { echo "no Debian sshd jail (jail.d/defaults-debian.conf): not Debian's fail2ban" >&2; false; }
  [[ -x /lib/systemd/systemd-journald ]] || { echo "no systemd-journald (package systemd): the test cannot run" >&2; false; }
  S="${BATS_TEST_TMPDIR}/f2b"
  mkdir -p "${S}/varlib" "${S}/varlog/nginx" "${S}/varspool" "${S}/run"
  : >"${S}/varlog/nginx/access.log"
  cp -a /etc/fail2ban "${S}/etc-fail2ban"
  hg_listing /etc/fail2ban mtime >"${BATS_TEST_TMPDIR}/host-before"
  hg_make_payload banAction=nftables-multiport
  # The hostguard package fail2ban's slack-notify.py imports, where part base
  # puts it (only part bantool is installed here): without it the action fails,
  # fail2ban-client start exits 255 and every install restarts fail2ban.
  mkdir -p "${S}/usrlocallib/hostguard"
  cp -a "${PAYLOAD}/hostguard" "${S}/usrlocallib/hostguard/"
  : >"${BATS_TEST_TMPDIR}/live.conf"
}

teardown() {
  hg_listing /etc/fail2ban mtime >"${BATS_TEST_TMPDIR}/host-after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/host-before" "${BATS_TEST_TMPDIR}/host-after"
}

# Runs the bash SCRIPT as root / of the sandbox (its /etc/fail2ban, /var/lib,
# /var/log, /var/spool, /run), with journald running; $payload and $settings set. The pid
# namespace ends with the script: the fail2ban server and journald go too.
in_sandbox() {
  # shellcheck disable=SC2016 # the inner bash expands its own arguments
  timeout 120 unshare --mount --propagation private --net --pid --fork --mount-proc \
    bash -euo pipefail -c '
    s="$1" payload="$2" settings="$3"
    mount --bind "${s}/etc-fail2ban" /etc/fail2ban
    mount --bind "${s}/varlib" /var/lib
    mount --bind "${s}/varlog" /var/log
    # The action spools its start and stop messages under root /: never into this machine'"'"'s.
    mount --bind "${s}/varspool" /var/spool
    mount --bind "${s}/run" /run
    mount --bind "${s}/usrlocallib" /usr/local/lib
    mkdir -p /run/fail2ban /var/lib/fail2ban
    /lib/systemd/systemd-journald </dev/null >/dev/null 2>&1 &
    for ((i = 0; i < 100; i++)); do
      compgen -G "/run/log/journal/*/system.journal" >/dev/null && break
      sleep 0.05
    done
    eval "$4"' _ "${S}" "${PAYLOAD}" "${BATS_TEST_TMPDIR}/live.conf" "$1"
}

@test "no auth.log: install makes the stock sshd jail read the journal, both jails run; uninstall restores /etc/fail2ban" {
  run in_sandbox '! fail2ban-client -t'
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "Have not found any log file for sshd jail"
  hg_listing "${S}/etc-fail2ban" >"${BATS_TEST_TMPDIR}/before"
  run in_sandbox '
    "${payload}/install" install --part bantool --root / --settings "${settings}"
    fail2ban-client status sshd
    fail2ban-client status nginx-bad-request
    echo "--- second install"
    "${payload}/install" install --part bantool --root / --settings "${settings}"
    echo "--- uninstall"
    "${payload}/install" uninstall --part bantool --root /
    fail2ban-client stop >/dev/null'
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "placing ${DROPIN} ([sshd] backend = systemd"
  hg_assert_contains "${output}" "fail2ban configuration tested and started"
  # The user's sshd jail runs, on the journal; hostguard's on nginx's log.
  hg_assert_contains "${output}" "Journal matches:"
  hg_assert_contains "${output}" "_COMM=sshd"
  hg_assert_contains "${output}" "/var/log/nginx/access.log"
  # The second install keeps the drop-in and changes nothing.
  second="${output#*--- second install}"
  second="${second%%--- uninstall*}"
  hg_assert_not_contains "${second}" "placing"
  hg_assert_not_contains "${second}" "removed"
  hg_assert_not_contains "${second}" "fail2ban configuration tested"
  # Uninstall: fail2ban's configuration is the stock one again, which fails
  # fail2ban's test: said with fail2ban's line, fail2ban not reloaded.
  hg_assert_contains "${output}" "removed ${DROPIN}"
  hg_assert_contains "${output}" "fail2ban-client -t: "
  hg_assert_contains "${output}" "fail2ban not reloaded"
  hg_listing "${S}/etc-fail2ban" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "a failing fail2ban-client -t: install prints fail2ban's own lines and what to do, and rolls back" {
  # The user's own [sshd] setting wins over hostguard's drop-in: install
  # cannot make the jail work, and says why in fail2ban's words.
  printf '[sshd]\nbackend = auto\n' >"${S}/etc-fail2ban/jail.local"
  hg_listing "${S}/etc-fail2ban" >"${BATS_TEST_TMPDIR}/before"
  run in_sandbox '"${payload}/install" install --part bantool --root / --settings "${settings}"'
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  grep -qE '^.* ERROR fail2ban-client -t: .*Have not found any log file for sshd jail' <<<"${output}"
  hg_assert_contains "${output}" "fail2ban-client -t failed (its lines above): fail2ban's sshd jail reads a log file this host does not have"
  hg_assert_contains "${output}" 'set `backend = systemd`'
  hg_assert_contains "${output}" "rolled back"
  hg_listing "${S}/etc-fail2ban" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "a failing fail2ban-client -t for another reason: fail2ban's lines, then fix-and-rerun" {
  printf '[sshd]\nfilter = hg-no-such-filter\n' >"${S}/etc-fail2ban/jail.local"
  : >"${S}/varlog/auth.log"
  run in_sandbox '"${payload}/install" install --part bantool --root / --settings "${settings}"'
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  grep -qE " ERROR fail2ban-client -t: .*Unable to read the filter 'hg-no-such-filter'" <<<"${output}"
  hg_assert_contains "${output}" "fix what fail2ban names above in /etc/fail2ban"
  [[ ! -e "${S}/etc-fail2ban/jail.d/00-hostguard-sshd-journal.conf" ]]
}

@test "with auth.log (rsyslog installed): install leaves fail2ban's sshd jail as it is" {
  : >"${S}/varlog/auth.log"
  run in_sandbox '
    "${payload}/install" install --part bantool --root / --settings "${settings}"
    fail2ban-client status sshd
    fail2ban-client stop >/dev/null'
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "File list:"
  hg_assert_contains "${output}" "/var/log/auth.log"
  hg_assert_not_contains "${output}" "placing"
  [[ ! -e "${S}/etc-fail2ban/jail.d/00-hostguard-sshd-journal.conf" ]]
}
