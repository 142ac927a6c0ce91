#!/usr/bin/env bats
# The Spring setting of `install --part web` (issue 32): one final document
# setting spring.web.resources.add-mappings=false is appended to
# APP_PROPERTIES (.properties or .yml), the user's own lines untouched, a
# second install changes nothing, and uninstall gives back the exact original
# bytes. What Spring Boot makes of it: spring-boot.bats.

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

# Writes INPUT (printf format, so a missing final newline is expressible) to
# FILE (default $PROPS), installs, compares with EXPECTED, checks a second install changes nothing
# and that uninstall restores the original bytes.
check_case() {
  local input="$1" expected="$2" file="${3:-${PROPS}}"
  hg_make_root
  mkdir -p "${ROOT}/srv/app/config"
  # shellcheck disable=SC2059 # the case is a printf format on purpose
  printf "${input}" >"${file}"
  local original
  original="$(sha256sum <"${file}")"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  install_web >/dev/null
  # shellcheck disable=SC2059
  if ! diff <(printf "${expected}") "${file}"; then
    printf 'case: %q\n' "${input}" >&2
    return 1
  fi
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/first"
  install_web >/dev/null
  hg_listing "${ROOT}" mtime >"${BATS_TEST_TMPDIR}/second"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/first" "${BATS_TEST_TMPDIR}/second"
  hg_install uninstall --part web >/dev/null
  [[ "$(sha256sum <"${file}")" == "${original}" ]]
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
}

@test "the document is appended after the user's lines, which stay as they were" {
  check_case '# app\n! old style comment\nserver.port=8080\n\nspring.web.resources.add-mappings: true\n' \
    '# app\n! old style comment\nserver.port=8080\n\nspring.web.resources.add-mappings: true\n#---\nspring.web.resources.add-mappings=false\n'
  check_case 'server.port=8080' 'server.port=8080\n#---\nspring.web.resources.add-mappings=false\n'
  check_case '' '#---\nspring.web.resources.add-mappings=false\n'
  check_case 'a=1\n# last\n' 'a=1\n# last\n\n#---\nspring.web.resources.add-mappings=false\n'
}

@test "application.yml gets a YAML document, and still parses" {
  command -v python3 >/dev/null && python3 -c 'import yaml' \
    || { echo "python3-yaml missing (.ci/run installs it): the test cannot run" >&2; false; }
  local yml="${ROOT}/srv/app/config/application.yml"
  printf 'APP_PROPERTIES=/srv/app/config/application.yml\n' >"${BATS_TEST_TMPDIR}/settings.conf"
  check_case 'spring:\n  application:\n    name: demo' \
    'spring:\n  application:\n    name: demo\n---\nspring.web.resources.add-mappings: false\n' "${yml}"
  install_web >/dev/null
  python3 -c 'import sys, yaml; d = list(yaml.safe_load_all(open(sys.argv[1]))); assert d[-1] == {"spring.web.resources.add-mappings": False}, d' "${yml}"
}

@test "already ending with the document: the file is not rewritten and uninstall leaves it" {
  printf 'x=1\n#---\nspring.web.resources.add-mappings=false\n' >"${PROPS}"
  touch -d '2020-01-01 00:00:00' "${PROPS}"
  local before
  before="$(stat -c '%Y %s %a' "${PROPS}")"
  install_web >/dev/null
  [[ "$(stat -c '%Y %s %a' "${PROPS}")" == "${before}" ]]
  hg_install uninstall --part web >/dev/null
  [[ "$(stat -c '%Y %s %a' "${PROPS}")" == "${before}" ]]
}

@test "the owner and mode of the properties file are kept" {
  printf 'spring.web.resources.add-mappings=true\n' >"${PROPS}"
  chown nobody:nogroup "${PROPS}"
  chmod 0604 "${PROPS}"
  install_web >/dev/null
  hg_assert_mode_owner "${PROPS}" "604 nobody:nogroup"
  [[ "$(tail -n 1 "${PROPS}")" == 'spring.web.resources.add-mappings=false' ]]
}

@test "a sibling profile file that sets the key again is named in a warning; one that does not is not" {
  printf 'a=1\n' >"${PROPS}"
  printf 'spring.web.resources.add\\-mappings=true\n' >"${ROOT}/srv/app/config/application-dev.properties"
  printf 'spring:\n  web:\n    resources:\n      add-mappings: true\n' >"${ROOT}/srv/app/config/application-prod.yml"
  printf 'server.port=1\n' >"${ROOT}/srv/app/config/application-test.properties"
  run install_web
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "/srv/app/config/application-dev.properties sets spring.web.resources.add-mappings too and outranks /srv/app/config/application.properties"
  hg_assert_contains "${output}" "/srv/app/config/application-prod.yml sets spring.web.resources.add-mappings too"
  hg_assert_not_contains "${output}" "application-test.properties"
}

@test "a line after the document at uninstall: the file is left as it is, with a warning" {
  printf 'a=1\n' >"${PROPS}"
  install_web >/dev/null
  printf 'b=2\n' >>"${PROPS}"
  run hg_install uninstall --part web
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  hg_assert_contains "${output}" "is no longer the end of the file: left as it is"
  [[ "$(cat "${PROPS}")" == $'a=1\n#---\nspring.web.resources.add-mappings=false\nb=2' ]]
}

@test "a 3.8 MB file of 100,000 key lines: the document appended, the record a few bytes, every byte given back" {
  local n=100000
  python3 -c 'import sys; sys.stdout.write("spring.web.resources.add-mappings=on\n" * int(sys.argv[1]))' "${n}" >"${PROPS}"
  local original
  original="$(sha256sum <"${PROPS}")"
  run timeout 60 "${PAYLOAD}/install" install --part web --root "${ROOT}" --settings "${BATS_TEST_TMPDIR}/settings.conf"
  echo "${output}" | tail -3
  [[ "${status}" -eq 0 ]]
  [[ "$(grep -c '^spring.web.resources.add-mappings=on$' "${PROPS}")" -eq "${n}" ]]
  [[ "$(tail -n 2 "${PROPS}")" == $'#---\nspring.web.resources.add-mappings=false' ]]
  [[ "$(hg_store_records "${ROOT}" | grep -c '^web|props|')" -eq 1 ]]
  (( $(hg_store_records "${ROOT}" | wc -c) < 1000 ))
  run timeout 60 "${PAYLOAD}/install" uninstall --part web --root "${ROOT}"
  echo "${output}" | tail -3
  [[ "${status}" -eq 0 ]]
  [[ "$(sha256sum <"${PROPS}")" == "${original}" ]]
}
