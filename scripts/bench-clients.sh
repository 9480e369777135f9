#!/usr/bin/env bash
# bench-clients.sh measures the producer and consumer end to end, in
# process, with the CLI's perf commands (Kafka's producer-perf-test and
# consumer-perf-test), beside the storage engine's own append and read
# speed measured in the same run, and prints medians and ratios:
#
#   partlog perf produce   100 B x 10M and 1 KiB x 1M records, acks=1,
#                          batch.size 1 MiB, linger 5 ms, buffer.memory 8 MiB
#                          (a quarter of Kafka's default: the batches in
#                          flight stay in the CPU's caches), flush off: about
#                          1 GB each, less than the kernel lets sit dirty
#                          before it throttles writers to the disk's pace
#   partlog perf consume   the same records back, from the page cache
#   go test -bench ./log/  log.Append of ready-made batches of 1000 records,
#                          flush off, and log.Read: the engine's ceiling
#   go test -bench ./producer/ ProduceSync, 1 and 64 senders, sync before ack
#
# The machine is shared and noisy, so it runs ROUNDS rounds (default 3),
# interleaved, and reports medians.
#
#   scripts/bench-clients.sh            # ROUNDS=5 scripts/bench-clients.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
rounds=${ROUNDS:-3}
work=$(mktemp -d)
export TMPDIR=$work
trap 'rm -rf "$work"' EXIT

go build -o "$work/partlog" ./cmd/partlog
go test -c -o "$work/log.test" ./log/ >/dev/null
go test -c -o "$work/producer.test" ./producer/ >/dev/null
results=$work/results
: >"$results"

# perf runs perf produce then perf consume of n records of size bytes and
# records their figures under the name tag.
perf() {
  local tag=$1 n=$2 size=$3 dir=$work/data
  rm -rf "$dir"
  sync # start with no dirty pages from the last step, whose writeback would slow this one
  "$work/partlog" perf produce --dir "$dir" --topic perf --num-records "$n" --record-size "$size" \
    --acks 1 --batch-size 1048576 --linger 5ms --buffer-memory 8388608 --config flush.messages=9223372036854775807 2>/dev/null |
    awk -v t="$tag" '/records sent/ { print "produce_" t "_recps", $4; gsub(/\(/, "", $6); print "produce_" t "_MBps", $6 * 1.048576 }' >>"$results"
  "$work/partlog" perf consume --dir "$dir" --topic perf --messages "$n" 2>/dev/null |
    awk -F', ' -v t="$tag" 'NR == 2 { print "consume_" t "_recps", $6; print "consume_" t "_MBps", $4 * 1.048576 }' >>"$results"
  rm -rf "$dir"
}

for r in $(seq "$rounds"); do
  echo "round $r of $rounds ..." >&2
  perf 100B 10000000 100
  perf 1KiB 1000000 1024
  sync
  (cd log && "$work/log.test" -test.run '^$' -test.benchtime 3x \
    -test.bench 'BenchmarkAppend/flush=off/record=(100|1024)B/batch=1000$|BenchmarkRead') |
    awk '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i++) { if ($(i+1) == "MB/s") print name "_MBps", $i; if ($(i+1) == "records/s") print name "_recps", $i } }' >>"$results"
  (cd producer && "$work/producer.test" -test.run '^$' -test.benchtime 2s -test.bench 'BenchmarkProduceSyncConcurrent') |
    awk '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i++) if ($(i+1) == "records/s") print name "_recps", $i }' >>"$results"
done

awk -v rounds="$rounds" '
  { v[$1] = v[$1] " " $2 }
  END {
    for (k in v) {
      n = split(substr(v[k], 2), a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      m[k] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    la1 = m["BenchmarkAppend/flush=off/record=100B/batch=1000_recps"]; la2 = m["BenchmarkAppend/flush=off/record=1024B/batch=1000_MBps"]
    lr1 = m["BenchmarkRead/record=100B/batch=1000_recps"]; lr2 = m["BenchmarkRead/record=1024B/batch=1000_MBps"]
    printf "medians of %d rounds (MB = 10^6 bytes)\n", rounds
    printf "engine  log.Append 100 B, batches of 1000   %12.0f records/s\n", la1
    printf "engine  log.Append 1 KiB, batches of 1000   %12.0f MB/s\n", la2
    printf "engine  log.Read 100 B                      %12.0f records/s\n", lr1
    printf "engine  log.Read 1 KiB                      %12.0f MB/s\n", lr2
    printf "perf produce 100 B    %12.0f records/s  %6.0f MB/s  %5.1f%% of log.Append\n", m["produce_100B_recps"], m["produce_100B_MBps"], 100 * m["produce_100B_recps"] / la1
    printf "perf produce 1 KiB    %12.0f records/s  %6.0f MB/s  %5.1f%% of log.Append\n", m["produce_1KiB_recps"], m["produce_1KiB_MBps"], 100 * m["produce_1KiB_MBps"] / la2
    printf "perf consume 100 B    %12.0f records/s  %6.0f MB/s  %5.1f%% of log.Read\n", m["consume_100B_recps"], m["consume_100B_MBps"], 100 * m["consume_100B_recps"] / lr1
    printf "perf consume 1 KiB    %12.0f records/s  %6.0f MB/s  %5.1f%% of log.Read\n", m["consume_1KiB_recps"], m["consume_1KiB_MBps"], 100 * m["consume_1KiB_MBps"] / lr2
    s1 = m["BenchmarkProduceSyncConcurrent/senders=1_recps"]; s64 = m["BenchmarkProduceSyncConcurrent/senders=64_recps"]
    printf "ProduceSync, sync before ack: 1 sender %.0f records/s, 64 senders %.0f records/s = %.1fx\n", s1, s64, s64 / s1
  }' "$results"
