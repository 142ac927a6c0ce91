#!/usr/bin/env bats
# tools/pulumi-env.sh picks the engine and installs the provider plugins the
# usual way. A stand-in `pulumi` on PATH records its arguments and the
# environment it was started with, and installs a plugin into its PULUMI_HOME
# (~/.pulumi when unset) unless the test cut its "network". Each test works
# in a copy of the repository's tools/ with its own node_modules/@pulumi
# package.json files, HOME and engine cache, all under BATS_TEST_TMPDIR.

REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"

setup() {
  T="${BATS_TEST_TMPDIR}"
  FAKE_REPO="${T}/repo"
  mkdir -p "${FAKE_REPO}/tools" "${FAKE_REPO}/node_modules/.bin" "${T}/home" "${T}/bin"
  cp "${REPO}/tools/pulumi-env.sh" "${FAKE_REPO}/tools/"
  fake_package command 1.2.1
  fake_package random 4.21.2
  STANDIN_LOG="${T}/standin.log"
  : >"${STANDIN_LOG}"
  write_standin "${T}/bin"
  # The system's directories without any pulumi of this machine's own.
  local dir base_path=""
  for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [[ -x "${dir}/pulumi" ]] || base_path="${base_path:+${base_path}:}${dir}"
  done
  BASE_PATH="${base_path}"
  export HOME="${T}/home" STANDIN_LOG
  export HOSTGUARD_PULUMI_CACHE="${T}/cache"
  unset PULUMI_HOME PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION PULUMI_SKIP_UPDATE_CHECK
  unset HOSTGUARD_PULUMI_COMMAND_BIN HOSTGUARD_PULUMI_RANDOM_BIN STANDIN_OFFLINE
}

fake_package() {
  mkdir -p "${FAKE_REPO}/node_modules/@pulumi/$1"
  printf '{\n  "name": "@pulumi/%s",\n  "version": "%s"\n}\n' "$1" "$2" \
    >"${FAKE_REPO}/node_modules/@pulumi/$1/package.json"
}

# write_standin DIR: a pulumi and its language host in DIR.
write_standin() {
  mkdir -p "$1"
  cat >"$1/pulumi" <<'EOF'
#!/usr/bin/env bash
# Stand-in CLI: records its call, then acts as `plugin install` and `version`.
set -euo pipefail
{
  printf 'call:'
  printf ' %s' "$@"
  printf '\n'
  printf 'PULUMI_HOME=%s\n' "${PULUMI_HOME-<unset>}"
  printf 'DISABLE=%s\n' "${PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION-<unset>}"
} >>"${STANDIN_LOG}"
case "$1" in
  version) echo v3.999.0 ;;
  plugin)
    [[ "$2 $3" == "install resource" ]] || exit 2
    name="$4" version="$5"
    if [[ "${6:-}" != --file && -n "${STANDIN_OFFLINE:-}" ]]; then
      echo "error: could not get plugin resource ${name} ${version}: no such host" >&2
      exit 1
    fi
    dir="${PULUMI_HOME:-${HOME}/.pulumi}/plugins/resource-${name}-v${version}"
    mkdir -p "${dir}"
    if [[ "${6:-}" == --file ]]; then
      cp "$7" "${dir}/pulumi-resource-${name}"
    else
      printf '#!/bin/sh\n' >"${dir}/pulumi-resource-${name}"
    fi
    chmod 755 "${dir}/pulumi-resource-${name}"
    ;;
  *) exit 2 ;;
esac
EOF
  printf '#!/bin/sh\nexit 0\n' >"$1/pulumi-language-nodejs"
  chmod 755 "$1/pulumi" "$1/pulumi-language-nodejs"
}

# in_env COMMANDS: sources the copy of pulumi-env.sh with PATH=$TEST_PATH, then
# runs COMMANDS (bash -c: the environment it prints is the sourced one).
in_env() {
  PATH="${TEST_PATH}" bash -c ". '${FAKE_REPO}/tools/pulumi-env.sh'; $1"
}

@test "a real CLI on PATH is used as it is: its own PULUMI_HOME, nothing disabled, first on PATH after Node" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  run in_env 'echo "source=${HOSTGUARD_PULUMI_SOURCE} cli=$(command -v pulumi) home=${PULUMI_HOME-unset} disable=${PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION-unset}"; echo "path=${PATH}"'
  [ "${status}" -eq 0 ]
  [ "${lines[0]}" = "source=system cli=${T}/bin/pulumi home=unset disable=unset" ]
  [ "${lines[1]}" = "path=${FAKE_REPO}/node_modules/.bin:${T}/bin:${BASE_PATH}" ]
  # A user's own PULUMI_HOME stays too.
  run env PULUMI_HOME="${T}/mine" PATH="${TEST_PATH}" bash -c ". '${FAKE_REPO}/tools/pulumi-env.sh'; echo \"\${PULUMI_HOME}\""
  [ "${output}" = "${T}/mine" ]
}

@test "a real CLI with network: the command plugin is installed the usual way, at the version node_modules asks for" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  fake_package command 9.8.7
  run in_env 'hg_pulumi_engine_missing; echo "rc=$?"; hg_pulumi_can_deploy_command && echo can-deploy'
  [ "${status}" -eq 0 ]
  [ "${output}" = $'rc=0\ncan-deploy' ]
  [ "$(grep -c '^call:' "${STANDIN_LOG}")" -eq 1 ]
  grep -qx 'call: plugin install resource command 9.8.7' "${STANDIN_LOG}"
  grep -qx 'PULUMI_HOME=<unset>' "${STANDIN_LOG}"
  grep -qx 'DISABLE=<unset>' "${STANDIN_LOG}"
  [ -x "${HOME}/.pulumi/plugins/resource-command-v9.8.7/pulumi-resource-command" ]
}

@test "installed already: nothing is downloaded again" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  mkdir -p "${HOME}/.pulumi/plugins/resource-command-v1.2.1"
  printf '#!/bin/sh\n' >"${HOME}/.pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command"
  chmod 755 "${HOME}/.pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command"
  run in_env 'hg_pulumi_engine_missing'
  [ "${status}" -eq 0 ]
  [ -z "${output}" ]
  [ ! -s "${STANDIN_LOG}" ]
}

@test "a half-installed plugin (.partial left by a killed install) is installed again" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  mkdir -p "${HOME}/.pulumi/plugins/resource-command-v1.2.1"
  printf '#!/bin/sh\n' >"${HOME}/.pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command"
  chmod 755 "${HOME}/.pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command"
  : >"${HOME}/.pulumi/plugins/resource-command-v1.2.1.partial"
  run in_env 'hg_pulumi_can_deploy_command || echo cannot; hg_pulumi_engine_missing'
  [ "${lines[0]}" = cannot ]
  grep -qx 'call: plugin install resource command 1.2.1' "${STANDIN_LOG}"
}

@test "no network: NOT RUN names the plugin, its version and how to supply it" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  export STANDIN_OFFLINE=1
  run in_env 'hg_pulumi_engine_missing'
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"the command provider plugin 1.2.1 (@pulumi/command) in ${HOME}/.pulumi: \`pulumi plugin install resource command 1.2.1\` failed"* ]]
  [[ "${output}" == *"HOSTGUARD_PULUMI_COMMAND_BIN=/path/to/pulumi-resource-command (v1.2.1)"* ]]
  [[ "${output}" == *"pulumi plugin install resource command 1.2.1 --file /path/to/pulumi-resource-command"* ]]
  grep -qx 'call: plugin install resource command 1.2.1' "${STANDIN_LOG}"
}

@test "no network, a supplied binary: installed from the file" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  export STANDIN_OFFLINE=1
  printf '#!/bin/sh\necho supplied\n' >"${T}/pulumi-resource-command"
  chmod 755 "${T}/pulumi-resource-command"
  export HOSTGUARD_PULUMI_COMMAND_BIN="${T}/pulumi-resource-command"
  run in_env 'hg_pulumi_engine_missing'
  [ "${status}" -eq 0 ]
  [ -z "${output}" ]
  grep -qx "call: plugin install resource command 1.2.1 --file ${T}/pulumi-resource-command" "${STANDIN_LOG}"
  [ "$("${HOME}/.pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command")" = supplied ]
}

@test "a supplied path that is not an executable file is named" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  export HOSTGUARD_PULUMI_COMMAND_BIN="${T}/nothing-here"
  run in_env 'hg_pulumi_engine_missing 2>&1'
  [[ "${output}" == *"HOSTGUARD_PULUMI_COMMAND_BIN=${T}/nothing-here is not an executable file"* ]]
  [[ "${output}" == *"the command provider plugin 1.2.1"* ]]
  [ ! -s "${STANDIN_LOG}" ]
}

@test "no real CLI: the built engine runs with the cache's PULUMI_HOME and installs there" {
  local built="${HOSTGUARD_PULUMI_CACHE}/cli-v3.259.0-langhost-sdk-v3.68.0"
  write_standin "${built}"
  TEST_PATH="${BASE_PATH}"
  run in_env 'echo "source=${HOSTGUARD_PULUMI_SOURCE} cli=$(command -v pulumi) home=${PULUMI_HOME} disable=${PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION}"; hg_pulumi_engine_missing'
  [ "${status}" -eq 0 ]
  [ "${output}" = "source=built cli=${built}/pulumi home=${HOSTGUARD_PULUMI_CACHE}/home disable=true" ]
  grep -qx 'call: plugin install resource command 1.2.1' "${STANDIN_LOG}"
  grep -qx "PULUMI_HOME=${HOSTGUARD_PULUMI_CACHE}/home" "${STANDIN_LOG}"
  [ -x "${HOSTGUARD_PULUMI_CACHE}/home/plugins/resource-command-v1.2.1/pulumi-resource-command" ]
}

@test "no CLI at all, or no language host, or no node_modules: each is named" {
  TEST_PATH="${BASE_PATH}"
  run in_env 'hg_pulumi_engine_missing'
  [[ "${output}" == "a pulumi CLI: none on PATH and none built in ${HOSTGUARD_PULUMI_CACHE}/cli-v3.259.0-langhost-sdk-v3.68.0 (install Pulumi's CLI, or run tools/build-pulumi.sh)" ]]
  rm "${T}/bin/pulumi-language-nodejs"
  TEST_PATH="${T}/bin:${BASE_PATH}"
  run in_env 'hg_pulumi_engine_missing'
  [ "${output}" = "the Node.js language host pulumi-language-nodejs, neither next to ${T}/bin/pulumi nor on PATH" ]
  rm -r "${FAKE_REPO}/node_modules/@pulumi/command"
  run in_env 'hg_pulumi_engine_missing'
  [ "${output}" = "node_modules/@pulumi/command is not installed (run npm ci in ${FAKE_REPO})" ]
  [ ! -s "${STANDIN_LOG}" ]
}

@test "the versions are the installed packages' own: no second list in tools/" {
  fake_package random 7.7.7
  TEST_PATH="${T}/bin:${BASE_PATH}"
  run in_env 'echo "${HOSTGUARD_COMMAND_VERSION} ${HOSTGUARD_RANDOM_VERSION}"'
  [ "${output}" = "1.2.1 7.7.7" ]
  # The repository's own tools read the repository's node_modules.
  run bash -c ". '${REPO}/tools/pulumi-env.sh'; echo \"\${HOSTGUARD_COMMAND_VERSION} \${HOSTGUARD_RANDOM_VERSION}\""
  [ "${output}" = "$(jq -r .version "${REPO}/node_modules/@pulumi/command/package.json") $(jq -r .version "${REPO}/node_modules/@pulumi/random/package.json")" ]
  run grep -nE '(COMMAND|RANDOM)_VERSION="?[0-9]' "${REPO}/tools/pulumi-env.sh" "${REPO}/tools/build-pulumi.sh"
  [ "${status}" -eq 1 ]
}

@test "npm run test:e2e offline prints NOT RUN naming the plugin and exits 0, having tried the usual install" {
  TEST_PATH="${T}/bin:${BASE_PATH}"
  export STANDIN_OFFLINE=1
  run env PATH="${TEST_PATH}" bash "${REPO}/test/e2e/run.sh"
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"npm run test:e2e: NOT RUN. NO SCENARIO HAS BEEN TESTED."* ]]
  [[ "${output}" == *"Missing: the command provider plugin $(jq -r .version "${REPO}/node_modules/@pulumi/command/package.json") (@pulumi/command)"* ]]
  [[ "${output}" == *"HOSTGUARD_PULUMI_COMMAND_BIN="* ]]
  grep -q '^call: plugin install resource command ' "${STANDIN_LOG}"
  grep -qx 'PULUMI_HOME=<unset>' "${STANDIN_LOG}"
}

@test "build-pulumi.sh with a real CLI: builds nothing, needs no Go, installs both plugins the usual way" {
  cp "${REPO}/tools/build-pulumi.sh" "${FAKE_REPO}/tools/"
  run env PATH="${T}/bin:${BASE_PATH}" GO=/nonexistent/go "${FAKE_REPO}/tools/build-pulumi.sh"
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"build-pulumi: cli: using ${T}/bin/pulumi as it is (v3.999.0)"* ]]
  [[ "${output}" == *"plugin command 1.2.1: installed in ${HOME}/.pulumi"* ]]
  [[ "${output}" == *"plugin random 4.21.2: installed in ${HOME}/.pulumi"* ]]
  [[ "${output}" == *"engine ready: ${T}/bin"* ]]
  [ ! -e "${HOSTGUARD_PULUMI_CACHE}" ]
  [ "$(grep '^call: plugin' "${STANDIN_LOG}")" = $'call: plugin install resource command 1.2.1\ncall: plugin install resource random 4.21.2' ]
  [ "$(grep -c '^PULUMI_HOME=<unset>$' "${STANDIN_LOG}")" -eq "$(grep -c '^call:' "${STANDIN_LOG}")" ]
  # Offline: each plugin is named UNAVAILABLE with how to supply it, and the script still succeeds.
  rm -r "${HOME}/.pulumi"
  run env PATH="${T}/bin:${BASE_PATH}" STANDIN_OFFLINE=1 "${FAKE_REPO}/tools/build-pulumi.sh"
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"plugin command 1.2.1: UNAVAILABLE here (\`pulumi plugin install resource command 1.2.1\` failed); supply its binary: HOSTGUARD_PULUMI_COMMAND_BIN=/path/to/pulumi-resource-command tools/build-pulumi.sh"* ]]
}
