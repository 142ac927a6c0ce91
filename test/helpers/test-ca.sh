#!/usr/bin/env bash
# Makes a throwaway certificate authority and a server certificate for the
# test webhook receiver, plus a second, unrelated CA and server certificate
# for the "wrong certificate" fault. Test-only; never used on a server.
#
# Usage: test-ca.sh DIR [EXTRA_IP...]
# Writes into DIR: ca.pem ca.key server.pem server.key (SAN: 127.0.0.1, ::1,
# localhost and every EXTRA_IP), wrong-ca.pem wrong-ca.key wrong-server.pem
# wrong-server.key (same SANs, signed by the unrelated CA).
set -euo pipefail
umask 077

readonly DAYS=2

die() {
  printf 'test-ca: %s\n' "$*" >&2
  exit 1
}

make_ca() {
  local dir="$1" name="$2" cn="$3"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -days "${DAYS}" -subj "/CN=${cn}" \
    -addext 'basicConstraints=critical,CA:TRUE' \
    -addext 'keyUsage=critical,keyCertSign,cRLSign' \
    -keyout "${dir}/${name}.key" -out "${dir}/${name}.pem" 2>/dev/null
}

make_server() {
  local dir="$1" name="$2" ca="$3" san="$4"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj '/CN=localhost' -keyout "${dir}/${name}.key" \
    -out "${dir}/${name}.csr" 2>/dev/null
  openssl x509 -req -in "${dir}/${name}.csr" -days "${DAYS}" \
    -CA "${dir}/${ca}.pem" -CAkey "${dir}/${ca}.key" -CAcreateserial \
    -CAserial "${dir}/${ca}.srl" -out "${dir}/${name}.pem" \
    -extfile <(printf '%s\n' "subjectAltName=${san}" \
      'basicConstraints=critical,CA:FALSE' \
      'keyUsage=critical,digitalSignature' \
      'extendedKeyUsage=serverAuth') 2>/dev/null
  rm -f "${dir}/${name}.csr"
}

main() {
  (($# >= 1)) || die "usage: test-ca.sh DIR [EXTRA_IP...]"
  local dir="$1"
  shift
  local san="DNS:localhost,IP:127.0.0.1,IP:::1" ip
  for ip in "$@"; do
    [[ "${ip}" =~ ^[0-9A-Fa-f.:]+$ ]] || die "not an IP address: ${ip}"
    san+=",IP:${ip}"
  done
  mkdir -p "${dir}"
  make_ca "${dir}" ca hostguard-test-ca
  make_server "${dir}" server ca "${san}"
  make_ca "${dir}" wrong-ca hostguard-unrelated-ca
  make_server "${dir}" wrong-server wrong-ca "${san}"
  # The receiver may run as another user in namespaces; certs are public.
  chmod 0644 "${dir}"/*.pem
}

main "$@"
