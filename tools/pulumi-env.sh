# shellcheck shell=bash
# Source this file (`. tools/pulumi-env.sh`) to run the Pulumi engine built by
# tools/build-pulumi.sh: puts the cached CLI and language host and the
# repository's Node 22 first on PATH, points PULUMI_HOME at the cache (where
# provider plugins are installed) and turns off everything that would reach
# the internet. It is also the one place that names the engine's versions;
# build-pulumi.sh reads them here.
# Reads: HOSTGUARD_PULUMI_CACHE, XDG_CACHE_HOME, HOME.
# Callers choose the backend (PULUMI_BACKEND_URL=file://DIR keeps the shared
# PULUMI_HOME free of login state) and PULUMI_CONFIG_PASSPHRASE themselves.
# Tests ask hg_pulumi_can_deploy_command before deploying @pulumi/command.

# The CLI: newest pkg/v3 the Go module proxy serves (403 from v3.260.0 on).
HOSTGUARD_PULUMI_VERSION="3.259.0"
# The Node.js language host: newest sdk/v3 on the proxy whose module still
# holds nodejs/cmd/pulumi-language-nodejs (v3.69.0 moved it out).
HOSTGUARD_LANGHOST_SDK_VERSION="3.68.0"
# Provider plugins the program needs; not buildable from the registries, see
# tools/README.md. The command version matches node_modules/@pulumi/command.
HOSTGUARD_COMMAND_VERSION="1.2.1"
HOSTGUARD_RANDOM_VERSION="4.21.1"
HOSTGUARD_PULUMI_CACHE="${HOSTGUARD_PULUMI_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/pulumi}"
# A new key per CLI/language-host pair, so a pair built another way never
# shadows this one.
HOSTGUARD_PULUMI_BIN="${HOSTGUARD_PULUMI_CACHE}/cli-v${HOSTGUARD_PULUMI_VERSION}-langhost-sdk-v${HOSTGUARD_LANGHOST_SDK_VERSION}"
HOSTGUARD_NODE_BIN="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/node_modules/.bin"
export HOSTGUARD_PULUMI_VERSION HOSTGUARD_LANGHOST_SDK_VERSION
export HOSTGUARD_COMMAND_VERSION HOSTGUARD_RANDOM_VERSION
export HOSTGUARD_PULUMI_CACHE HOSTGUARD_PULUMI_BIN HOSTGUARD_NODE_BIN

# The language host starts `node` from PATH: it must be the repository's 22.
for hg_dir in "${HOSTGUARD_NODE_BIN}" "${HOSTGUARD_PULUMI_BIN}"; do
  case ":${PATH}:" in
    *":${hg_dir}:"*) ;;
    *) PATH="${hg_dir}:${PATH}" ;;
  esac
done
unset hg_dir
export PATH

export PULUMI_HOME="${HOSTGUARD_PULUMI_CACHE}/home"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

# hg_pulumi_plugin_installed NAME VERSION: the resource plugin is in PULUMI_HOME.
hg_pulumi_plugin_installed() {
  [[ -x "${PULUMI_HOME}/plugins/resource-$1-v$2/pulumi-resource-$1" ]]
}

# Succeeds when this engine can deploy a program using @pulumi/command: a
# pulumi CLI with a Node.js language host beside it, and the command plugin.
hg_pulumi_can_deploy_command() {
  local cli
  cli="$(command -v pulumi 2>/dev/null)" || return 1
  [[ -x "$(dirname "${cli}")/pulumi-language-nodejs" ]] || return 1
  hg_pulumi_plugin_installed command "${HOSTGUARD_COMMAND_VERSION}"
}
