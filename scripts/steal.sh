# The hypervisor's steal from /proc/stat, for shell scripts (sourced by
# scripts/setup.sh and bench/run-verify-bench.sh; the C++ side reads the same
# fields in base/cpu_times.hpp).
# shellcheck shell=bash

# "STOLEN TOTAL": the ticks a hypervisor took from this VM's CPUs, and all ticks.
cpu_ticks() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9; exit}' /proc/stat; }
# The percentage of the CPUs' time stolen between two cpu_ticks readings.
stolen_percent() { echo "$1 $2" | awk '{t = $4 - $2; printf "%.1f", (t > 0 ? 100 * ($3 - $1) / t : 0)}'; }
