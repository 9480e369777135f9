#!/usr/bin/env bash
# bench-txn.sh measures what transactions cost the producer: 'partlog perf
# produce' (Kafka's producer-perf-test) idempotent and transactional with
# --transaction-duration-ms TXN_MS (default 100: begin, produce for 100 ms,
# commit, repeat), each for SECS seconds (default 10) on a fresh data
# directory, and prints the medians of ROUNDS interleaved rounds (default
# 3; each starts with another of the modes) and the ratio transactional ÷
# idempotent of the same rounds:
#
#   records/s and MB/s (2^20 bytes), counting a transactional record once
#   its transaction committed; the records' p50/p99 latency (to their
#   acknowledgement); the commits' p50/p99/max latency (CommitTransaction's
#   call to its return: it flushes the transaction's records, then ends it
#   at the coordinator)
#
# for 100 B and 1 KiB records, acks=all, one partition, batch.size 1 MiB,
# linger 5 ms, buffer.memory 8 MiB, flushing left to the OS
# (flush.messages off, as Kafka's default): in process on a data directory,
# and, unless SERVE=0, against 'partlog serve' over loopback. A third run
# ("txn-nosync") is transactional with __transaction_state's flush.messages
# off too, as in Kafka, which relies on its replication: partlog's default
# fsyncs each of the coordinator's writes (AddPartitionsToTxn, EndTxn)
# before it answers.
#
#   scripts/bench-txn.sh        # ROUNDS=5 SECS=20 TXN_MS=3000 SERVE=0 scripts/bench-txn.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
rounds=${ROUNDS:-3}
secs=${SECS:-10}
txn_ms=${TXN_MS:-100}
serve=${SERVE:-1}
work=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/partlog" ./cmd/partlog
partlog=$work/partlog
results=$work/results
: >"$results"

# run runs perf produce for secs seconds and records its figures under the
# name tag. Arguments: tag, then where (--dir D or --bootstrap-server A),
# then perf produce's extra flags.
run() {
  local tag=$1 out=$work/out
  shift
  sync # start with no dirty pages from the last run, whose writeback would slow this one
  # An interrupt ends the run, commits the open transaction and prints the
  # totals; timeout then exits 124.
  timeout -s INT "$secs" "$partlog" perf produce --topic perf --num-records 1000000000000 --acks all \
    --batch-size 1048576 --linger 5ms --buffer-memory 8388608 --config flush.messages=9223372036854775807 "$@" \
    >"$out" || [ $? = 124 ]
  awk -v t="$tag" '
    / records sent, .*99\.9th\.$/ { gsub(/\(/, "", $6)
      print t "_recps", $4; print t "_MBps", $6
      for (i = 1; i <= NF; i++) { if ($(i+2) == "50th,") print t "_p50", $i; if ($(i+2) == "99th,") print t "_p99", $i } }
    / transactions committed, / { print t "_txns", $1
      for (i = 1; i <= NF; i++) { if ($(i+2) == "50th,") print t "_c50", $i; if ($(i+2) == "99th.") print t "_c99", $i
        if ($(i+2) == "max") print t "_cmax", $i } }' "$out" >>"$results"
}

# fresh makes a fresh data directory; with nosync, one whose
# __transaction_state leaves flushing to the OS (a config a partition takes
# when it is opened: the run opens it again).
fresh() {
  rm -rf "$work/data"
  [ "$1" = nosync ] || return 0
  "$partlog" perf produce --dir "$work/data" --topic warm --num-records 1 --record-size 1 --transactional-id warm >/dev/null
  "$partlog" configs --alter --dir "$work/data" --topic __transaction_state \
    --add-config flush.messages=9223372036854775807 >/dev/null
}

# embedded runs perf produce on a fresh data directory. Arguments: tag,
# sync or nosync (see fresh), perf produce's extra flags.
embedded() {
  local tag=$1
  fresh "$2"
  shift 2
  run "$tag" --dir "$work/data" "$@"
  rm -rf "$work/data"
}

# served runs perf produce against a fresh 'partlog serve' on loopback;
# its arguments are embedded's.
served() {
  local tag=$1 log=$work/serve.log addr=
  fresh "$2"
  shift 2
  "$partlog" serve --dir "$work/data" --listen 127.0.0.1:0 >/dev/null 2>"$log" &
  server=$!
  for _ in $(seq 300); do
    addr=$(sed -n 's/^partlog: .* serving .* on \([^ ]*\).*/\1/p' "$log" | head -1)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "partlog serve did not start:" >&2; cat "$log" >&2; exit 1; }
  run "$tag" --bootstrap-server "$addr" "$@"
  kill "$server"
  wait "$server" || true
  server=
  rm -rf "$work/data"
}

targets=embedded
[ "$serve" != 0 ] && targets="embedded served"
for r in $(seq "$rounds"); do
  echo "round $r of $rounds ..." >&2
  for target in $targets; do
    for size in 100 1024; do
      # Each round starts with another mode, so that none always runs first.
      for i in 0 1 2; do
        case $(((i + r) % 3)) in
        1) "$target" "${target}_${size}_idem" sync --record-size "$size" ;;
        2) "$target" "${target}_${size}_txn" sync --record-size "$size" --transaction-duration-ms "$txn_ms" ;;
        0) "$target" "${target}_${size}_txn-nosync" nosync --record-size "$size" --transaction-duration-ms "$txn_ms" ;;
        esac
      done
    done
  done
done

awk -v rounds="$rounds" -v secs="$secs" -v txn_ms="$txn_ms" -v targets="$targets" '
  { v[$1] = v[$1] " " $2 }
  END {
    for (k in v) {
      n = split(substr(v[k], 2), a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      m[k] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    printf "medians of %d rounds of %d s runs; transactions of %d ms; acks=all, flush off\n", rounds, secs, txn_ms
    printf "%-26s %12s %8s %9s %9s %8s %10s %10s %10s\n", "run", "records/s", "MB/s", "p50 ms", "p99 ms", "txns", "commit p50", "commit p99", "commit max"
    nt = split(targets, ts, " ")
    for (ti = 1; ti <= nt; ti++) for (s = 1; s <= 2; s++) {
      size = (s == 1) ? 100 : 1024
      for (mi = 1; mi <= 3; mi++) {
        mode = (mi == 1) ? "idem" : (mi == 2) ? "txn" : "txn-nosync"; k = ts[ti] "_" size "_" mode
        if (mode == "idem")
          printf "%-26s %12.0f %8.1f %9s %9s\n", ts[ti] " " size " B " mode, m[k "_recps"], m[k "_MBps"], m[k "_p50"], m[k "_p99"]
        else
          printf "%-26s %12.0f %8.1f %9s %9s %8s %10.2f %10.2f %10.2f\n", ts[ti] " " size " B " mode, m[k "_recps"], m[k "_MBps"], m[k "_p50"], m[k "_p99"],
            m[k "_txns"], m[k "_c50"], m[k "_c99"], m[k "_cmax"]
      }
      # The ratio of each round, then their median: the rounds run at
      # different speeds on a shared machine.
      for (mi = 2; mi <= 3; mi++) {
        mode = (mi == 2) ? "txn" : "txn-nosync"
        split(substr(v[ts[ti] "_" size "_idem_recps"], 2), ri, " "); split(substr(v[ts[ti] "_" size "_" mode "_recps"], 2), rt, " ")
        n = 0; each = ""
        for (i = 1; (i in ri) && (i in rt); i++) { q[++n] = rt[i] / ri[i]; each = each sprintf(" %.3f", q[n]) }
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
        med = (n % 2) ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2
        printf "  %s ÷ idem, %s %d B: %.3f (round by round:%s)\n", mode, ts[ti], size, med, each
        delete q
      }
    }
  }' "$results"
