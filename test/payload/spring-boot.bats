#!/usr/bin/env bats
# Spring Boot itself decides (issue 32): a Spring Boot 3.5 web application
# (test/helpers/spring-app, built by tools/setup.bash hg_setup_spring_app)
# reads each shape of configuration file an operator may name in
# APP_PROPERTIES, with the profile `dev` active and without, and serves
# static/hello.txt. After `install --part web` the file answers 404 (static
# resources unmapped), after `uninstall` 200 again, the configuration file
# byte for byte what it was. One JVM per state runs every case as its own
# application context, each on a free loopback port (server.port=0), so the
# JVM starts twice in all.

load helpers/install

HG_SPRING_JAR="${HOSTGUARD_SPRING_APP_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/spring-app}/spring-check.jar"
STATIC_BODY='hostguard static file'

# name, file name, content (printf format: a missing final newline is expressible).
CASES=(
  "plain|application.properties|server.port=8080\nspring.web.resources.add-mappings=true\nlogging.level.root=INFO"
  # The last document is the dev profile's, and it ends with a comment line
  # (after which `#---` would not start a document).
  "lastprofile|application.properties|spring.web.resources.add-mappings=true\n#---\nspring.config.activate.on-profile=dev\nspring.web.resources.add-mappings=true\n# dev ends here\n"
  "profileonly|application.properties|app.name=demo\n#---\nspring.config.activate.on-profile=dev\nspring.web.resources.add-mappings=true\n"
  # The escaped spelling is the same key and the later line wins; the file
  # ends in a value continued on the next line.
  "escaped|application.properties|spring.web.resources.add-mappings=false\nspring.web.resources.add\\\\-mappings=true\nlist=a,\\\\\n"
  "yml|application.yml|spring:\n  web:\n    resources:\n      add-mappings: true\n"
  "ymlprofiles|application.yml|spring:\n  web:\n    resources:\n      add-mappings: true\n---\nspring:\n  config:\n    activate:\n      on-profile: dev\n  web:\n    resources:\n      add-mappings: true"
)

setup_file() {
  if [[ ! -f "${HG_SPRING_JAR}" ]] || ! command -v java >/dev/null; then
    echo "${HG_SPRING_JAR} or java missing: run tools/setup.bash's hg_setup_spring_app (npm test does)" >&2
    return 1
  fi
}

setup() {
  hg_make_payload
  JAVA_PID=""
}

teardown() {
  if [[ -n "${JAVA_PID}" ]]; then
    kill "${JAVA_PID}" 2>/dev/null || true
    wait "${JAVA_PID}" 2>/dev/null || true
  fi
}

case_root() { printf '%s/root-%s' "${BATS_TEST_TMPDIR}" "$1"; }

# Runs the application on every case, profile dev off and on; prints
# "NAME-PROFILE CODE" per context (CODE: the HTTP status of /hello.txt, or
# FAILED and why); one JVM, killed before returning (by teardown on a failure:
# call it in this shell, not in a command substitution).
spring_answers() {
  local out="${BATS_TEST_TMPDIR}/spring.out" entry name file rest i port code
  local -a args=()
  for entry in "${CASES[@]}"; do
    IFS='|' read -r name file rest <<<"${entry}"
    args+=("${name}-none=$(case_root "${name}")/srv/app" "${name}-dev=$(case_root "${name}")/srv/app=dev")
  done
  : >"${out}"
  java -XX:TieredStopAtLevel=1 -Dcheck.seconds=300 -jar "${HG_SPRING_JAR}" "${args[@]}" \
    >"${out}" 2>"${BATS_TEST_TMPDIR}/spring.err" 3>&- &
  JAVA_PID=$!
  for ((i = 0; i < 1200; i++)); do
    grep -qx READY "${out}" && break
    kill -0 "${JAVA_PID}" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -qx READY "${out}"; then
    echo "the Spring application did not start all cases within 120 s:" >&2
    cat "${out}" "${BATS_TEST_TMPDIR}/spring.err" >&2
    return 1
  fi
  while read -r name port; do
    [[ "${name}" != READY ]] || break
    if [[ "${port}" == FAILED* ]]; then
      printf '%s %s\n' "${name}" "${port}"
      continue
    fi
    code="$(curl -s -o "${BATS_TEST_TMPDIR}/body" -w '%{http_code}' --max-time 10 "http://127.0.0.1:${port}/hello.txt")"
    if [[ "${code}" == 200 && "$(cat "${BATS_TEST_TMPDIR}/body")" != "${STATIC_BODY}" ]]; then
      code="200-but-not-the-static-file"
    fi
    printf '%s %s\n' "${name}" "${code}"
  done <"${out}"
  kill "${JAVA_PID}"
  wait "${JAVA_PID}" 2>/dev/null || true
  JAVA_PID=""
}

# Every context answered CODE.
assert_all() {
  local want="$1" answers="$2" entry name file rest
  echo "${answers}"
  for entry in "${CASES[@]}"; do
    IFS='|' read -r name file rest <<<"${entry}"
    grep -qx "${name}-none ${want}" <<<"${answers}"
    grep -qx "${name}-dev ${want}" <<<"${answers}"
  done
}

@test "Spring Boot 3.5 reads the final document install appends, for every file shape and profile; uninstall gives back every byte" {
  local entry name file content root
  for entry in "${CASES[@]}"; do
    IFS='|' read -r name file content <<<"${entry}"
    root="$(case_root "${name}")"
    mkdir -p "${root}/run" "${root}/srv/app"
    # shellcheck disable=SC2059 # the case is a printf format on purpose
    printf "${content}" >"${root}/srv/app/${file}"
    cp "${root}/srv/app/${file}" "${BATS_TEST_TMPDIR}/${name}.orig"
    printf 'APP_PROPERTIES=/srv/app/%s\n' "${file}" >"${BATS_TEST_TMPDIR}/${name}.conf"
    ROOT="${root}" hg_install install --part web --settings "${BATS_TEST_TMPDIR}/${name}.conf" >/dev/null
    echo "== ${name} after install:"
    cat "${root}/srv/app/${file}"
  done
  spring_answers >"${BATS_TEST_TMPDIR}/answers"
  assert_all 404 "$(cat "${BATS_TEST_TMPDIR}/answers")"
  for entry in "${CASES[@]}"; do
    IFS='|' read -r name file content <<<"${entry}"
    ROOT="$(case_root "${name}")" hg_install uninstall --part web >/dev/null
    cmp "${BATS_TEST_TMPDIR}/${name}.orig" "$(case_root "${name}")/srv/app/${file}"
  done
  spring_answers >"${BATS_TEST_TMPDIR}/answers"
  assert_all 200 "$(cat "${BATS_TEST_TMPDIR}/answers")"
}
