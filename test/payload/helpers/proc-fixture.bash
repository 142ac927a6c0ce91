# shellcheck shell=bash
# A fixed /proc for the host monitor (HOSTGUARD_PROC), shared by host-monitor.bats
# and formats.bats. Load with `load helpers/proc-fixture`.
#
#   make_proc DIR            CPU 12.3 % since the saved sample, memory 90.92 %
#                            (1862 of 2048 MiB), 41 processes (42 lines with ps's header)
#   save_previous_sample     the sample the previous run would have left in
#                            $HOSTGUARD_ROOT: 1000 busy of 10000 jiffies

make_proc() {
  local dir="$1" i
  mkdir -p "${dir}/sys/kernel/random"
  echo 'cpu  1534 50 700 16966 500 100 100 50 300 0' >"${dir}/stat"
  echo 'cpu0 1534 50 700 16966 500 100 100 50 300 0' >>"${dir}/stat"
  printf '%s\n' 'MemTotal:        2097152 kB' 'MemFree:          100000 kB' \
    'MemAvailable:     190000 kB' 'Buffers:           10000 kB' \
    'Cached:            50000 kB' >"${dir}/meminfo"
  echo '0.52 0.58 0.59 1/123 4567' >"${dir}/loadavg"
  echo '1234567.89 2000000.00' >"${dir}/uptime"
  echo 'fixture-host' >"${dir}/sys/kernel/hostname"
  echo 'boot-fixture' >"${dir}/sys/kernel/random/boot_id"
  for ((i = 1; i <= 41; i++)); do mkdir "${dir}/${i}"; done
}

save_previous_sample() {
  mkdir -p "${HOSTGUARD_ROOT}/var/lib/hostguard"
  echo 'boot-fixture 1000 10000' >"${HOSTGUARD_ROOT}/var/lib/hostguard/cpu.sample"
}
