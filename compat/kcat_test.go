package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kcatDriver runs kcat (Debian's kcat 1.7.1, on librdkafka 2.0.2) as a
// process per call, as a user runs it from a shell. kcat produces lines of
// standard input (key TAB value), prints what it consumes as JSON (-J),
// and reports group rebalances and the end of a partition on standard
// error. It tells no offsets when it produces, and has no admin calls.
type kcatDriver struct{}

func (kcatDriver) name() string              { return "kcat" }
func (kcatDriver) label() string             { return "kcat 1.7.1 (librdkafka 2.0.2)" }
func (kcatDriver) transactionVersion() int16 { return 0 }
func (d kcatDriver) admin() admin            { return kcatAdmin{} }

// kcatBase returns the start of every kcat command line: the target's
// nodes, and for a secured target librdkafka's settings.
func kcatBase(tg *target) []string {
	args := []string{"kcat", "-b", strings.Join(tg.addrs(), ",")}
	for k, v := range tg.sec.librdkafka() {
		args = append(args, "-X", k+"="+v)
	}
	return args
}

// run runs kcat with args and input on its standard input, and returns
// its standard output's lines.
func (kcatDriver) run(ctx context.Context, tg *target, input string, args ...string) ([]string, *proc, error) {
	p, err := startProc(ctx, ".", false, append(kcatBase(tg), args...)...)
	if err != nil {
		return nil, nil, err
	}
	go func() {
		p.stdin.Write([]byte(input))
		p.stdin.Close()
	}()
	var lines []string
	for line := range p.lines {
		lines = append(lines, line)
	}
	if err := p.wait(); err != nil {
		if ctx.Err() != nil {
			return lines, p, fmt.Errorf("kcat: %w (%s)", ctx.Err(), p.errText())
		}
		return lines, p, err
	}
	return lines, p, nil
}

// produce runs a kcat -P per partition and set of headers, in the order
// they first appear: kcat's -p and -H hold for all it produces. kcat
// reports no offsets.
func (d kcatDriver) produce(ctx context.Context, tg *target, spec produceSpec) ([]rec, error) {
	acks := map[int]string{0: "0", 1: "1", -1: "all"}[spec.Acks]
	type run struct {
		first rec
		input strings.Builder
	}
	var runs []*run
	sameRun := func(a, b rec) bool {
		return a.Partition == b.Partition && slices.EqualFunc(a.Headers, b.Headers, func(x, y hdr) bool {
			return x.Key == y.Key && string(x.Value) == string(y.Value)
		})
	}
	var out []rec
	for _, r := range spec.Records {
		if r.Timestamp != 0 || r.Value == nil || strings.ContainsAny(string(r.Key)+string(r.Value), "\t\n") {
			return nil, fmt.Errorf("harness: kcat cannot produce %v from a line", r)
		}
		i := slices.IndexFunc(runs, func(x *run) bool { return sameRun(x.first, r) })
		if i < 0 {
			runs = append(runs, &run{first: r})
			i = len(runs) - 1
		}
		if r.Key != nil { // a line without the separator has a null key
			runs[i].input.WriteString(string(r.Key) + "\t")
		}
		runs[i].input.WriteString(string(r.Value) + "\n")
		out = append(out, rec{Partition: r.Partition, Offset: -1})
	}
	for _, run := range runs {
		args := []string{"-P", "-t", spec.Topic, "-p", strconv.Itoa(int(run.first.Partition)), "-K", "\t", "-z", spec.Compression,
			"-X", "acks=" + acks, "-X", "linger.ms=5", "-X", fmt.Sprintf("enable.idempotence=%v", spec.Idempotent)}
		for _, h := range run.first.Headers {
			args = append(args, "-H", h.Key+"="+string(h.Value))
		}
		_, p, err := d.run(ctx, tg, run.input.String(), args...)
		if err != nil {
			return nil, err
		}
		if strings.Contains(p.errText(), "Delivery failed") {
			return nil, fmt.Errorf("kcat: %s", p.errText())
		}
	}
	return out, nil
}

// kcatJSON is a record as kcat -J prints it; headers are a flat list of
// names and values.
type kcatJSON struct {
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp int64     `json:"ts"`
	Headers   []*string `json:"headers"`
	Key       *string   `json:"key"`
	Payload   *string   `json:"payload"`
}

func kcatRecs(lines []string) ([]rec, error) {
	var out []rec
	for _, line := range lines {
		var k kcatJSON
		if err := json.Unmarshal([]byte(line), &k); err != nil {
			return nil, fmt.Errorf("kcat printed %q: %w", line, err)
		}
		r := rec{Partition: k.Partition, Offset: k.Offset, Timestamp: k.Timestamp, Key: bytesOrNil(k.Key), Value: bytesOrNil(k.Payload)}
		for i := 0; i+1 < len(k.Headers); i += 2 {
			r.Headers = append(r.Headers, hdr{Key: *k.Headers[i], Value: bytesOrNil(k.Headers[i+1])})
		}
		out = append(out, r)
	}
	return out, nil
}

// consume runs kcat -C -o START -c COUNT.
func (d kcatDriver) consume(ctx context.Context, tg *target, spec consumeSpec) ([]rec, error) {
	offset := map[string]string{"beginning": "beginning", "end": "end", "offset": strconv.FormatInt(spec.From.At, 10),
		"timestamp": fmt.Sprintf("s@%d", spec.From.At)}[spec.From.Kind]
	args := []string{"-C", "-J", "-t", spec.Topic, "-p", strconv.Itoa(int(spec.Partition)), "-o", offset, "-c", strconv.Itoa(spec.Count)}
	if spec.Isolation != "" {
		args = append(args, "-X", "isolation.level="+spec.Isolation)
	}
	lines, _, err := d.run(ctx, tg, "", args...)
	if err != nil {
		return nil, err
	}
	return kcatRecs(lines)
}

// reachedEnd is kcat's end-of-partition line (librdkafka's
// RD_KAFKA_RESP_ERR__PARTITION_EOF).
var reachedEnd = regexp.MustCompile(`% Reached end of topic \S+ \[(\d+)\] at offset (\d+)`)

// consumeToEnd runs kcat -C -e, which exits at the end of the partition.
func (d kcatDriver) consumeToEnd(ctx context.Context, tg *target, topic string, partition int32) ([]rec, int64, error) {
	lines, p, err := d.run(ctx, tg, "", "-C", "-J", "-e", "-t", topic, "-p", strconv.Itoa(int(partition)), "-o", "beginning")
	if err != nil {
		return nil, 0, err
	}
	m := reachedEnd.FindStringSubmatch(p.errText())
	if m == nil {
		return nil, 0, fmt.Errorf("kcat -e exited without its end-of-partition line: %s", p.errText())
	}
	end, _ := strconv.ParseInt(m[2], 10, 64)
	recs, err := kcatRecs(lines)
	return recs, end, err
}

// kcatMember is kcat -G -u (unbuffered output): a balanced consumer that commits automatically
// every 100 ms and when it is revoked or closes. SIGTERM makes it close:
// commit and leave the group. (Not -o: kcat -G starts every partition it
// is assigned at -o's offset, rather than at the group's committed one.)
// kcat prints records on standard output and
// rebalances on standard error, so a record and an assignment reach the
// harness in the order they are read, not necessarily the order kcat
// printed them.
type kcatMember struct {
	p      *proc
	events chan memberEvent
	done   chan struct{}
}

// rebalanced is kcat's line for an assignment or a revocation.
var rebalanced = regexp.MustCompile(`% Group \S+ rebalanced \(memberid \S+\): (assigned|revoked): (.*)`)

var partitionRef = regexp.MustCompile(`\[(\d+)\]`)

func (d kcatDriver) join(ctx context.Context, tg *target, group, topic string) (member, error) {
	p, err := startProc(ctx, ".", true, append(kcatBase(tg), "-G", group, "-J", "-u", "-X", "auto.offset.reset=earliest",
		"-X", "heartbeat.interval.ms=300", "-X", "session.timeout.ms=10000", "-X", "auto.commit.interval.ms=100", topic)...)
	if err != nil {
		return nil, err
	}
	m := &kcatMember{p: p, events: make(chan memberEvent, 1024), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		defer close(m.events)
		assigned := map[int32]bool{}
		lines, errLines := p.lines, p.errLines
		for lines != nil || errLines != nil {
			select {
			case line, ok := <-lines:
				if !ok {
					lines = nil
					continue
				}
				recs, err := kcatRecs([]string{line})
				if err != nil {
					m.events <- memberEvent{Err: err.Error()}
					continue
				}
				m.events <- memberEvent{Record: &recs[0]}
			case line, ok := <-errLines:
				if !ok {
					errLines = nil
					continue
				}
				mm := rebalanced.FindStringSubmatch(line)
				if mm == nil {
					continue
				}
				for _, ref := range partitionRef.FindAllStringSubmatch(mm[2], -1) {
					n, _ := strconv.Atoi(ref[1])
					assigned[int32(n)] = mm[1] == "assigned"
				}
				var now []int32
				for p, ok := range assigned {
					if ok {
						now = append(now, p)
					}
				}
				m.events <- memberEvent{Assigned: now}
			}
		}
		if err := <-p.exit; err != nil {
			m.events <- memberEvent{Err: fmt.Sprintf("kcat: %v: %s", err, p.errText())}
		}
	}()
	return m, nil
}

func (m *kcatMember) Events() <-chan memberEvent { return m.events }

// Leave sends kcat SIGTERM, and waits at most 30 s for it to commit,
// leave the group and exit.
func (m *kcatMember) Leave() error {
	m.p.signal(syscall.SIGTERM)
	select {
	case <-m.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kcat did not exit within 30 s of SIGTERM")
	}
}

func (kcatDriver) produceStream(context.Context, *target, string) (stream, error) {
	return nil, na("kcat reports no offsets when it produces")
}

// errKcatTxn: kcat produces outside transactions only.
var errKcatTxn = na("kcat has no transactions")

func (kcatDriver) transact(context.Context, *target, txnSpec) ([]rec, error) { return nil, errKcatTxn }

func (kcatDriver) transform(context.Context, *target, transformSpec) (int, error) {
	return 0, errKcatTxn
}

// kcatAdmin: kcat has no admin calls.
type kcatAdmin struct{}

func (kcatAdmin) createTopic(context.Context, *target, string, int32, int16, map[string]string) error {
	return errKcatAdmin
}
func (kcatAdmin) partitions(context.Context, *target, string) (int, error) { return 0, errKcatAdmin }
func (kcatAdmin) deleteTopic(context.Context, *target, string) error       { return errKcatAdmin }
func (kcatAdmin) createPartitions(context.Context, *target, string, int32) error {
	return errKcatAdmin
}
func (kcatAdmin) incrementalAlterTopicConfig(context.Context, *target, string, map[string]string) error {
	return errKcatAdmin
}
func (kcatAdmin) alterTopicConfig(context.Context, *target, string, map[string]string) error {
	return errKcatAdmin
}
func (kcatAdmin) describeTopicConfig(context.Context, *target, string) (map[string]configValue, error) {
	return nil, errKcatAdmin
}
func (kcatAdmin) describeBrokerConfig(context.Context, *target, int32) (map[string]configValue, error) {
	return nil, errKcatAdmin
}
func (kcatAdmin) deleteRecords(context.Context, *target, string, int32, int64) (int64, error) {
	return 0, errKcatAdmin
}
func (kcatAdmin) earliestOffset(context.Context, *target, string, int32) (int64, error) {
	return 0, errKcatAdmin
}
func (kcatAdmin) describeCluster(context.Context, *target) (clusterInfo, error) {
	return clusterInfo{}, errKcatAdmin
}
func (kcatAdmin) describeLogDirs(context.Context, *target, string) (map[int32]map[int32]int64, error) {
	return nil, errKcatAdmin
}
func (kcatAdmin) electPreferredLeaders(context.Context, *target, string, []int32) (map[int32]string, error) {
	return nil, errKcatAdmin
}
func (kcatAdmin) reassign(context.Context, *target, string, int32, []int32) error {
	return errKcatAdmin
}
func (kcatAdmin) reassigning(context.Context, *target, string) (map[int32][]int32, error) {
	return nil, errKcatAdmin
}
func (kcatAdmin) describeProducers(context.Context, *target, string, int32) ([]producerState, error) {
	return nil, errKcatAdmin
}
func (kcatAdmin) offsetForLeaderEpoch(context.Context, *target, string, int32, int32) (int64, int32, error) {
	return 0, 0, errKcatAdmin
}

var errKcatAdmin = na("kcat has no admin calls")
