#!/usr/bin/env bats
# The installer as an unprivileged user on the server would attack it: files
# it edits under a user's directory (a Spring app's config dir, a site file in
# a web user's tree) are read and written with that user's rights only;
# group- or world-writable directories, links in a user's directory and mixed
# owners are refused by name; hostguard's own files never go where a user can
# write. The race test runs a process with its own uid that swaps temp files,
# the edited files and their directories for symlinks in a tight bounded
# loop while install and uninstall run, many times: nothing outside the
# targets changes owner, mode or content.

load helpers/install

# The app user the attacker runs as, and another user it would like to hurt.
readonly APP_UID=64123
readonly OTHER_UID=64124

setup() {
  hg_make_payload
  hg_make_root
  # The password database of a real host knows its app users (issue 18:
  # what runs as a user runs with that user's own groups).
  hg_accounts app:"${APP_UID}" other:"${OTHER_UID}"
  # The app user must reach its files in the test's root, as on a real host.
  chmod 0711 "${BATS_RUN_TMPDIR}"
  mkdir -p "${ROOT}/opt/app/config" "${ROOT}/srv/www" "${ROOT}/etc" "${ROOT}/home/other"
  chown "${APP_UID}:${APP_UID}" "${ROOT}/opt/app" "${ROOT}/opt/app/config" "${ROOT}/srv/www"
  printf 'server.port=8080\nspring.web.resources.add-mappings=true\n' >"${ROOT}/opt/app/config/application.properties"
  chown "${APP_UID}:${APP_UID}" "${ROOT}/opt/app/config/application.properties"
  chmod 0640 "${ROOT}/opt/app/config/application.properties"
  printf 'server {\n    listen 80;\n    root /srv/www/html;\n}\n' >"${ROOT}/srv/www/site.conf"
  chown "${APP_UID}:${APP_UID}" "${ROOT}/srv/www/site.conf"
  # What an attack would aim at: root's files, another user's, one outside.
  printf 'root secret\n' >"${ROOT}/etc/victim-root"
  chmod 0600 "${ROOT}/etc/victim-root"
  printf 'root public\n' >"${ROOT}/etc/victim-public"
  chmod 0644 "${ROOT}/etc/victim-public"
  printf 'other user\n' >"${ROOT}/home/other/victim"
  chown -R "${OTHER_UID}:${OTHER_UID}" "${ROOT}/home/other"
  OUTSIDE="${BATS_TEST_TMPDIR}/outside"
  printf 'outside the root\n' >"${OUTSIDE}"
  chmod 0600 "${OUTSIDE}"
  SETTINGS="${BATS_TEST_TMPDIR}/settings.conf"
  printf 'APP_PROPERTIES=/opt/app/config/application.properties\nNGINX_SERVER_CONF=/srv/www/site.conf\n' >"${SETTINGS}"
}

# Listing of everything but the two targets' trees, plus the outside file.
listing_outside_targets() {
  hg_listing "${ROOT}" | grep -v -e '^\./opt/app' -e '^\./srv/www' -e '  \./opt/app' -e '  \./srv/www'
  stat -c '%a %u %g %s' "${OUTSIDE}"
  sha256sum "${OUTSIDE}"
}

as_app() {
  setpriv --reuid="${APP_UID}" --regid="${APP_UID}" --clear-groups "$@"
}

@test "a file under a user's directory is edited with that user's rights: owner and mode kept, exact uninstall" {
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  run hg_install install --part web --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ "$(stat -c '%a %u:%g' "${ROOT}/opt/app/config/application.properties")" == "640 ${APP_UID}:${APP_UID}" ]]
  grep -qx 'spring.web.resources.add-mappings=false' "${ROOT}/opt/app/config/application.properties"
  grep -q 'hostguard-deny.conf; # hostguard' "${ROOT}/srv/www/site.conf"
  [[ "$(stat -c %u "${ROOT}/srv/www/site.conf")" == "${APP_UID}" ]]
  run hg_install uninstall --part web
  [[ "${status}" -eq 0 ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "refused by name: a group- or world-writable directory, a link in a user's directory, a file of another user there" {
  # (Without mtimes: the test itself moves files in the users' directories.)
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"

  chmod 0775 "${ROOT}/opt/app/config"
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "APP_PROPERTIES: /opt/app/config is writable by a group or by all users: refused"
  chmod 0755 "${ROOT}/opt/app/config"

  as_app mv "${ROOT}/srv/www/site.conf" "${ROOT}/srv/www/real.conf"
  as_app ln -s /etc/victim-root "${ROOT}/srv/www/site.conf"
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "NGINX_SERVER_CONF: /srv/www/site.conf is a symbolic link in a directory of uid ${APP_UID}: refused"
  as_app rm "${ROOT}/srv/www/site.conf"
  as_app mv "${ROOT}/srv/www/real.conf" "${ROOT}/srv/www/site.conf"

  chown "${OTHER_UID}" "${ROOT}/opt/app/config/application.properties"
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "APP_PROPERTIES: /opt/app/config/application.properties belongs to uid ${OTHER_UID} but its directory to uid ${APP_UID}: refused"
  chown "${APP_UID}" "${ROOT}/opt/app/config/application.properties"

  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "hostguard's own files never go where a user can write: refused by name, nothing written" {
  mkdir -p "${ROOT}/etc/cron.d"
  chown "${APP_UID}" "${ROOT}/etc/cron.d"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
  run hg_install install --part monitors --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "/etc/cron.d belongs to uid ${APP_UID}, not root: refused"
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

# The attacker, as the app user: for at most LIMIT seconds or until STOP
# exists, swaps every temp file beside the targets, the targets themselves
# and their directories for symlinks to the victims, and puts them back.
# Prints how many swaps it made.
readonly ATTACKER='
root="$1" stop="$2" outside="$3" limit="$4"
cfg="${root}/opt/app/config" www="${root}/srv/www"
victims=("${root}/etc/victim-root" "${root}/etc/victim-public" "${root}/home/other/victim" "${outside}" "${root}/etc")
swaps=0 i=0
end=$((SECONDS + limit))
while [[ ! -e "${stop}" ]] && ((SECONDS < end)); do
  v="${victims[i % ${#victims[@]}]}"
  i=$((i + 1))
  for tmp in "${cfg}"/.hostguard-tmp.* "${www}"/.hostguard-tmp.*; do
    [[ -e "${tmp}" || -L "${tmp}" ]] || continue
    ln -sfn "${v}" "${tmp}" 2>/dev/null && swaps=$((swaps + 1))
  done
  case $((i % 3)) in
    0)
      if mv "${cfg}/application.properties" "${cfg}/.real" 2>/dev/null; then
        ln -sfn "${v}" "${cfg}/application.properties" && swaps=$((swaps + 1))
        rm -f "${cfg}/application.properties"
        mv "${cfg}/.real" "${cfg}/application.properties"
      fi
      ;;
    1)
      if mv "${root}/opt/app/config" "${root}/opt/app/.config-real" 2>/dev/null; then
        ln -sfn "${root}/etc" "${root}/opt/app/config" && swaps=$((swaps + 1))
        rm -f "${root}/opt/app/config"
        mv "${root}/opt/app/.config-real" "${root}/opt/app/config"
      fi
      ;;
    2)
      if mv "${www}/site.conf" "${www}/.real" 2>/dev/null; then
        ln -sfn "${v}" "${www}/site.conf" && swaps=$((swaps + 1))
        rm -f "${www}/site.conf"
        mv "${www}/.real" "${www}/site.conf"
      fi
      ;;
  esac
done
printf "%d\n" "${swaps}"
'

@test "race: a user swapping temp files, the files and their directory for symlinks changes nothing outside the targets" {
  local runs=25 ok=0 failed=0 i swaps target
  listing_outside_targets >"${BATS_TEST_TMPDIR}/before"
  local -a targets=("${ROOT}/srv/www/site.conf" "${ROOT}/opt/app/config/application.properties")
  for target in "${targets[@]}"; do cp -p "${target}" "${BATS_TEST_TMPDIR}/before-${target##*/}"; done
  local stop="${BATS_TEST_TMPDIR}/stop"
  as_app bash -c "${ATTACKER}" _ "${ROOT}" "${stop}" "${OUTSIDE}" 300 >"${BATS_TEST_TMPDIR}/swaps" 2>/dev/null &
  local attacker=$!
  for ((i = 0; i < runs; i++)); do
    if hg_install install --part web --settings "${SETTINGS}" >/dev/null 2>&1; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
    if hg_install uninstall --part web >/dev/null 2>&1; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
  done
  : >"${stop}"
  wait "${attacker}"
  swaps="$(<"${BATS_TEST_TMPDIR}/swaps")"
  echo "install/uninstall: ${ok} succeeded, ${failed} refused or failed; attacker swaps: ${swaps}"
  ((swaps > runs))
  # A swap of a temp file can land as the user's own rename (the user's
  # helper renames its temp file, which the attacker, the same user, had
  # made a link, over the target), leaving the target a link: install
  # refuses that, and the user puts their file back.
  for target in "${targets[@]}"; do
    if [[ -L "${target}" ]]; then
      echo "left a link: ${target##*/}"
      rm -f "${target}"
      cp -p "${BATS_TEST_TMPDIR}/before-${target##*/}" "${target}"
    fi
  done
  # With the attacker gone, a last uninstall converges.
  hg_install uninstall --part web
  listing_outside_targets >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  # Whatever the attacker left in its own trees is its own.
  local owners
  owners="$(find "${ROOT}/opt/app" "${ROOT}/srv/www" -printf '%u\n' | sort -u)"
  [[ "${owners}" == "${APP_UID}" ]] || { echo "owners in the targets' trees: ${owners}" >&2; false; }
}

# The attacker of issue 18, as the app user: catches every process that runs
# with its uid (root's helper), stops it (SIGSTOP), notes its groups, swaps
# the properties file for a symlink to a file only group root may read,
# resumes it, and puts the file back. Prints "caught N" and each helper's
# "Gid:" and "Groups:" lines.
readonly STOPPER='
import os, signal, sys, time
uid, props, victim, stop, limit = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
me, seen, caught, ids = os.getpid(), set(), 0, []
root = props.split("/opt/app/")[0]
end = time.time() + limit
while time.time() < end and not os.path.exists(stop):
    for name in os.listdir("/proc"):
        if not name.isdigit() or name in seen:
            continue
        pid = int(name)
        if pid == me:
            continue
        try:
            with open("/proc/%d/status" % pid) as f:
                status = f.read()
            fields = dict(l.split(":", 1) for l in status.splitlines() if ":" in l)
            # A pid still root now (a helper forked before it drops) is looked at again.
            if int(fields["Uid"].split()[0]) != uid:
                continue
            # A helper of this test: its parent names the root of this test (another
            # test run on the machine may have processes of the same uid).
            with open("/proc/%s/cmdline" % fields["PPid"].strip(), "rb") as f:
                if root.encode() not in f.read():
                    continue
        except (OSError, KeyError, ValueError, IndexError):
            continue
        seen.add(name)
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            continue
        caught += 1
        print("progress %d" % caught, flush=True)
        fds = []
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                fds.append("%s->%s" % (fd, os.readlink("/proc/%d/fd/%s" % (pid, fd))))
        except OSError:
            pass
        ids.append("Gid:%s Groups:%s fds: %s" % (fields["Gid"].strip(), fields.get("Groups", "").strip(), " ".join(sorted(fds))))
        try:
            os.rename(props, props + ".real")
            os.symlink(victim, props)
        except OSError:
            pass
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
        time.sleep(0.05)
        try:
            os.unlink(props)
        except OSError:
            pass
        try:
            os.rename(props + ".real", props)
        except OSError:
            pass
print("caught %d" % caught)
for line in ids:
    print(line)
'

@test "issue 18: a user who stops root's helper and swaps its file for a link reads nothing of group root's" {
  local props="${ROOT}/opt/app/config/application.properties" stop="${BATS_TEST_TMPDIR}/stop" i
  # "chown app file" keeps the group root (Ansible's owner: without group:).
  chown "${APP_UID}:0" "${props}"
  printf 'group root secret\n' >"${ROOT}/etc/victim-group"
  chmod 0640 "${ROOT}/etc/victim-group"
  printf 'APP_PROPERTIES=/opt/app/config/application.properties\n' >"${SETTINGS}"
  # 3 MiB of comments: each helper (a forked child that never executes
  # another program) lives long enough to be caught.
  python3 -c 'import sys; sys.stdout.write(("# " + "x" * 1021 + "\n") * 3072)' >>"${props}"
  as_app /usr/bin/python3 -c "${STOPPER}" "${APP_UID}" "${props}" /etc/victim-group "${stop}" 300 \
    >"${BATS_TEST_TMPDIR}/caught" 2>&1 &
  local attacker=$!
  sleep 0.5
  # Until the user caught 5 helpers (bounded: a helper lives about a
  # millisecond, a forked child that never executes another program).
  for ((i = 0; i < 100; i++)); do
    hg_install install --part web --settings "${SETTINGS}" >/dev/null 2>&1 || true
    hg_install uninstall --part web >/dev/null 2>&1 || true
    ! grep -q 'group root secret' "${props}" "${props}.real" 2>/dev/null || break
    (($(grep -c '^progress' "${BATS_TEST_TMPDIR}/caught") < 5)) || break
  done
  : >"${stop}"
  wait "${attacker}" || { cat "${BATS_TEST_TMPDIR}/caught"; false; }
  cat "${BATS_TEST_TMPDIR}/caught"
  # Nothing group root may read reached the user's files.
  ! grep -rq 'group root secret' "${ROOT}/opt/app"
  # Root's helpers were caught, stopped and looked at: none ran with group
  # root, as its primary or a supplementary group; they had the user's own.
  (($(sed -n 's/^caught //p' "${BATS_TEST_TMPDIR}/caught") >= 5))
  ! grep -E '^Gid:(.*[^0-9])?0([^0-9].*)?Groups:|Groups:(.* )?0( |$)' "${BATS_TEST_TMPDIR}/caught"
  grep -q "^Gid:${APP_UID}" "${BATS_TEST_TMPDIR}/caught"
  # It held nothing of root's: its standard three (pipes to and from root,
  # /dev/null), the user's own files and what a program opens for itself
  # while it starts (a helper caught in exec holds its libraries, the loader
  # cache or a locale file for a moment), no other descriptor.
  local line fd
  while IFS= read -r line; do
    for fd in ${line#*fds:}; do
      [[ "${fd}" =~ ^[0-2]-\>(pipe:\[[0-9]+\]|/dev/null)$ || "${fd}" =~ ^[0-9]+-\>${ROOT}/opt/app/ ||
        "${fd}" =~ ^[3-9]-\>(/usr/lib/|/lib/|/lib64/|/etc/ld\.so\.cache$) ]] || {
        echo "a helper held ${fd}"
        return 1
      }
    done
  done < <(grep 'fds:' "${BATS_TEST_TMPDIR}/caught")
  [[ "$(cat "${ROOT}/etc/victim-group")" == 'group root secret' ]]
}

@test "issue 18: a huge or sparse file in a user's directory is refused by name and limit, before anything is written" {
  local props="${ROOT}/opt/app/config/application.properties"
  printf 'APP_PROPERTIES=/opt/app/config/application.properties\n' >"${SETTINGS}"
  # (Sparse: it costs the user nothing. 64 MiB keeps a run of the old code,
  # which copied it whole, harmless to this machine.)
  as_app truncate -s 64M "${props}"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  run hg_install install --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "APP_PROPERTIES: /opt/app/config/application.properties is 67108864 bytes, over the limit of 4194304 bytes"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  # The same for the site file, read whole in the preflight.
  as_app truncate -s 0 "${props}"
  as_app truncate -s 5M "${ROOT}/srv/www/site.conf"
  printf 'NGINX_SERVER_CONF=/srv/www/site.conf\n' >"${SETTINGS}"
  run hg_install install --part web --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "NGINX_SERVER_CONF: /srv/www/site.conf is 5242880 bytes, over the limit of 4194304 bytes"
}

@test "issue 18: no local user can hold the install lock: flock on the root changes nothing, the lock file is root's 0600" {
  # The old lock: flock on the root directory, which any user can open.
  as_app flock "${ROOT}" sleep 60 &
  local holder=$! i
  # Waited for, not slept for: the user holds the old lock.
  for ((i = 0; i < 100; i++)); do
    flock --nonblock "${ROOT}" true 2>/dev/null || break
    sleep 0.1
  done
  ! flock --nonblock "${ROOT}" true || false
  run timeout 30 "${PAYLOAD}/install" install --part base --root "${ROOT}" --settings "${SETTINGS}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_mode_owner "${ROOT}/run/hostguard-install.lock" "600 root:root"
  hg_assert_mode_owner "${ROOT}/run" "755 root:root"
  run as_app flock --nonblock "${ROOT}/run/hostguard-install.lock" true
  [[ "${status}" -ne 0 ]]
  hg_assert_contains "${output}" "Permission denied"
  kill "${holder}"
  wait "${holder}" || true
}

# The app user of issue 23: catches every process that runs with its uid
# (root's helper), stops it (SIGSTOP, as it may), takes a copy of every
# descriptor it has (pidfd_getfd(2): what a tracer of its own processes may
# do; the helper keeps only its pipe to root and the directory) and resumes
# it, then holds the copies: whoever reads such a pipe never sees its end.
# Only processes born after it starts are looked at, and one that is not
# root's is never looked at twice, so a loop takes well under a millisecond
# and a helper that lives a few milliseconds is caught. Prints "caught N
# held M".
readonly HOLDER='
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
uid, stop, limit, root = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
me, held, caught = os.getpid(), [], 0
seen = set(n for n in os.listdir("/proc") if n.isdigit())
end = time.time() + limit
while time.time() < end and not os.path.exists(stop):
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me or name in seen:
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                fields = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            owner = int(fields["Uid"].split()[0])
            if owner != uid:
                # Root forks the helper, then the helper drops to the user: look again.
                if owner != 0:
                    seen.add(name)
                continue
            seen.add(name)
            # Only a helper of this test (its parent names the root of this test).
            with open("/proc/%s/cmdline" % fields["PPid"].strip(), "rb") as f:
                if root.encode() not in f.read():
                    continue
            os.kill(int(name), signal.SIGSTOP)
            caught += 1
        except (OSError, KeyError, ValueError, IndexError):
            continue
        try:
            pidfd = os.pidfd_open(int(name))
            for fd in os.listdir("/proc/%s/fd" % name):
                got = libc.syscall(438, pidfd, int(fd), 0)
                if got >= 0:
                    held.append(got)
            os.close(pidfd)
        except OSError:
            pass
        try:
            os.kill(int(name), signal.SIGCONT)
        except OSError:
            pass
print("caught %d held %d" % (caught, len(held)))
'

@test "issue 23: a user who holds a copy of the helper's pipe cannot hold root's installer: install and uninstall end" {
  local stop="${BATS_TEST_TMPDIR}/stop"
  printf 'APP_PROPERTIES=/opt/app/config/application.properties\nNGINX_SERVER_CONF=/srv/www/site.conf\n' >"${SETTINGS}"
  # A site file of 3 MiB (comments): reading it keeps the helper alive long
  # enough for the user to catch it every time.
  python3 -c 'import sys; sys.stdout.write(("# " + "x" * 1021 + "\n") * 3072)' >>"${ROOT}/srv/www/site.conf"
  as_app /usr/bin/python3 -c "${HOLDER}" "${APP_UID}" "${stop}" 200 "${ROOT}" >"${BATS_TEST_TMPDIR}/held" 2>&1 &
  local holder=$!
  sleep 0.5
  local i
  for ((i = 0; i < 3; i++)); do
    run hg_with_accounts timeout 90 "${PAYLOAD}/install" install --part web --root "${ROOT}" --settings "${SETTINGS}"
    echo "${output}"
    [[ "${status}" -eq 0 ]]
    grep -qx 'spring.web.resources.add-mappings=false' "${ROOT}/opt/app/config/application.properties"
    run hg_with_accounts timeout 90 "${PAYLOAD}/install" uninstall --part web --root "${ROOT}"
    echo "${output}"
    [[ "${status}" -eq 0 ]]
  done
  : >"${stop}"
  wait "${holder}"
  cat "${BATS_TEST_TMPDIR}/held" >&3
  grep -qx 'spring.web.resources.add-mappings=true' "${ROOT}/opt/app/config/application.properties"
  # The attack took place: the user caught and stopped helpers. (It holds no
  # copy: a helper that dropped from root is not dumpable, so the kernel
  # refuses pidfd_getfd(2); the install ending is what bounds the stop.)
  grep -Eqx 'caught [1-9][0-9]* held [0-9]+' "${BATS_TEST_TMPDIR}/held"
}

@test "issue 23: the bound on bytes is per install, not per file: a site including 20 files of 1 MiB is refused by name and bound, before any write" {
  local i
  mkdir -p "${ROOT}/etc/nginx/inc"
  printf 'server {\n    listen 80;\n}\ninclude /etc/nginx/inc/*.conf;\n' >"${ROOT}/etc/nginx/site.conf"
  for ((i = 10; i < 30; i++)); do
    python3 -c 'import sys; sys.stdout.write(("# " + "x" * 1021 + "\n") * 1024)' >"${ROOT}/etc/nginx/inc/${i}.conf"
  done
  printf 'NGINX_SERVER_CONF=/etc/nginx/site.conf\n' >"${SETTINGS}"
  hg_listing_before
  hg_assert_refused "over the bound of 16777216 bytes root reads from users' files in one install: refused" \
    install --part web --settings "${SETTINGS}"
  hg_assert_contains "${output}" "include /etc/nginx/inc/*.conf: /etc/nginx/inc/25.conf:"
}
