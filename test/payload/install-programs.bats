#!/usr/bin/env bats
# The programs each part needs (scripts/hostguard/install/programs.py, with the
# interpreter's own check in the installer's shim, scripts/install): install, run with a
# PATH without one of them, refuses the part before it writes anything, names
# the program and the Debian/Ubuntu package that provides it, and exits 1;
# the jail's banaction decides which firewall program is needed; a part not
# being installed is not checked. Real installer, temp root, real programs
# of this machine (linked) minus the ones a case removes.

load helpers/install

setup() {
  hg_make_payload
  hg_make_root
  # What a Debian host with fail2ban has: jail.conf's default banaction.
  mkdir -p "${ROOT}/etc/fail2ban/jail.d"
  printf '[DEFAULT]\nbanaction = iptables-multiport\nbanaction_allports = iptables-allports\n' \
    >"${ROOT}/etc/fail2ban/jail.conf"
}

# run: install install ARGS... with PATH="${PATH_WITHOUT}".
install_without() {
  run env PATH="${PATH_WITHOUT}" "${PAYLOAD}/install" install --root "${ROOT}" "$@"
  echo "${output}"
}

# Asserts the last run exited 1 naming each "needle" and the root's listing
# (mtimes included) is still the one in $BATS_TEST_TMPDIR/before.
assert_refused() {
  local needle
  [[ "${status}" -eq 1 ]] || { echo "exit ${status}, want 1" >&2; return 1; }
  for needle in "$@"; do
    hg_assert_contains "${output}" "${needle}"
  done
  hg_assert_contains "${output}" "install refused before any change"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "no fail2ban: the bantool part (and a whole install) is refused naming fail2ban-client and its package; nothing written" {
  hg_path_without fail2ban-client
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part bantool
  assert_refused "part bantool needs fail2ban-client for the nginx-bad-request jail: not installed" \
    "Debian/Ubuntu package: fail2ban"
  # All parts in one run: refused as a whole, before the first of them.
  install_without
  assert_refused "part bantool needs fail2ban-client" "Debian/Ubuntu package: fail2ban"
  hg_assert_not_contains "${output}" "part base needs"
  # A host that has the part installed already: the next install of it
  # changes nothing either (no write, no recovery step, no reload).
  hg_install install >/dev/null
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part bantool
  assert_refused "part bantool needs fail2ban-client" "Debian/Ubuntu package: fail2ban"
}

@test "each part names its own missing program and the package that provides it" {
  local case part hidden want package
  for case in \
    "web|nginx|needs nginx for the deny rule|nginx" \
    "monitors|docker|needs docker for the container monitor (CONTAINER_RUNTIME)|docker.io" \
    "monitors|cron crond|needs cron or crond for the monitors' schedule (/etc/cron.d/hostguard)|cron" \
    "bantool|ip6tables|needs ip6tables for the jail's bans (its banaction): banaction iptables-multiport|iptables"; do
    IFS='|' read -r part hidden want package <<<"${case}"
    # shellcheck disable=SC2086 # a list of names
    hg_path_without ${hidden}
    hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
    install_without --part "${part}"
    assert_refused "part ${part} ${want}" "Debian/Ubuntu package: ${package}"
  done
}

@test "the host agent's interpreter: missing, or older than 3.9, refuses every part naming it and python3 (web: the installer's editors are Python, issue 23)" {
  local part old
  for part in base monitors bantool web; do
    hg_path_without
    hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
    run env PATH="${PATH_WITHOUT}" HOSTGUARD_PYTHON=/nonexistent/python3 "${PAYLOAD}/install" install --root "${ROOT}" --part "${part}"
    echo "${output}"
    assert_refused "part ${part} needs /nonexistent/python3 (Python 3.9 or later with sqlite3) for the host agent" \
      ": not installed; Debian/Ubuntu package: python3"
  done
  # A real interpreter that is too old (pyenv's 3.8, where this machine has it).
  old="$(compgen -G "${HOME}/.pyenv/versions/3.8.*/bin/python3.8" | head -n1)" || true
  [[ -n "${old}" ]] || skip "no Python 3.8 under ~/.pyenv here"
  run env PATH="${PATH_WITHOUT}" HOSTGUARD_PYTHON="${old}" "${PAYLOAD}/install" install --root "${ROOT}" --part base
  echo "${output}"
  assert_refused "part base needs ${old} (Python 3.9 or later with sqlite3)" "older than 3.9 or without its sqlite3 module"
}

@test "every program of the agent names the interpreter the installer checks" {
  local program line
  for program in hostguard-notify host-monitor container-monitor; do
    IFS= read -r line <"${HG_REPO}/scripts/${program}"
    [[ "${line}" == "#!/usr/bin/python3 -IS" ]] || { echo "${program}: ${line}"; return 1; }
  done
  grep -qx 'py="${HOSTGUARD_PYTHON:-/usr/bin/python3}"' "${HG_REPO}/scripts/install"
}

@test "the container runtime of the stack's containerRuntime, by name or path, is the one required" {
  hg_make_payload containerRuntime=/opt/podman/bin/podman
  hg_path_without
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part monitors
  assert_refused "part monitors needs /opt/podman/bin/podman for the container monitor" \
    "Debian/Ubuntu package: podman"
  # There, it is enough (the runtime's version is not this check's business).
  install -D -m 0755 "${HG_REPO}/test/helpers/fake-docker" "${BATS_TEST_TMPDIR}/podman"
  hg_make_payload "containerRuntime=${BATS_TEST_TMPDIR}/podman"
  install_without --part monitors
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "$(cat "${ROOT}/etc/cron.d/hostguard")" "container-monitor"
}

@test "no container runtime: refused naming the runtime and containerMonitor; with containerMonitor false the host monitor alone is scheduled" {
  hg_path_without docker
  # The default (containerMonitor true, the SPEC): the runtime is required,
  # and the refusal names both ways out.
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part monitors
  assert_refused "part monitors needs docker for the container monitor (CONTAINER_RUNTIME): not installed" \
    "Debian/Ubuntu package: docker.io" "pulumi config set hostguard:containerMonitor false"
  # Opted out: the same host installs the part, without a container line.
  hg_make_payload containerMonitor=false
  grep -qx 'CONTAINER_MONITOR=false' "${PAYLOAD}/hostguard.conf"
  install_without --part monitors
  [[ "${status}" -eq 0 ]]
  hg_assert_not_contains "${output}" "needs"
  local cron
  cron="$(cat "${ROOT}/etc/cron.d/hostguard")"
  [[ "$(grep -c '^[0-9].* root .*/usr/local/lib/hostguard/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1$' <<<"${cron}")" -eq 1 ]]
  [[ "$(grep -c '^[^#].*container-monitor' <<<"${cron}")" -eq 0 ]]
  # Shipped but not scheduled (docs/host.md), and no log for it.
  [[ -x "${ROOT}/usr/local/lib/hostguard/container-monitor" ]]
  [[ -f "${ROOT}/var/log/hostguard/host-monitor.log" ]]
  [[ ! -e "${ROOT}/var/log/hostguard/container-monitor.log" ]]
  # Back to true on that host: refused again, and the opted-out install stays.
  hg_make_payload containerMonitor=true
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part monitors
  assert_refused "part monitors needs docker" "hostguard:containerMonitor false"
}

@test "the jail's banaction decides the firewall program: the stack's, the jail section's, else the distribution's default" {
  # Debian 13 style: a jail.d/*.conf makes nftables the default; jail.conf's
  # iptables no longer counts.
  printf '[DEFAULT]\nbanaction = nftables\nbanaction_allports = nftables[type=allports]\n' \
    >"${ROOT}/etc/fail2ban/jail.d/defaults-debian.conf"
  hg_path_without nft iptables ip6tables ipset
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part bantool
  assert_refused "needs nft for the jail's bans (its banaction): banaction nftables" "Debian/Ubuntu package: nftables"
  hg_assert_not_contains "${output}" "needs iptables"
  # The admin's jail.local sets the jail's own banaction: that one counts.
  printf '[nginx-bad-request]\nbanaction = iptables-multiport   # ours\n' >"${ROOT}/etc/fail2ban/jail.local"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part bantool
  assert_refused "needs iptables for the jail's bans (its banaction): banaction iptables-multiport" \
    "needs ip6tables for" "Debian/Ubuntu package: iptables"
  hg_assert_not_contains "${output}" "needs nft"
  # The stack's banAction (in the rendered jail) beats both.
  hg_make_payload banAction=nftables-multiport
  install_without --part bantool
  assert_refused "needs nft for the jail's bans (its banaction): banaction nftables-multiport"
  hg_assert_not_contains "${output}" "needs iptables"
  # With the program there, the part installs.
  hg_path_without iptables ip6tables ipset
  install_without --part bantool
  [[ "${status}" -eq 0 ]]
  [[ -f "${ROOT}/etc/fail2ban/jail.d/hostguard-nginx-bad-request.local" ]]
  # A banaction hostguard does not know is not checked, and it says so.
  hg_make_payload banAction=my-own-action
  install_without --part bantool
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "banaction my-own-action: hostguard does not know its firewall programs; not checked"
}

@test "a file that is not executable does not count as the program" {
  # Where a removed package left a file behind, or an admin disabled a
  # program with chmod -x: bash's own lookup would still name that file.
  hg_path_without fail2ban-client
  install -m 0644 /dev/null "${PATH_WITHOUT}/fail2ban-client"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  install_without --part bantool
  assert_refused "part bantool needs fail2ban-client" "Debian/Ubuntu package: fail2ban"
}

@test "a part not being installed is not checked" {
  hg_path_without fail2ban-client nginx
  install_without --part base
  [[ "${status}" -eq 0 ]]
  install_without --part monitors
  [[ "${status}" -eq 0 ]]
  hg_assert_not_contains "${output}" "needs"
  # Uninstall checks nothing: a host that lost a program can still be cleaned.
  hg_path_without fail2ban-client nginx docker cron crond
  run env PATH="${PATH_WITHOUT}" "${PAYLOAD}/install" uninstall --root "${ROOT}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ ! -e "${ROOT}/etc/cron.d/hostguard" ]]
}

@test "docs/host.md lists every row of the programs table" {
  local row parts programs package why readme
  readme="$(cat "${HG_REPO}/docs/host.md")"
  # The tables of scripts/hostguard/install/programs.py, one row a line.
  local -a rows
  mapfile -t rows < <(/usr/bin/python3 -I -B -c \
    'import sys; sys.path.insert(0, sys.argv[1]); from hostguard.install.programs import main; main(["table"])' \
    "${HG_REPO}/scripts")
  ((${#rows[@]} > 10))
  for row in "${rows[@]}"; do
    if [[ "${row}" == ban\|* ]]; then
      IFS='|' read -r _ parts programs package <<<"${row}"
      hg_assert_contains "${readme}" "| \`${parts}\` | \`${programs}\` | ${package} |"
      continue
    fi
    IFS='|' read -r parts programs package why <<<"${row}"
    hg_assert_contains "${readme}" "| ${parts//,/, } | \`${programs//,/\` or \`}\` | ${package} | ${why} |"
  done
}
