#!/usr/bin/env bash
# PID 1 of one disposable test host (see hosts.sh, which starts it inside the
# host's network namespace, in fresh mount and PID namespaces). Gives the host
# its own filesystem view without touching the machine's own files: overlays
# over /etc, /var, /usr/local, /opt and /srv (writes land in HOST_DIR), fresh /root,
# /var/log, /var/lib/fail2ban, /dev, /run and /tmp. Starts systemd-journald (as
# systemd would: /dev/log is its socket), writes the host's own admin config
# (sshd drop-in, host key, authorized key), prints "ready" and stays as the
# reaper of the host's daemons until killed. Packages' configuration is left
# as they install it (test/e2e/lib/README.md lists what a host adds and why).
#
# With ROOT (a host of another OS, see os-root.sh), that root is the host's
# whole filesystem instead: an overlay of it (writes land in HOST_DIR) becomes
# "/" (pivot_root), with /proc, /sys and /dev, and the machine's own root is
# unmounted; its /root, /var/log and /var/lib/fail2ban are the root's own.
#
# Usage: host-init.sh HOST_DIR ADDR AUTHORIZED_KEY_FILE HOSTNAME [ROOT]
# Reads: /usr/share/base-files/dot.{bashrc,profile} for the fresh /root.
set -euo pipefail
umask 022

readonly OVERLAID=(etc var usr/local opt srv)

die() {
  printf 'host-init: %s\n' "$*" >&2
  exit 1
}

# The merged root of an overlay shows the upper directory's mode and owner.
mount_overlay() {
  local host_dir="$1" dir="$2"
  local base="${host_dir}/ovl/${dir//\//_}"
  mkdir -p "${base}/upper" "${base}/work"
  chmod --reference="/${dir}" "${base}/upper"
  chown --reference="/${dir}" "${base}/upper"
  mount -t overlay overlay \
    -o "lowerdir=/${dir},upperdir=${base}/upper,workdir=${base}/work" "/${dir}"
}

# The host's filesystem is ROOT through an overlay; the machine's is gone.
enter_root() {
  local host_dir="$1" root="$2" base="$1/sysroot"
  mkdir -p "${base}/upper" "${base}/work" "${base}/merged"
  mount -t overlay overlay \
    -o "lowerdir=${root},upperdir=${base}/upper,workdir=${base}/work" "${base}/merged"
  mount -t proc proc "${base}/merged/proc"
  mount -t sysfs sysfs "${base}/merged/sys"
  mount --rbind /dev "${base}/merged/dev"
  mkdir "${base}/merged/.hg-old-root"
  cd "${base}/merged"
  pivot_root . .hg-old-root
  cd /
  umount --lazy /.hg-old-root
  rmdir /.hg-old-root
}

authorize_key() {
  local key_text="$1"
  install -d -m 0700 /root/.ssh
  printf '%s\n' "${key_text}" >/root/.ssh/authorized_keys
  chmod 0600 /root/.ssh/authorized_keys
}

fresh_bind() {
  local src="$1" target="$2" mode="$3"
  mkdir -p "${src}"
  chmod "${mode}" "${src}"
  mount --bind "${src}" "${target}"
}

make_root_home() {
  local host_dir="$1" key_text="$2"
  fresh_bind "${host_dir}/root" /root 0700
  cp /usr/share/base-files/dot.bashrc /root/.bashrc
  cp /usr/share/base-files/dot.profile /root/.profile
  authorize_key "${key_text}"
}

# A fresh /var/log holding what the packages' installs made there: nginx's
# logs (nginx-common's postinst) and the persistent journal's directory
# (package systemd). No auth.log: Debian 12 has no rsyslog.
make_var_log() {
  local host_dir="$1"
  fresh_bind "${host_dir}/varlog" /var/log 0755
  install -d -m 0755 -o root -g adm /var/log/nginx
  install -m 0640 -o www-data -g adm /dev/null /var/log/nginx/access.log
  install -m 0640 -o www-data -g adm /dev/null /var/log/nginx/error.log
  install -d -m 2755 -o root -g systemd-journal /var/log/journal
  fresh_bind "${host_dir}/f2bdb" /var/lib/fail2ban 0755
}

# A private /dev: the machine's basic devices, its own ptys, and /dev/log,
# the journal's syslog socket (as systemd links it), which the machine's /dev
# must not get.
make_dev() {
  local dev="$1/dev" node
  mkdir -p "${dev}"
  mount -t tmpfs -o mode=0755,nosuid tmpfs "${dev}"
  for node in null zero full random urandom tty; do
    : >"${dev}/${node}"
    mount --bind "/dev/${node}" "${dev}/${node}"
  done
  mkdir "${dev}/pts" "${dev}/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "${dev}/pts"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "${dev}/shm"
  ln -s pts/ptmx "${dev}/ptmx"
  ln -s /proc/self/fd "${dev}/fd"
  ln -s /proc/self/fd/0 "${dev}/stdin"
  ln -s /proc/self/fd/1 "${dev}/stdout"
  ln -s /proc/self/fd/2 "${dev}/stderr"
  ln -s /run/systemd/journal/dev-log "${dev}/log"
  mount --move "${dev}" /dev
}

# systemd-journald as systemd starts it (it makes its own sockets when none
# are passed). Its journal stays in /run/log/journal (no
# systemd-journal-flush here); fail2ban and journalctl read both places.
start_journal() {
  local i
  /lib/systemd/systemd-journald </dev/null >/dev/null 2>&1 &
  for ((i = 0; i < 100; i++)); do
    [[ -S /run/systemd/journal/dev-log ]] && break
    sleep 0.05
  done
  [[ -S /run/systemd/journal/dev-log ]] || die "systemd-journald did not start"
}

make_volatile() {
  mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
  install -d -m 0755 /run/sshd /run/fail2ban
  install -d -m 1777 /run/lock
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
}

# What a real host's admin would have set: root login with the run's key on
# the host's address.
write_admin_config() {
  local addr="$1"
  rm -f /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub
  ssh-keygen -q -t ed25519 -N '' -C "hostguard-test-host" \
    -f /etc/ssh/ssh_host_ed25519_key
  cat >/etc/ssh/sshd_config.d/00-hostguard-test-host.conf <<EOF
# Disposable test host (test/e2e/lib): root login with a key on the host
# address; no PAM (no logind here); see test/e2e/lib/README.md.
ListenAddress ${addr}
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
UsePAM no
StrictModes yes
AuthorizedKeysFile .ssh/authorized_keys
PidFile /run/sshd.pid
MaxStartups 200
MaxSessions 100
EOF
}

# Own UTS namespace: each host of a fleet tells its own name.
set_hostname() {
  local name="$1" addr="$2"
  hostname "${name}"
  printf '%s\n' "${name}" >/etc/hostname
  printf '%s\t%s\n' "${addr}" "${name}" >>/etc/hosts
}

reap_forever() {
  trap 'exit 0' TERM INT
  while :; do
    sleep 3600 &
    wait "$!" || true
  done
}

main() {
  (($# == 4 || $# == 5)) || die "usage: host-init.sh HOST_DIR ADDR AUTHORIZED_KEY_FILE HOSTNAME [ROOT]"
  local host_dir="$1" addr="$2" key_file="$3" name="$4" root="${5:-}" dir key_text
  [[ "$$" == 1 ]] || die "must run as PID 1 of a fresh PID namespace"
  key_text="$(<"${key_file}")"
  if [[ -n "${root}" ]]; then
    enter_root "${host_dir}" "${root}"
    authorize_key "${key_text}"
  else
    # /sys as seen from this network namespace (ip, ss and nginx read it),
    # with the machine's cgroup tree kept under it (journald needs its cgroup root).
    mkdir -p "${host_dir}/cgroup"
    mount --rbind /sys/fs/cgroup "${host_dir}/cgroup"
    mount -t sysfs sysfs /sys
    mount --move "${host_dir}/cgroup" /sys/fs/cgroup
    for dir in "${OVERLAID[@]}"; do
      [[ -d "/${dir}" ]] || continue
      mount_overlay "${host_dir}" "${dir}"
    done
    make_root_home "${host_dir}" "${key_text}"
    make_var_log "${host_dir}"
    make_dev "${host_dir}"
  fi
  make_volatile
  [[ -n "${root}" ]] || start_journal
  write_admin_config "${addr}"
  set_hostname "${name}" "${addr}"
  cd /
  echo ready
  exec >/dev/null 2>&1 </dev/null
  reap_forever
}

main "$@"
