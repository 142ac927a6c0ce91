#!/usr/bin/env bash
# Builds the Pulumi engine for machines with no internet: the CLI, the Node.js
# language host and the command and random provider plugins, from Go sources
# (the Go module proxy plus the upstream sources kept in tools/third_party).
# Binaries are cached by version outside the repository, so a second run
# builds nothing; the plugins are installed into the cache's PULUMI_HOME.
# Source tools/pulumi-env.sh afterwards to use them.
#
# Reads: HOSTGUARD_BUILD_RANDOM=1 (also try the random plugin), HOSTGUARD_PULUMI_CACHE (cache root, default
#   ${XDG_CACHE_HOME:-$HOME/.cache}/hostguard/pulumi), GO (go binary, default
#   `go` on PATH or /usr/local/go/bin/go), GOFLAGS/GOCACHE/GOMODCACHE as usual.
# Prints one line per piece ("cached" or "built") and "engine ready: DIR".
set -euo pipefail
umask 077

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
readonly THIRD_PARTY="${SCRIPT_DIR}/third_party"

# shellcheck source=tools/pulumi-env.sh
. "${SCRIPT_DIR}/pulumi-env.sh"
# The CLI is built from pkg/v3 at the newest version the module proxy serves
# (it refuses pkg/v3 zips from v3.260.0 on, so 3.270.0 cannot be built here);
# random 4.21.2's sources are not to be had, 4.21.1 is the newest.
readonly PULUMI_VERSION="${HOSTGUARD_PULUMI_VERSION}"
readonly COMMAND_VERSION="${HOSTGUARD_COMMAND_VERSION}"
readonly RANDOM_VERSION="${HOSTGUARD_RANDOM_VERSION}"
readonly CLIPBOARD_REPLACE="github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e"
readonly VERSION_PKG="github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"

readonly CACHE_ROOT="${HOSTGUARD_PULUMI_CACHE}"
readonly CLI_DIR="${HOSTGUARD_PULUMI_BIN}"
readonly COMMAND_DIR="${CACHE_ROOT}/command-v${COMMAND_VERSION}"
readonly RANDOM_DIR="${CACHE_ROOT}/random-v${RANDOM_VERSION}"
readonly PULUMI_HOME_DIR="${PULUMI_HOME}"

WORK_DIR=""

log() {
  printf 'build-pulumi: %s\n' "$*" >&2
}

die() {
  log "error: $*"
  exit 1
}

cleanup() {
  if [[ -n "${WORK_DIR}" && -d "${WORK_DIR}" ]]; then
    # Go's module cache files are read-only; make them removable first.
    chmod -R u+w "${WORK_DIR}" 2>/dev/null || true
    rm -rf "${WORK_DIR}"
  fi
}

find_go() {
  if [[ -n "${GO:-}" ]]; then
    printf '%s\n' "${GO}"
  elif command -v go >/dev/null 2>&1; then
    command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then
    printf '%s\n' /usr/local/go/bin/go
  else
    die "no Go toolchain found (set GO=/path/to/go)"
  fi
}

# go_build OUT_BINARY LDFLAGS PACKAGE: run in the current module directory.
go_build() {
  local out="$1" ldflags="$2" pkg="$3"
  CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" \
    "${GO_BIN}" build -trimpath -ldflags "-s -w ${ldflags}" -o "${out}" "${pkg}"
}

# A real pulumi of the right version on PATH (with its language host next to
# it) makes building the CLI unnecessary.
system_pulumi_usable() {
  local found version
  found="$(command -v pulumi 2>/dev/null || true)"
  [[ -n "${found}" && "${found}" != "${CLI_DIR}/pulumi" ]] || return 1
  [[ -x "$(dirname "${found}")/pulumi-language-nodejs" ]] || return 1
  version="$(PULUMI_SKIP_UPDATE_CHECK=true "${found}" version 2>/dev/null || true)"
  [[ "${version}" == "v${PULUMI_VERSION}" ]]
}

build_cli() {
  local stage="${WORK_DIR}/cli-out" mod="${WORK_DIR}/cli-module"
  mkdir -p "${stage}" "${mod}"
  # pkg/v3's go.mod has replace directives, so `go install pkg@version`
  # refuses it: a wrapper module requires it and repeats the non-local replace.
  cat >"${mod}/go.mod" <<EOF
module hostguard.local/pulumi-cli

go 1.25

require (
	github.com/pulumi/pulumi/pkg/v3 v${PULUMI_VERSION}
	github.com/pulumi/pulumi/sdk/v3 v${PULUMI_VERSION}
)

replace ${CLIPBOARD_REPLACE}
EOF
  cat >"${mod}/tools.go" <<'EOF'
//go:build tools

package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
EOF
  (cd "${mod}" && GOFLAGS="${GOFLAGS:-} -mod=mod" "${GO_BIN}" mod tidy)
  (cd "${mod}" && go_build "${stage}/pulumi" "-X ${VERSION_PKG}=v${PULUMI_VERSION}" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)

  cp -R "${THIRD_PARTY}/pulumi-language-nodejs" "${WORK_DIR}/langhost"
  (cd "${WORK_DIR}/langhost" && go_build "${stage}/pulumi-language-nodejs" \
    "-X ${VERSION_PKG}=v${PULUMI_VERSION}" .)
  install_dir "${stage}" "${CLI_DIR}"
}

build_command() {
  local stage="${WORK_DIR}/command-out"
  mkdir -p "${stage}"
  cp -R "${THIRD_PARTY}/pulumi-command" "${WORK_DIR}/command"
  (cd "${WORK_DIR}/command/provider" && go_build "${stage}/pulumi-resource-command" \
    "-X github.com/pulumi/pulumi-command/provider/pkg/version.Version=${COMMAND_VERSION}" \
    ./cmd/pulumi-resource-command)
  install_dir "${stage}" "${COMMAND_DIR}"
}

build_random() {
  local stage="${WORK_DIR}/random-out" src="${WORK_DIR}/random/provider"
  mkdir -p "${stage}"
  cp -R "${THIRD_PARTY}/pulumi-random" "${WORK_DIR}/random"
  # main.go embeds schema-embed.json, which upstream generates at build time
  # from the committed schema.json (with the version stamped in).
  (cd "${src}/cmd/pulumi-resource-random" &&
    VERSION="${RANDOM_VERSION}" GOFLAGS="${GOFLAGS:-} -mod=mod" "${GO_BIN}" run generate.go)
  [[ -s "${src}/cmd/pulumi-resource-random/schema-embed.json" ]] ||
    die "random: schema-embed.json was not generated"
  (cd "${src}" && go_build "${stage}/pulumi-resource-random" \
    "-X github.com/pulumi/pulumi-random/provider/v4/pkg/version.Version=${RANDOM_VERSION}" \
    ./cmd/pulumi-resource-random)
  install_dir "${stage}" "${RANDOM_DIR}"
}

# Publish a finished build in one rename, so an interrupted run never leaves
# a half-filled cache directory that looks complete.
install_dir() {
  local stage="$1" dest="$2"
  chmod 755 "${stage}" "${stage}"/*
  rm -rf "${dest}"
  mv "${stage}" "${dest}"
}

# ensure NAME DIR BINARY BUILD_FUNCTION
ensure() {
  local name="$1" dir="$2" binary="$3" builder="$4" start
  if [[ -x "${dir}/${binary}" ]]; then
    log "${name}: cached (${dir})"
    return 0
  fi
  start="${SECONDS}"
  log "${name}: building (this takes minutes on a small machine)"
  "${builder}"
  log "${name}: built in $((SECONDS - start))s"
}

pulumi_cli() {
  if [[ -x "${CLI_DIR}/pulumi" ]]; then
    printf '%s\n' "${CLI_DIR}/pulumi"
  else
    command -v pulumi
  fi
}

install_plugin() {
  local name="$1" version="$2" binary="$3" cli
  if [[ -x "${PULUMI_HOME_DIR}/plugins/resource-${name}-v${version}/pulumi-resource-${name}" ]]; then
    log "plugin ${name} ${version}: cached"
    return 0
  fi
  cli="$(pulumi_cli)"
  PULUMI_HOME="${PULUMI_HOME_DIR}" PULUMI_SKIP_UPDATE_CHECK=true \
    "${cli}" plugin install resource "${name}" "${version}" --file "${binary}" >&2
  log "plugin ${name} ${version}: installed"
}

# Dynamic providers (pulumi.dynamic.Resource) are served by a shell shim that
# the CLI's release archive carries and @pulumi/pulumi also ships; it resolves
# the SDK from the program's directory, so one copy next to the CLI serves all.
install_nodejs_shims() {
  local shim="${SCRIPT_DIR}/../node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs"
  [[ -d "${CLI_DIR}" && ! -x "${CLI_DIR}/pulumi-resource-pulumi-nodejs" ]] || return 0
  if [[ -f "${shim}" ]]; then
    install -m 755 "${shim}" "${CLI_DIR}/pulumi-resource-pulumi-nodejs"
  else
    log "node_modules not installed: pulumi-resource-pulumi-nodejs left out"
  fi
}

main() {
  GO_BIN="$(find_go)"
  readonly GO_BIN
  mkdir -p "${CACHE_ROOT}" "${PULUMI_HOME_DIR}"
  WORK_DIR="$(mktemp -d "${CACHE_ROOT}/.work.XXXXXX")"
  trap cleanup EXIT

  if system_pulumi_usable; then
    log "cli: using $(command -v pulumi) (v${PULUMI_VERSION})"
  else
    ensure "cli v${PULUMI_VERSION}" "${CLI_DIR}" pulumi-language-nodejs build_cli
  fi
  install_nodejs_shims
  ensure "command v${COMMAND_VERSION}" "${COMMAND_DIR}" pulumi-resource-command build_command
  # Random stays opt-in: its bridge (pulumi-terraform-bridge v3.135.0) needs
  # pseudo-versions of pulumi-yaml and pulumi-language-dotnet that the module
  # proxy refuses (403), so on this network its build fails.
  if [[ "${HOSTGUARD_BUILD_RANDOM:-0}" == "1" ]]; then
    ensure "random v${RANDOM_VERSION}" "${RANDOM_DIR}" pulumi-resource-random build_random
  else
    log "random v${RANDOM_VERSION}: skipped (set HOSTGUARD_BUILD_RANDOM=1 to try)"
  fi

  install_plugin command "${COMMAND_VERSION}" "${COMMAND_DIR}/pulumi-resource-command"
  if [[ -x "${RANDOM_DIR}/pulumi-resource-random" ]]; then
    install_plugin random "${RANDOM_VERSION}" "${RANDOM_DIR}/pulumi-resource-random"
  fi
  printf 'engine ready: %s\n' "${CACHE_ROOT}"
}

main "$@"
