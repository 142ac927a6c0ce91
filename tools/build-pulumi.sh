#!/usr/bin/env bash
# Makes the Pulumi engine ready for this repository. With a real `pulumi` CLI
# on PATH (Pulumi's installer, a package) that CLI is used as it is. Otherwise
# it builds, from the Go module proxy only, the CLI (pkg/v3) and the Node.js
# language host (a package of the sdk/v3 module up to v3.68.0), cached by
# version outside the repository, so a second run builds nothing. Then, for
# either CLI, the provider plugins the program needs are installed the usual
# way (`pulumi plugin install resource NAME VERSION`, versions read from
# node_modules/@pulumi/NAME) or from a supplied binary. Source
# tools/pulumi-env.sh afterwards to use the engine.
#
# Reads: HOSTGUARD_PULUMI_COMMAND_BIN, HOSTGUARD_PULUMI_RANDOM_BIN (provider
#   binaries to install instead of downloading, optional), HOSTGUARD_PULUMI_CACHE
#   (cache root, default ${XDG_CACHE_HOME:-$HOME/.cache}/hostguard/pulumi), GO
#   (go binary, default `go` on PATH or /usr/local/go/bin/go),
#   GOFLAGS/GOCACHE/GOMODCACHE as usual.
# Prints one line per piece ("cached", "built", "installed" or "UNAVAILABLE")
# and "engine ready: DIR". Fails only when building the CLI or language host
# fails; a plugin that cannot be installed is reported, not an error (the demo
# and the end-to-end tests then print NOT RUN naming it).
set -euo pipefail
umask 077

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR

# shellcheck source=tools/pulumi-env.sh
. "${SCRIPT_DIR}/pulumi-env.sh"
readonly PULUMI_VERSION="${HOSTGUARD_PULUMI_VERSION}"
readonly LANGHOST_SDK_VERSION="${HOSTGUARD_LANGHOST_SDK_VERSION}"
readonly CLIPBOARD_REPLACE="github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e"
readonly TEXT_REPLACE="golang.org/x/text => golang.org/x/text v0.3.6"
readonly VERSION_PKG="github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"
readonly LANGHOST_PKG="github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs"

readonly CACHE_ROOT="${HOSTGUARD_PULUMI_CACHE}"
readonly CLI_DIR="${HOSTGUARD_PULUMI_BIN}"
readonly LANGHOST_DIR="${CACHE_ROOT}/langhost-sdk-v${LANGHOST_SDK_VERSION}"

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

# wrapper_module DIR MODULE REQUIRES REPLACE IMPORT: the modules carry
# replace directives, so `go install pkg@version` refuses them; a wrapper
# module requires them instead and repeats their non-local replace.
wrapper_module() {
  local dir="$1" module="$2" requires="$3" replace="$4" import="$5"
  mkdir -p "${dir}"
  printf 'module %s\n\ngo 1.25\n\nrequire (\n%s)\n\nreplace %s\n' \
    "${module}" "${requires}" "${replace}" >"${dir}/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "${import}" >"${dir}/tools.go"
  (cd "${dir}" && GOFLAGS="${GOFLAGS:-} -mod=mod" "${GO_BIN}" mod tidy)
}

build_langhost() {
  local stage="${WORK_DIR}/langhost-out" mod="${WORK_DIR}/langhost-module"
  mkdir -p "${stage}"
  wrapper_module "${mod}" hostguard.local/pulumi-langhost \
    "	github.com/pulumi/pulumi/sdk/v3 v${LANGHOST_SDK_VERSION}
" "${TEXT_REPLACE}" "${LANGHOST_PKG}"
  (cd "${mod}" && go_build "${stage}/pulumi-language-nodejs" \
    "-X ${VERSION_PKG}=v${LANGHOST_SDK_VERSION}" "${LANGHOST_PKG}")
  install_dir "${stage}" "${LANGHOST_DIR}"
}

build_cli() {
  local stage="${WORK_DIR}/cli-out" mod="${WORK_DIR}/cli-module"
  mkdir -p "${stage}"
  wrapper_module "${mod}" hostguard.local/pulumi-cli \
    "	github.com/pulumi/pulumi/pkg/v3 v${PULUMI_VERSION}
	github.com/pulumi/pulumi/sdk/v3 v${PULUMI_VERSION}
" "${CLIPBOARD_REPLACE}" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  (cd "${mod}" && go_build "${stage}/pulumi" "-X ${VERSION_PKG}=v${PULUMI_VERSION}" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  # The CLI looks for its language host on PATH; keeping both in one
  # directory makes the pair one PATH entry.
  cp "${LANGHOST_DIR}/pulumi-language-nodejs" "${stage}/"
  install_nodejs_shim "${stage}"
  install_dir "${stage}" "${CLI_DIR}"
}

# Dynamic providers (pulumi.dynamic.Resource) are served by a shell shim that
# the CLI's release archive carries and @pulumi/pulumi also ships; it resolves
# the SDK from the program's directory, so one copy next to the CLI serves all.
install_nodejs_shim() {
  local dest="$1"
  local shim="${SCRIPT_DIR}/../node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs"
  if [[ -f "${shim}" ]]; then
    install -m 755 "${shim}" "${dest}/pulumi-resource-pulumi-nodejs"
  else
    log "node_modules not installed: pulumi-resource-pulumi-nodejs left out"
  fi
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
  log "${name}: building from the Go module proxy (minutes on a small machine)"
  "${builder}"
  log "${name}: built in $((SECONDS - start))s"
}

# provide_plugin NAME VERSION: installs the plugin the usual way (or from
# HOSTGUARD_PULUMI_<NAME>_BIN); when that fails, says how to supply it.
provide_plugin() {
  local name="$1" version="$2" where="${PULUMI_HOME:-${HOME}/.pulumi}"
  if [[ -z "${version}" ]]; then
    log "plugin ${name}: node_modules/@pulumi/${name} is not installed (run npm ci): nothing to install"
  elif hg_pulumi_plugin_installed "${name}" "${version}"; then
    log "plugin ${name} ${version}: already installed in ${where}"
  elif hg_pulumi_install_plugin "${name}" "${version}"; then
    log "plugin ${name} ${version}: installed in ${where}"
  else
    log "plugin ${name} ${version}: UNAVAILABLE here (\`pulumi plugin install resource ${name} ${version}\` failed); supply its binary: HOSTGUARD_PULUMI_${name^^}_BIN=/path/to/pulumi-resource-${name} tools/build-pulumi.sh"
  fi
}

main() {
  if [[ "${HOSTGUARD_PULUMI_SOURCE}" == system ]]; then
    log "cli: using $(command -v pulumi) as it is ($(pulumi version 2>/dev/null || echo 'version unknown'))"
  else
    GO_BIN="$(find_go)"
    readonly GO_BIN
    mkdir -p "${CACHE_ROOT}" "${PULUMI_HOME}"
    WORK_DIR="$(mktemp -d "${CACHE_ROOT}/.work.XXXXXX")"
    trap cleanup EXIT
    ensure "language host (sdk v${LANGHOST_SDK_VERSION})" "${LANGHOST_DIR}" \
      pulumi-language-nodejs build_langhost
    ensure "cli v${PULUMI_VERSION}" "${CLI_DIR}" pulumi build_cli
  fi
  # The plugins the program deploys with; the proxy serves neither provider
  # (github.com/pulumi/pulumi-command/provider, pulumi-random/provider), so
  # they come from Pulumi's own download server or a supplied binary.
  provide_plugin command "${HOSTGUARD_COMMAND_VERSION}"
  provide_plugin random "${HOSTGUARD_RANDOM_VERSION}"
  printf 'engine ready: %s\n' "$(dirname "$(command -v pulumi)")"
}

main "$@"
