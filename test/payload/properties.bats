#!/usr/bin/env bats
# The Spring property step of `install --part web`: sets
# spring.web.resources.add-mappings=false in APP_PROPERTIES whatever the
# existing line's form, touches no other line, is idempotent, and uninstall
# gives back the exact original bytes.

load helpers/install

setup() {
  hg_make_payload
  hg_make_root
  mkdir -p "${ROOT}/srv/app/config"
  PROPS="${ROOT}/srv/app/config/application.properties"
  printf 'APP_PROPERTIES=/srv/app/config/application.properties\n' >"${BATS_TEST_TMPDIR}/settings.conf"
}

install_web() {
  hg_install install --part web --settings "${BATS_TEST_TMPDIR}/settings.conf"
}

# Writes INPUT (printf format, so a missing final newline is expressible),
# installs, compares with EXPECTED, checks a second install changes nothing
# and that uninstall restores the original bytes.
check_case() {
  local input="$1" expected="$2"
  hg_make_root
  mkdir -p "${ROOT}/srv/app/config"
  # shellcheck disable=SC2059 # the case is a printf format on purpose
  printf "${input}" >"${PROPS}"
  local original
  original="$(sha256sum <"${PROPS}")"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  install_web >/dev/null
  # shellcheck disable=SC2059
  if ! diff <(printf "${expected}") "${PROPS}"; then
    printf 'case: %q\n' "${input}" >&2
    return 1
  fi
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/first"
  install_web >/dev/null
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/second"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/first" "${BATS_TEST_TMPDIR}/second"
  hg_install uninstall --part web >/dev/null
  [[ "$(sha256sum <"${PROPS}")" == "${original}" ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "absent key: appended, other lines and comments untouched" {
  check_case '# app\n! old style comment\nserver.port=8080\n\nlogging.level.root=INFO\n' \
    '# app\n! old style comment\nserver.port=8080\n\nlogging.level.root=INFO\nspring.web.resources.add-mappings=false\n'
}

@test "absent key in a file without a final newline, and in an empty file" {
  check_case 'server.port=8080' 'server.port=8080\nspring.web.resources.add-mappings=false\n'
  check_case '' 'spring.web.resources.add-mappings=false\n'
}

@test "present as key=true, key = true, key:true, key : true and key true" {
  check_case 'a=1\nspring.web.resources.add-mappings=true\nb=2\n' 'a=1\nspring.web.resources.add-mappings=false\nb=2\n'
  check_case 'spring.web.resources.add-mappings = true\n' 'spring.web.resources.add-mappings = false\n'
  check_case 'spring.web.resources.add-mappings:true\n' 'spring.web.resources.add-mappings:false\n'
  check_case '  spring.web.resources.add-mappings : true  \nz=1' '  spring.web.resources.add-mappings : false\nz=1'
  check_case 'spring.web.resources.add-mappings true\n' 'spring.web.resources.add-mappings false\n'
  check_case 'spring.web.resources.add-mappings\n' 'spring.web.resources.add-mappings=false\n'
}

@test "comments, longer keys and continuation lines are not the key" {
  check_case '# spring.web.resources.add-mappings=true\n!spring.web.resources.add-mappings=true\nspring.web.resources.add-mappings-extra=true\nlist=a,\\\n  spring.web.resources.add-mappings=true\n' \
    '# spring.web.resources.add-mappings=true\n!spring.web.resources.add-mappings=true\nspring.web.resources.add-mappings-extra=true\nlist=a,\\\n  spring.web.resources.add-mappings=true\nspring.web.resources.add-mappings=false\n'
}

@test "already false: the file is not rewritten and uninstall leaves it" {
  printf 'x=1\nspring.web.resources.add-mappings = false\n' >"${PROPS}"
  touch -d '2020-01-01 00:00:00' "${PROPS}"
  local before
  before="$(stat -c '%Y %s %a' "${PROPS}")"
  install_web >/dev/null
  [[ "$(stat -c '%Y %s %a' "${PROPS}")" == "${before}" ]]
  hg_install uninstall --part web >/dev/null
  [[ "$(stat -c '%Y %s %a' "${PROPS}")" == "${before}" ]]
  grep -qx 'spring.web.resources.add-mappings = false' "${PROPS}"
}

@test "a key repeated twice: both lines are set, both restored" {
  check_case 'spring.web.resources.add-mappings=true\nq=1\nspring.web.resources.add-mappings: yes\n' \
    'spring.web.resources.add-mappings=false\nq=1\nspring.web.resources.add-mappings: false\n'
}

@test "the owner and mode of the properties file are kept" {
  printf 'spring.web.resources.add-mappings=true\n' >"${PROPS}"
  chown nobody:nogroup "${PROPS}"
  chmod 0604 "${PROPS}"
  install_web >/dev/null
  hg_assert_mode_owner "${PROPS}" "604 nobody:nogroup"
  grep -qx 'spring.web.resources.add-mappings=false' "${PROPS}"
}

@test "an application.yml (or a symlink to one) is refused naming the file and why, before anything is written (issue 18, 12)" {
  command -v python3 >/dev/null && python3 -c 'import yaml' \
    || { echo "python3-yaml missing (.ci/run installs it): the test cannot run" >&2; false; }
  local yml="${ROOT}/srv/app/config/application.yml" name
  printf '# the app\nspring:\n  application:\n    name: demo\nserver:\n  port: 8080\n' >"${yml}"
  ln -s application.yml "${ROOT}/srv/app/config/application.properties"
  for name in application.yml application.properties; do
    printf 'APP_PROPERTIES=/srv/app/config/%s\n' "${name}" >"${BATS_TEST_TMPDIR}/settings.conf"
    hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/before"
    run hg_install install --settings "${BATS_TEST_TMPDIR}/settings.conf"
    echo "${name}: ${output}"
    [[ "${status}" -ne 0 ]]
    hg_assert_contains "${output}" "APP_PROPERTIES: /srv/app/config/application.yml is a YAML file: refused"
    hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/after"
    hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
    # The application's YAML still parses, with its spring: tree as it was.
    python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); assert d["spring"] == {"application": {"name": "demo"}}, d' "${yml}"
  done
}

@test "two lines install made identical come back each as it was, not swapped (issue 23: restored by position)" {
  check_case 'spring.web.resources.add-mappings=true\nx=1\nspring.web.resources.add-mappings=on\n' \
    'spring.web.resources.add-mappings=false\nx=1\nspring.web.resources.add-mappings=false\n'
  check_case 'spring.web.resources.add-mappings=off\nspring.web.resources.add-mappings=true\nspring.web.resources.add-mappings=off\n' \
    'spring.web.resources.add-mappings=false\nspring.web.resources.add-mappings=false\nspring.web.resources.add-mappings=false\n'
}

@test "a line install set that was changed since is left as it is, and the others still come back (issue 23)" {
  printf 'spring.web.resources.add-mappings=true\nx=1\nspring.web.resources.add-mappings=on\n' >"${PROPS}"
  install_web >/dev/null
  sed -i '1s/=false/=maybe/' "${PROPS}"
  run hg_install uninstall --part web
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "line 1, which install set, was changed since: left as it is"
  [[ "$(cat "${PROPS}")" == $'spring.web.resources.add-mappings=maybe\nx=1\nspring.web.resources.add-mappings=on' ]]
}

@test "linear in the file: 100,000 key lines (3.8 MB) installed and given back within a minute each (issue 23; today's main: hours)" {
  local n=100000
  python3 -c 'import sys; sys.stdout.write("spring.web.resources.add-mappings=on\n" * int(sys.argv[1]))' "${n}" >"${PROPS}"
  local original
  original="$(sha256sum <"${PROPS}")"
  run timeout 60 "${PAYLOAD}/install" install --part web --root "${ROOT}" --settings "${BATS_TEST_TMPDIR}/settings.conf"
  echo "${output}" | tail -3
  [[ "${status}" -eq 0 ]]
  [[ "$(grep -c '^spring.web.resources.add-mappings=false$' "${PROPS}")" -eq "${n}" ]]
  run timeout 60 "${PAYLOAD}/install" uninstall --part web --root "${ROOT}"
  echo "${output}" | tail -3
  [[ "${status}" -eq 0 ]]
  [[ "$(sha256sum <"${PROPS}")" == "${original}" ]]
}
