#!/usr/bin/env bats
# tools/setup.bash, the set-up shared by `npm test`, `npm run demo` and
# .ci/run: npm ci runs only when the lock file changed since the last
# successful one (real npm, on a package whose only dependency is a local
# directory, so no registry is needed), each list it owns is written once,
# and moto's venv is recognised by its pinned version.

REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"

setup() {
  export npm_config_cache="${BATS_TEST_TMPDIR}/npm-cache"
  PKG="${BATS_TEST_TMPDIR}/pkg"
  mkdir -p "${PKG}/dep"
  printf '{"name": "dep", "version": "1.0.0"}\n' >"${PKG}/dep/package.json"
  printf '{"name": "pkg", "version": "1.0.0", "dependencies": {"dep": "file:dep"}}\n' >"${PKG}/package.json"
  (cd "${PKG}" && npm install --package-lock-only --no-audit --no-fund >/dev/null 2>&1)
}

# setup_run FUNCTION ARGS...: the function from tools/setup.bash, in a new shell.
setup_run() {
  bash -c 'set -euo pipefail; source "$1"; shift; "$@"' _ "${REPO}/tools/setup.bash" "$@"
}

@test "npm ci runs once per lock file: a second call installs nothing, a changed lock installs again" {
  run setup_run hg_npm_ci "${PKG}"
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"npm ci in ${PKG}"* ]]
  [ -L "${PKG}/node_modules/dep" ]
  [ -s "${PKG}/node_modules/.hostguard-lock.sha256" ]
  # A file npm ci would delete: it survives a second call, which runs nothing.
  touch "${PKG}/node_modules/marker"
  run setup_run hg_npm_ci "${PKG}"
  [ "${status}" -eq 0 ]
  [ -z "${output}" ]
  [ -e "${PKG}/node_modules/marker" ]
  # A new dependency: the lock changes, npm ci runs again.
  mkdir -p "${PKG}/dep2"
  printf '{"name": "dep2", "version": "1.0.0"}\n' >"${PKG}/dep2/package.json"
  (cd "${PKG}" && npm install --package-lock-only --no-audit --no-fund ./dep2 >/dev/null 2>&1)
  run setup_run hg_npm_ci "${PKG}"
  [ "${status}" -eq 0 ]
  [[ "${output}" == *"npm ci in ${PKG}"* ]]
  [ ! -e "${PKG}/node_modules/marker" ]
  [ -L "${PKG}/node_modules/dep2" ]
}

@test "a failed npm ci renews no stamp: each next call tries again until one succeeds" {
  setup_run hg_npm_ci "${PKG}"
  local good
  good="$(cat "${PKG}/node_modules/.hostguard-lock.sha256")"
  # A lock file npm cannot read: npm ci fails, the stamp is not renewed.
  cp "${PKG}/package-lock.json" "${BATS_TEST_TMPDIR}/lock.good"
  printf 'not a lock file\n' >"${PKG}/package-lock.json"
  run setup_run hg_npm_ci "${PKG}"
  [ "${status}" -ne 0 ]
  [[ "${output}" == *"npm ci in ${PKG}"* ]]
  run setup_run hg_npm_ci "${PKG}"
  [ "${status}" -ne 0 ]
  [[ "${output}" == *"npm ci in ${PKG}"* ]]
  # The good lock back: what the failed runs left is a complete install of it.
  cp "${BATS_TEST_TMPDIR}/lock.good" "${PKG}/package-lock.json"
  run setup_run hg_npm_ci "${PKG}"
  [ "${status}" -eq 0 ]
  [ "$(cat "${PKG}/node_modules/.hostguard-lock.sha256")" = "${good}" ]
  [ -L "${PKG}/node_modules/dep" ]
}

@test "every Debian package of the list is installed here, and the list is written only in tools/setup.bash" {
  run setup_run hg_missing_debian_packages
  [ "${status}" -eq 0 ]
  [ -z "${output}" ]
  # No other file installs Debian packages.
  run git -C "${REPO}" grep -l -E 'apt-get( [^ ]+)* install' -- .ci tools test bench package.json ':!test/tools/setup.bats'
  echo "${output}"
  [ "${output}" = "tools/setup.bash" ]
  grep -qx '  npm test' "${REPO}/.ci/run"
  grep -q '^source tools/setup.bash$' "${REPO}/test/run-all.sh"
}

@test "moto: the venv npm test uses is recognised (nothing installed again); one with another moto version is not" {
  local venv="${HOSTGUARD_MOTO_VENV:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/moto-venv}"
  # The real venv, as hg_setup_for_tests left it: a second call installs nothing.
  run setup_run hg_setup_moto
  [ "${status}" -eq 0 ]
  [ -z "${output}" ]
  [ -x "${venv}/bin/moto_server" ]
  # A venv whose moto is another version (or missing) counts as not installed.
  local fake="${BATS_TEST_TMPDIR}/venv"
  mkdir -p "${fake}/bin"
  printf '#!/bin/sh\nexit 0\n' >"${fake}/bin/moto_server"
  printf '#!/bin/sh\necho 5.0.0\n' >"${fake}/bin/python"
  chmod +x "${fake}/bin/moto_server" "${fake}/bin/python"
  HOSTGUARD_MOTO_VENV="${fake}" run setup_run hg_moto_installed
  [ "${status}" -ne 0 ]
  rm "${fake}/bin/moto_server"
  printf '#!/bin/sh\necho %s\n' "$(bash -c 'source "$1"; echo "${HG_MOTO_VERSION}"' _ "${REPO}/tools/setup.bash")" >"${fake}/bin/python"
  HOSTGUARD_MOTO_VENV="${fake}" run setup_run hg_moto_installed
  [ "${status}" -ne 0 ]
  # The pinned version with its moto_server: installed.
  printf '#!/bin/sh\nexit 0\n' >"${fake}/bin/moto_server"
  chmod +x "${fake}/bin/moto_server"
  HOSTGUARD_MOTO_VENV="${fake}" run setup_run hg_moto_installed
  [ "${status}" -eq 0 ]
}
