# shellcheck shell=bash
# Source this file (`. tools/pulumi-env.sh`) to run the Pulumi engine built by
# tools/build-pulumi.sh: puts the cached CLI and the repository's Node 22 first
# on PATH, points PULUMI_HOME at the cache (where the plugins are installed)
# and turns off everything that would reach the internet. It is also the one
# place that names the engine's versions; build-pulumi.sh reads them here.
# Reads: HOSTGUARD_PULUMI_CACHE, XDG_CACHE_HOME, HOME.
# Callers choose the backend (PULUMI_BACKEND_URL=file://DIR keeps the shared
# PULUMI_HOME free of login state) and PULUMI_CONFIG_PASSPHRASE themselves.

HOSTGUARD_PULUMI_VERSION="3.259.0"
HOSTGUARD_COMMAND_VERSION="1.2.1"
HOSTGUARD_RANDOM_VERSION="4.21.1"
HOSTGUARD_PULUMI_CACHE="${HOSTGUARD_PULUMI_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/pulumi}"
HOSTGUARD_PULUMI_BIN="${HOSTGUARD_PULUMI_CACHE}/cli-v${HOSTGUARD_PULUMI_VERSION}"
HOSTGUARD_NODE_BIN="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/node_modules/.bin"
export HOSTGUARD_PULUMI_VERSION HOSTGUARD_COMMAND_VERSION HOSTGUARD_RANDOM_VERSION
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
