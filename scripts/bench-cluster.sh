#!/usr/bin/env bash
# bench-cluster.sh measures replication over TCP on loopback, each node a
# process: one 'partlog serve' alone, then a 'partlog controller' and three
# 'partlog serve --controller' nodes. For each setup it runs 'partlog perf
# produce --bootstrap-server' (Kafka's producer-perf-test) on a topic of 3
# partitions, three times:
#
#   throughput  as fast as the producer goes, for SECS seconds (default 15):
#               records/s, MB/s (2^20 bytes), and the p99 latency, which at
#               full speed is mostly time queued in the producer's buffer
#   half-peak   at half the records a second the throughput run reached,
#               for SECS seconds: p50 and p99 of a cluster under load
#   latency     at a fixed RATE records a second (default 2000), for SECS
#               seconds: p50 and p99 of an unloaded cluster
#
# with 1 KiB and 100 B records. Setups: a single node at acks=1, RF=3 at
# acks=1, RF=3 at acks=all (min.insync.replicas=2). The producer has
# batch.size 1 MiB, linger 5 ms, buffer.memory 8 MiB; topics leave
# flushing to the OS (flush.messages off), as Kafka does by default, but
# for a last setup, RF=3 at acks=all with partlog's default
# flush.messages=1: every replica syncs what it appends before it counts
# toward the high watermark ("sync").
#
# Then it runs BenchmarkClusterFailover (cmd/partlog) RUNS times (default
# 5): the time from the SIGKILL of a partition's leader to the first
# acks=all write acknowledged after it, with the session timeout and
# heartbeat of Kafka's defaults (9 s, 2 s) and with fast ones (1 s, 100 ms),
# and from a SIGTERM (a controlled shutdown) for comparison. It takes about
# 8 minutes.
#
#   scripts/bench-cluster.sh          # SECS=10 RATE=1000 RUNS=3 scripts/bench-cluster.sh
#   FAILOVER=0 scripts/bench-cluster.sh   # skip the failover runs
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
secs=${SECS:-15}
rate=${RATE:-2000}
runs=${RUNS:-5}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/partlog" ./cmd/partlog
partlog=$work/partlog

# start runs a partlog process in the background with its stderr in
# $work/$1.log, and sets addr to the address of its "serving ... on ADDR"
# line.
start() {
  local log=$work/$1.log
  shift
  "$partlog" "$@" >/dev/null 2>"$log" &
  pids+=($!)
  for _ in $(seq 300); do
    if grep -q ' serving ' "$log"; then
      addr=$(sed -n 's/^partlog: .* serving .* on \([^ ]*\).*/\1/p' "$log" | head -1)
      return
    fi
    sleep 0.1
  done
  echo "partlog $* did not start:" >&2
  cat "$log" >&2
  exit 1
}

# stop stops every process started so far and waits for them.
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}

# single starts one node without a controller; addr is its address.
single() {
  rm -rf "$work/single"
  start single serve --dir "$work/single" --listen 127.0.0.1:0
}

# cluster starts a controller and three nodes; addr is node 1's address.
cluster() {
  rm -rf "$work/ctl" "$work/n1" "$work/n2" "$work/n3"
  start ctl controller --dir "$work/ctl" --listen 127.0.0.1:0
  local ctl=$addr first
  for id in 1 2 3; do
    start "n$id" serve --dir "$work/n$id" --node-id "$id" --controller "$ctl" --listen 127.0.0.1:0
    [ "$id" = 1 ] && first=$addr
  done
  addr=$first
}

# produce runs perf produce against addr on a new topic and prints the
# summary line. Arguments: addr rf acks flush size throughput, where flush
# is sync (flush.messages=1) or nosync.
topic_n=0
produce() {
  local addr=$1 rf=$2 acks=$3 flush=$4 size=$5 throughput=$6
  topic_n=$((topic_n + 1))
  local topic=perf$topic_n flushing=flush.messages=1
  [ "$flush" = nosync ] && flushing=flush.messages=9223372036854775807
  "$partlog" topics create --bootstrap-server "$addr" --topic "$topic" --partitions 3 --replication-factor "$rf" \
    --config min.insync.replicas=$((rf > 1 ? 2 : 1)) --config "$flushing" >/dev/null
  sleep 2 # let every node learn of the topic, and its followers fetch past a first refusal (replica.fetch.backoff.ms 1 s)
  # An interrupt ends the run and prints its totals; timeout then exits 124.
  { timeout -s INT "$secs" "$partlog" perf produce --bootstrap-server "$addr" --topic "$topic" \
    --num-records 1000000000 --record-size "$size" --acks "$acks" --throughput "$throughput" \
    --batch-size 1048576 --linger 5ms --buffer-memory 8388608 2>/dev/null || [ $? = 124 ]; } | tail -1
}

# row prints one line of the table from a summary line.
row() {
  local name=$1 line=$2
  echo "$line" | awk -v n="$name" '{
    gsub(/\(/, "", $6)
    for (i = 1; i <= NF; i++) { if ($(i+2) == "50th,") p50 = $i; if ($(i+2) == "99th,") p99 = $i }
    printf "%-34s %12.0f %9.2f %8s %8s\n", n, $4, $6 * 1.048576, p50, p99
  }'
}

printf "%-34s %12s %9s %8s %8s\n" "run" "records/s" "MB/s" "p50 ms" "p99 ms"
for size in 1024 100; do
  for setup in "single 1 1 nosync" "cluster 3 1 nosync" "cluster 3 all nosync" "cluster 3 all sync"; do
    read -r kind rf acks flush <<<"$setup"
    peak=0
    for mode in throughput half-peak latency; do
      $kind
      throughput=-1
      [ "$mode" = half-peak ] && throughput=$((peak / 2))
      [ "$mode" = latency ] && throughput=$rate
      line=$(produce "$addr" "$rf" "$acks" "$flush" "$size" "$throughput")
      stop
      [ "$mode" = throughput ] && peak=$(echo "$line" | awk '{printf "%d", $4}')
      label="$kind"
      [ "$kind" = cluster ] && label="RF=3"
      [ "$flush" = sync ] && label="$label sync"
      row "$label acks=$acks ${size}B $mode" "$line"
    done
  done
done

if [ "${FAILOVER:-1}" != 0 ]; then
  echo
  echo "leader stopped to the first acks=all write acknowledged after it ($runs runs each):"
  go test -run '^$' -bench ClusterFailover -benchtime "${runs}x" ./cmd/partlog/ |
    awk '/^Benchmark/ {
      for (i = 3; i < NF; i++) { if ($(i+1) == "min-ms") lo = $i; if ($(i+1) == "median-ms") mid = $i; if ($(i+1) == "max-ms") hi = $i }
      printf "  %-70s min %6.0f ms  median %6.0f ms  max %6.0f ms\n", $1, lo, mid, hi
    }'
fi
