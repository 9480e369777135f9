#!/usr/bin/env bash
# damage-rows.sh runs, through the CLI as a user would, each kind of bad
# input and damage the README's "Durability and recovery" table lists, and
# prints a PASS or FAIL line for each: the directory opens (or is refused
# with a clear error where that is the right answer), and no acknowledged
# record is lost. Rows that need a small filesystem mount a tmpfs and run
# only as root; the others run anywhere.
#
#   scripts/damage-rows.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
work=$(mktemp -d)
pl=$work/partlog
go build -o "$pl" ./cmd/partlog || exit 1
failed=0
pass() { printf 'PASS  %s\n' "$1"; }
fail() { printf 'FAIL  %s: %s\n' "$1" "$2"; failed=1; }

# fresh DIR N: a directory with topic t of 1 partition holding lines 1..N.
fresh() {
  rm -rf "$1"
  "$pl" topics create --dir "$1" --topic t >/dev/null 2>&1 &&
    seq -f 'line-%07.0f' 1 "$2" | "$pl" produce --dir "$1" --topic t 2>/dev/null
}
# consumed DIR: the values of t, sorted.
consumed() { "$pl" consume --dir "$1" --topic t --from-beginning --timeout 500ms 2>/dev/null | sort; }
# same DIR N: topic t of DIR holds exactly lines 1..N.
same() { cmp -s <(consumed "$1") <(seq -f 'line-%07.0f' 1 "$2"); }

d=$work/d
row="garbage appended to a segment after a clean close"
fresh "$d" 1301 && printf 'not a batch, typed by hand\n' >>"$d/t-0/00000000000000000000.log"
if same "$d" 1301; then pass "$row"; else fail "$row" "records lost"; fi

row="a random .log dropped into a partition"
fresh "$d" 1301 && head -c 3000 /dev/urandom >"$d/t-0/00000000000000000400.log"
if same "$d" 1301 && ls "$d"/t-0/quarantine-*/00000000000000000400.log >/dev/null 2>&1; then
  pass "$row (moved to quarantine)"
else fail "$row" "records lost, or the file not moved aside"; fi

row="an empty 00000000000000005000.log dropped in"
fresh "$d" 1301 && : >"$d/t-0/00000000000000005000.log"
out=$("$pl" topics describe --dir "$d" --topic t 2>&1)
if grep -q 'offsets missing between segments.*from=1301 to=5000' <<<"$out" && same "$d" 1301; then
  pass "$row (warned: from=1301 to=5000)"
else fail "$row" "$out"; fi

row="log-start-offset-checkpoint edited to 999999"
fresh "$d" 1301 && printf '0\n1\nt 0 999999\n' >"$d/log-start-offset-checkpoint"
if same "$d" 1301; then pass "$row"; else fail "$row" "records deleted"; fi

row="meta.properties deleted"
fresh "$d" 10 && rm "$d/meta.properties"
out=$("$pl" topics list --dir "$d" 2>&1)
if [ $? -ne 0 ] && grep -q 'no meta.properties' <<<"$out" && [ ! -e "$d/meta.properties" ]; then
  pass "$row (refused: ${out#*: })"
else fail "$row" "$out"; fi

row="a segment the node may not read (chmod 000, as an unprivileged user)"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
  rm -rf "$d" && mkdir -p "$d" && chown nobody "$d" "$work" && chmod 755 "$work"
  runuser -u nobody -- "$pl" topics create --dir "$d" --topic t --partitions 2 >/dev/null 2>&1
  runuser -u nobody -- "$pl" topics create --dir "$d" --topic u >/dev/null 2>&1
  seq 1 100 | runuser -u nobody -- "$pl" produce --dir "$d" --topic u 2>/dev/null
  chmod 000 "$d/t-1/00000000000000000000.log"
  describe=$(runuser -u nobody -- "$pl" topics describe --dir "$d" --topic t 2>&1)
  u=$(runuser -u nobody -- "$pl" consume --dir "$d" --topic u --from-beginning --timeout 500ms 2>/dev/null | wc -l)
  runuser -u nobody -- "$pl" topics delete --dir "$d" --topic t >/dev/null 2>&1
  left=$(runuser -u nobody -- "$pl" topics list --dir "$d" 2>/dev/null)
  if grep -q 'Partition: 1.*Offline' <<<"$describe" && [ "$u" = 100 ] && [ "$left" = u ]; then
    pass "$row (t-1 offline, topic u served, t deleted)"
  else fail "$row" "describe: $describe; u records: $u; left: $left"; fi
else
  printf 'SKIP  %s: needs root (for runuser)\n' "$row"
fi

row="--partitions 0 and --partitions 2147483648"
rm -rf "$d"
o1=$("$pl" topics create --dir "$d" --topic a --partitions 0 2>&1)
o2=$("$pl" topics create --dir "$d" --topic b --partitions 2147483648 2>&1)
if grep -q INVALID_PARTITIONS <<<"$o1" && grep -q INVALID_PARTITIONS <<<"$o2" && [ -z "$("$pl" topics list --dir "$d" 2>&1)" ]; then
  pass "$row"
else fail "$row" "$o1 / $o2"; fi

row="--bootstrap-server to a server that is not Kafka (python3 -m http.server)"
if command -v python3 >/dev/null; then
  (cd "$work" && exec python3 -m http.server 19480 --bind 127.0.0.1 >/dev/null 2>&1) &
  http=$!
  sleep 1 # the server has no readiness signal to wait for
  start=$SECONDS
  out=$("$pl" consume --bootstrap-server 127.0.0.1:19480 --topic t --timeout 1s 2>&1)
  took=$((SECONDS - start))
  kill $http 2>/dev/null
  if grep -q NETWORK_EXCEPTION <<<"$out" && [ $took -le 20 ]; then
    pass "$row (${took}s: ${out#*: })"
  else fail "$row" "after ${took}s: $out"; fi
else
  printf 'SKIP  %s: no python3\n' "$row"
fi

row="a server killed while produce sends, then restarted"
rm -rf "$d" && "$pl" topics create --dir "$d" --topic t >/dev/null 2>&1
"$pl" serve --dir "$d" --listen 127.0.0.1:19481 2>/dev/null &
srv=$!
"$pl" topics list --bootstrap-server 127.0.0.1:19481 >/dev/null 2>&1 # waits until it serves
(seq -f 'line-%07.0f' 1 200000; sleep 2; seq -f 'line-%07.0f' 200001 200010) |
  "$pl" produce --bootstrap-server 127.0.0.1:19481 --topic t >/dev/null 2>"$work/err" &
prod=$!
sleep 1
kill -9 $srv; wait $srv 2>/dev/null
sleep 6 # the producer retries meanwhile, and says so every 5 s
"$pl" serve --dir "$d" --listen 127.0.0.1:19481 2>/dev/null &
srv=$!
wait $prod
status=$?
kill $srv; wait $srv 2>/dev/null
if [ $status = 0 ] && grep -q 'retrying' "$work/err" && same "$d" 200010; then
  pass "$row ($(grep -m1 retrying "$work/err" | cut -c1-100)...; every line once)"
else fail "$row" "exit $status: $(head -3 "$work/err")"; fi

if [ "$(id -u)" = 0 ]; then
  mnt=$work/mnt && mkdir -p "$mnt"
  if mount -t tmpfs -o size=20m tmpfs "$mnt" 2>/dev/null; then
    row="the disk fills while produce --dir writes; space is freed; reopen"
    "$pl" topics create --dir "$mnt/d" --topic t >/dev/null 2>&1
    head -c 2097152 /dev/zero >"$mnt/balloon" # someone else's file, deleted to free space
    seq -f 'line-%07.0f' 1 3000000 | "$pl" produce --dir "$mnt/d" --topic t >/dev/null 2>"$work/err"
    full=$?
    rm -f "$mnt/balloon"
    n=$(consumed "$mnt/d" | wc -l)
    got=$(consumed "$mnt/d" | cmp -s - <(seq -f 'line-%07.0f' 1 "$n" | sort) && echo ok)
    # produce names the first line that failed: every line before it was
    # acknowledged, and must be there.
    first=$(grep -o 'the first, line [0-9]*' "$work/err" | grep -o '[0-9]*$')
    if [ $full -ne 0 ] && grep -q 'no space left' "$work/err" && [ "$got" = ok ] && [ "$n" -gt 0 ] && [ "$n" = "$((first - 1))" ]; then
      pass "$row (the $n lines acknowledged before line $first failed, each once; the directory opens)"
    else fail "$row" "exit $full, $n records, $(tail -2 "$work/err")"; fi

    row="a topic of 2000 partitions on a 20 MiB filesystem"
    umount "$mnt"; mount -t tmpfs -o size=20m tmpfs "$mnt"
    out=$("$pl" topics create --dir "$mnt/d" --topic big --partitions 2000 2>&1)
    list=$("$pl" topics list --dir "$mnt/d" 2>&1)
    if { [ -z "$out" ] || grep -q 'Created\|KAFKA_STORAGE_ERROR' <<<"$out"; } && { [ -z "$list" ] || [ "$list" = big ]; } &&
      "$pl" topics create --dir "$mnt/d" --topic small >/dev/null 2>&1; then
      pass "$row (${out:0:90}; the directory still works)"
    else fail "$row" "$out / $list"; fi
    umount "$mnt"
  fi
fi

row="a directory that used a consumer group, 100 records"
rm -rf "$d" && fresh "$d" 100
"$pl" serve --dir "$d" --listen 127.0.0.1:19482 2>/dev/null &
srv=$!
"$pl" consume --bootstrap-server 127.0.0.1:19482 --topic t --group g --from-beginning --timeout 1s >/dev/null 2>&1
used=$(du -sk "$d" | cut -f1)
kill $srv; wait $srv 2>/dev/null
if [ "$used" -lt 10240 ]; then pass "$row (${used} KiB while served)"; else fail "$row" "${used} KiB"; fi

rm -rf "$work"
exit $failed
