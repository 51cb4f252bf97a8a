# shellcheck shell=bash
# Sourced by run-experiments.sh and bubbletea.sh: the one way they read runs.
# They never open results.json; `wanlab compare --csv` reads it and they do
# their arithmetic on its CSV (its columns: docs/REPORTS.md, `wanlab compare`).

# results_csv NAME...: `wanlab compare --csv` of the runs $OUT/NAME that
# finished (have a results.json), each once; nothing when none did. A line's
# label is $OUT/NAME: readers key it by its last part, the run's name. A real
# run whose emulation fell behind is left out (its figures are not faithful;
# compare names it on stderr), so tables show "-" for it.
results_csv() {
  local runs=() name
  local -A seen=()
  for name in "$@"; do
    [ -f "$OUT/$name/results.json" ] && [ -z "${seen[$name]:-}" ] && runs+=("$OUT/$name")
    seen[$name]=1
  done
  [ ${#runs[@]} -eq 0 ] || "$WANLAB" compare --csv --kept-up-only "${runs[@]}"
}

# with_sims RUN...: each run, then its simulated twin (the runs' names have no spaces).
with_sims() {
  local name
  for name in "$@"; do echo "$name" "$name-sim"; done
}
