#!/usr/bin/env bash
# bench-storage.sh measures the storage engine beside this machine's raw
# figures, in the same run, and prints each ratio:
#
#   dd bs=1M count=2048              page-cache sequential write (best of two
#                                    runs: the first after a benchmark is slow
#                                    while the kernel reclaims pages)
#   dd ... conv=fdatasync            the same, made durable at the end
#   dd ... oflag=dsync               durable after every 1 MiB write
#   fio 4 KiB write + fdatasync      the latency of one durable append
#   go test -bench ./log/            partlog's appends, group commit, reads
#
# The machine is shared and noisy, so it runs ROUNDS rounds (default 3),
# interleaving baselines and benchmarks, and reports medians.
#
#   scripts/bench-storage.sh            # ROUNDS=5 scripts/bench-storage.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
rounds=${ROUNDS:-3}
work=$(mktemp -d)
export TMPDIR=$work # the benchmarks' logs live on the same filesystem as dd's file
trap 'rm -rf "$work"' EXIT

if ! command -v fio >/dev/null; then
  echo "installing fio ..." >&2
  (apt-get install -y fio || (apt-get update && apt-get install -y fio)) >/dev/null 2>&1
fi

go test -c -o "$work/log.test" ./log/ >/dev/null
results=$work/results
: >"$results"

# dd_mbps prints dd's throughput in MB/s.
dd_mbps() {
  rm -f "$work/dd"
  sync # start from a clean page cache, not behind the last run's writeback
  dd if=/dev/zero of="$work/dd" bs=1M count=2048 "$@" 2>&1 | awk '/copied/ {
    for (i = 1; i <= NF; i++) if ($i == "s,") { v = $(i+1); u = $(i+2) }
    if (u ~ /^GB/) v *= 1000; if (u ~ /^kB/) v /= 1000; print v }'
  rm -f "$work/dd"
}

for r in $(seq "$rounds"); do
  echo "round $r of $rounds ..." >&2
  a=$(dd_mbps); b=$(dd_mbps)
  echo "dd_pagecache_MBps $(awk -v a="$a" -v b="$b" 'BEGIN { print (a > b) ? a : b }')" >>"$results"
  a=$(dd_mbps conv=fdatasync); b=$(dd_mbps conv=fdatasync)
  echo "dd_fdatasync_MBps $(awk -v a="$a" -v b="$b" 'BEGIN { print (a > b) ? a : b }')" >>"$results"
  echo "dd_dsync_MBps $(dd_mbps oflag=dsync)" >>"$results"
  fio --name=sync --filename="$work/fio" --rw=write --bs=4k --size=32m --fdatasync=1 \
    --ioengine=sync --output-format=terse --terse-version=3 2>/dev/null |
    awk -F';' '{ print "fio_4k_write_fdatasync_iops", $49 }' >>"$results"
  rm -f "$work/fio"
  sync
  (cd log && "$work/log.test" -test.run '^$' \
    -test.benchtime 2s -test.bench 'BenchmarkAppend/flush=fsync|BenchmarkSyncBeforeAck|BenchmarkRead'
   "$work/log.test" -test.run '^$' -test.bench 'BenchmarkAppend/flush=off|BenchmarkBaselineFile' -test.benchtime 3x) | awk '/^Benchmark/ {
      name = $1; sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i++) {
        if ($(i+1) == "MB/s") print name "_MBps", $i
        if ($(i+1) == "records/s") print name "_recps", $i
        if ($(i+1) == "appends/s") print name "_appps", $i
      } }' >>"$results"
done

# Medians, then the table: each row is "section key text", sorted.
awk -v rounds="$rounds" '
  { v[$1] = v[$1] " " $2 }
  END {
    for (k in v) {
      n = split(substr(v[k], 2), a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      m[k] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    pc = m["dd_pagecache_MBps"]; fs = m["dd_fdatasync_MBps"]; ds = m["dd_dsync_MBps"]; iops = m["fio_4k_write_fdatasync_iops"]
    printf "0 a baselines, medians of %d rounds:\n", rounds
    printf "0 b   dd bs=1M count=2048 (page cache)      %8.0f MB/s\n", pc
    printf "0 c   dd ... conv=fdatasync                 %8.0f MB/s\n", fs
    printf "0 c2  dd ... oflag=dsync (sync per 1 MiB)   %8.0f MB/s\n", ds
    printf "0 d   fio 4 KiB write + fdatasync           %8.0f per second (%.0f us each)\n", iops, 1e6 / iops
    printf "1 a \n1 b %-50s %11s %9s  %s\n", "benchmark", "records/s", "MB/s", "ratio"
    rawoff = m["BenchmarkBaselineFile/flush=off_MBps"]; rawsync = m["BenchmarkBaselineFile/flush=fsync-per-write_MBps"]
    printf "0 e   Go WriteAt 1 MiB, no CRC or index     %8.0f MB/s\n", rawoff
    printf "0 f   the same with fdatasync per write     %8.0f MB/s\n", rawsync
    for (k in m) if (k ~ /^BenchmarkAppend.*_MBps$/) {
      b = k; sub(/_MBps$/, "", b)
      base = (b ~ /flush=off/) ? pc : fs
      label = (b ~ /flush=off/) ? sprintf("of dd page cache, %.0f%% of bare WriteAt", 100 * m[k] / rawoff) : sprintf("of dd conv=fdatasync, %.0f%% of bare WriteAt+fdatasync", 100 * m[k] / rawsync)
      printf "2 %s %-50s %11.0f %9.0f  %4.0f%% %s\n", b, b, m[b "_recps"], m[k], 100 * m[k] / base, label
    }
    one = m["BenchmarkSyncBeforeAck/appenders=1_appps"]
    for (k in m) if (k ~ /^BenchmarkSyncBeforeAck.*_appps$/) {
      b = k; sub(/_appps$/, "", b)
      printf "3 %s %-50s %11.0f %9s  %4.1fx of 1 appender (appends/s), %.1fx fio\n", b, b, m[k], "", m[k] / one, m[k] / iops
    }
    for (k in m) if (k ~ /^BenchmarkRead.*_MBps$/) {
      b = k; sub(/_MBps$/, "", b)
      printf "4 %s %-50s %11.0f %9.0f  %4.0f%% of dd page-cache write\n", b, b, m[b "_recps"], m[k], 100 * m[k] / pc
    }
  }' "$results" | sort -t' ' -k1,1n -k2,2V | cut -d' ' -f3-
