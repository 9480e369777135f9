package compat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This file runs the clients that are processes: kcat, and the Python and
// JavaScript scripts of confluent-kafka-python and kafkajs. The scripts
// share one protocol, so that one Go driver (scriptDriver) serves both:
//
//   - the harness writes one JSON request on the script's standard input,
//     {"op": ..., "bootstrap": "host:port,...", ...the op's fields};
//   - a one-shot op prints one line, {"result": ...}, {"error": "..."} or
//     {"na": "..."} (the client has no such call), and exits;
//   - the long-running ops ("member", "stream") print an event a line
//     (a memberEvent, a streamAck) until their standard input closes,
//     which tells them to stop (commit and leave the group; stop sending
//     and wait for every outcome), and exit once they have.
//
// The ops and their fields are the driver's methods and their specs' JSON
// fields: "produce" (a produceSpec; result: the acknowledgements, as
// jsonRecs with partition and offset), "consume" (a consumeSpec, whose
// "isolation" sets isolation.level when present; result: the jsonRecs
// read), "consume_to_end" ({topic, partition}; result: {records, end}),
// "member" ({group, topic}), "stream" ({topic}), "transact" (a txnSpec:
// {topic, transactional_id, transactions: [{records, commit}]}; result:
// the acknowledgements of every transaction's records, in order),
// "transform" (a transformSpec: {input, output, group, transactional_id,
// count, abort}; result: the number of records its transactions held),
// and the admin calls below, an op each.

// proc is a client process with its standard output read line by line.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // standard output, closed at its end
	// errLines, when asked for, is standard error a line at a time,
	// closed at its end.
	errLines chan string
	exit     chan error // the process's exit, once lines is closed

	mu     sync.Mutex
	stderr bytes.Buffer // all of standard error
}

// startProc starts argv with dir as its working directory, within ctx:
// the process is killed when ctx is done. With errLines, its standard
// error comes on p.errLines as well, which the caller must read.
func startProc(ctx context.Context, dir string, errLines bool, argv ...string) (*proc, error) {
	p := &proc{cmd: exec.CommandContext(ctx, argv[0], argv[1:]...), lines: make(chan string, 1024), exit: make(chan error, 1)}
	if errLines {
		p.errLines = make(chan string, 1024)
	}
	p.cmd.Dir = dir
	p.cmd.WaitDelay = 5 * time.Second
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			p.mu.Lock()
			fmt.Fprintln(&p.stderr, sc.Text())
			p.mu.Unlock()
			if p.errLines != nil {
				p.errLines <- sc.Text()
			}
		}
		io.Copy(io.Discard, stderr)
		if p.errLines != nil {
			close(p.errLines)
		}
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		close(p.lines)
		<-stderrDone
		p.exit <- p.cmd.Wait()
	}()
	return p, nil
}

// errText returns the process's standard error, its last lines if long.
func (p *proc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.TrimSpace(p.stderr.String())
	if lines := strings.Split(s, "\n"); len(lines) > 8 {
		s = strings.Join(lines[len(lines)-8:], "\n")
	}
	return s
}

// wait waits for the process to exit, and returns an error that quotes its
// standard error if it failed.
func (p *proc) wait() error {
	for range p.lines {
	}
	if err := <-p.exit; err != nil {
		return fmt.Errorf("%s: %v: %s", p.cmd.Args[0], err, p.errText())
	}
	return nil
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// scriptDriver is a client run as a script speaking the protocol above.
type scriptDriver struct {
	short, long string
	// dir is the script's directory under compat/, argv the command run
	// there.
	dir  string
	argv []string
}

func (d scriptDriver) name() string            { return d.short }
func (d scriptDriver) label() string           { return d.long }
func (scriptDriver) transactionVersion() int16 { return 0 } // librdkafka 2.0.2, kafkajs 2.2.4
func (d scriptDriver) admin() admin            { return d }

// start runs the script with the request op and fields.
func (d scriptDriver) start(ctx context.Context, tg *target, op string, fields any) (*proc, error) {
	req := map[string]any{}
	if fields != nil {
		b, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, err
		}
	}
	req["op"], req["bootstrap"] = op, strings.Join(tg.addrs(), ",")
	if c := tg.sec; c != nil {
		req["security"] = map[string]string{"ca": c.caFile, "cert": c.certFile, "key": c.keyFile, // no certificate: ""
			"mechanism": c.mechanism, "user": c.user, "password": c.password} // no SASL: ""
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	p, err := startProc(ctx, d.dir, false, d.argv...)
	if err != nil {
		return nil, err
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.cmd.Process.Kill()
		p.wait()
		return nil, fmt.Errorf("write the request: %w", err)
	}
	return p, nil
}

// call runs a one-shot op and decodes its result into out.
func (d scriptDriver) call(ctx context.Context, tg *target, op string, fields, out any) error {
	p, err := d.start(ctx, tg, op, fields)
	if err != nil {
		return err
	}
	p.stdin.Close()
	var last string
	for line := range p.lines {
		last = line
	}
	if err := p.wait(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (%s)", op, ctx.Err(), p.errText())
		}
		return err
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *string         `json:"error"`
		NA     *string         `json:"na"`
	}
	if err := json.Unmarshal([]byte(last), &answer); err != nil {
		return fmt.Errorf("%s: the script printed %q: %w (%s)", op, last, err, p.errText())
	}
	switch {
	case answer.NA != nil:
		return na("%s", *answer.NA)
	case answer.Error != nil:
		return errors.New(*answer.Error)
	case out == nil:
		return nil
	}
	return json.Unmarshal(answer.Result, out)
}

func (d scriptDriver) produce(ctx context.Context, tg *target, spec produceSpec) ([]rec, error) {
	var out []rec
	err := d.call(ctx, tg, "produce", spec, &out)
	return out, err
}

func (d scriptDriver) consume(ctx context.Context, tg *target, spec consumeSpec) ([]rec, error) {
	var out []rec
	err := d.call(ctx, tg, "consume", spec, &out)
	return out, err
}

func (d scriptDriver) consumeToEnd(ctx context.Context, tg *target, topic string, partition int32) ([]rec, int64, error) {
	var out struct {
		Records []rec `json:"records"`
		End     int64 `json:"end"`
	}
	err := d.call(ctx, tg, "consume_to_end", map[string]any{"topic": topic, "partition": partition}, &out)
	return out.Records, out.End, err
}

func (d scriptDriver) transact(ctx context.Context, tg *target, spec txnSpec) ([]rec, error) {
	var out []rec
	err := d.call(ctx, tg, "transact", spec, &out)
	return out, err
}

func (d scriptDriver) transform(ctx context.Context, tg *target, spec transformSpec) (int, error) {
	var n int
	err := d.call(ctx, tg, "transform", spec, &n)
	return n, err
}

// scriptMember is a group member run by the script's "member" op.
type scriptMember struct {
	p      *proc
	events chan memberEvent
	done   chan struct{}
}

func (d scriptDriver) join(ctx context.Context, tg *target, group, topic string) (member, error) {
	p, err := d.start(ctx, tg, "member", map[string]any{"group": group, "topic": topic})
	if err != nil {
		return nil, err
	}
	m := &scriptMember{p: p, events: make(chan memberEvent, 1024), done: make(chan struct{})}
	go func() {
		defer close(m.events)
		for line := range p.lines {
			var ev memberEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				m.events <- memberEvent{Err: fmt.Sprintf("the script printed %q: %v", line, err)}
				continue
			}
			m.events <- ev
		}
		if err := p.wait(); err != nil {
			m.events <- memberEvent{Err: err.Error()}
		}
		close(m.done)
	}()
	return m, nil
}

func (m *scriptMember) Events() <-chan memberEvent { return m.events }

// Leave closes the script's standard input and waits, at most 30 s, for it
// to leave the group and exit.
func (m *scriptMember) Leave() error {
	m.p.stdin.Close()
	select {
	case <-m.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the member did not leave within 30 s of being told to")
	}
}

// scriptStream is a producer run by the script's "stream" op.
type scriptStream struct {
	p    *proc
	acks chan streamAck
	done chan struct{}
	err  error
}

func (d scriptDriver) produceStream(ctx context.Context, tg *target, topic string) (stream, error) {
	p, err := d.start(ctx, tg, "stream", map[string]any{"topic": topic})
	if err != nil {
		return nil, err
	}
	s := &scriptStream{p: p, acks: make(chan streamAck, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.acks)
		for line := range p.lines {
			var a struct {
				streamAck
				Seq *int `json:"seq"` // nil in a line that reports the script's own failure
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil || a.Seq == nil {
				if s.err == nil {
					s.err = fmt.Errorf("the script printed %q (%v)", line, err)
				}
				continue
			}
			a.streamAck.Seq = *a.Seq
			s.acks <- a.streamAck
		}
		if err := p.wait(); err != nil && s.err == nil {
			s.err = err
		}
	}()
	return s, nil
}

func (s *scriptStream) Acks() <-chan streamAck { return s.acks }

// Stop closes the script's standard input and waits, at most 60 s, for
// every outcome.
func (s *scriptStream) Stop() error {
	s.p.stdin.Close()
	select {
	case <-s.done:
		return s.err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the producer did not stop within 60 s of being told to")
	}
}

// The admin calls: an op each, named after the admin interface's methods.

func (d scriptDriver) createTopic(ctx context.Context, tg *target, topic string, partitions int32, rf int16, configs map[string]string) error {
	return d.call(ctx, tg, "create_topic", map[string]any{"topic": topic, "partitions": partitions, "replication_factor": rf, "configs": configs}, nil)
}

func (d scriptDriver) partitions(ctx context.Context, tg *target, topic string) (int, error) {
	var n int
	err := d.call(ctx, tg, "partitions", map[string]any{"topic": topic}, &n)
	return n, err
}

func (d scriptDriver) deleteTopic(ctx context.Context, tg *target, topic string) error {
	return d.call(ctx, tg, "delete_topic", map[string]any{"topic": topic}, nil)
}

func (d scriptDriver) createPartitions(ctx context.Context, tg *target, topic string, total int32) error {
	return d.call(ctx, tg, "create_partitions", map[string]any{"topic": topic, "total": total}, nil)
}

func (d scriptDriver) incrementalAlterTopicConfig(ctx context.Context, tg *target, topic string, set map[string]string) error {
	return d.call(ctx, tg, "incremental_alter_topic_config", map[string]any{"topic": topic, "configs": set}, nil)
}

func (d scriptDriver) alterTopicConfig(ctx context.Context, tg *target, topic string, configs map[string]string) error {
	return d.call(ctx, tg, "alter_topic_config", map[string]any{"topic": topic, "configs": configs}, nil)
}

func (d scriptDriver) describeTopicConfig(ctx context.Context, tg *target, topic string) (map[string]configValue, error) {
	var out map[string]configValue
	err := d.call(ctx, tg, "describe_topic_config", map[string]any{"topic": topic}, &out)
	return out, err
}

func (d scriptDriver) describeBrokerConfig(ctx context.Context, tg *target, broker int32) (map[string]configValue, error) {
	var out map[string]configValue
	err := d.call(ctx, tg, "describe_broker_config", map[string]any{"broker": broker}, &out)
	return out, err
}

func (d scriptDriver) deleteRecords(ctx context.Context, tg *target, topic string, partition int32, before int64) (int64, error) {
	var low int64
	err := d.call(ctx, tg, "delete_records", map[string]any{"topic": topic, "partition": partition, "offset": before}, &low)
	return low, err
}

func (d scriptDriver) earliestOffset(ctx context.Context, tg *target, topic string, partition int32) (int64, error) {
	var offset int64
	err := d.call(ctx, tg, "earliest_offset", map[string]any{"topic": topic, "partition": partition}, &offset)
	return offset, err
}

func (d scriptDriver) describeCluster(ctx context.Context, tg *target) (clusterInfo, error) {
	var info clusterInfo
	err := d.call(ctx, tg, "describe_cluster", nil, &info)
	return info, err
}

func (d scriptDriver) describeLogDirs(ctx context.Context, tg *target, topic string) (map[int32]map[int32]int64, error) {
	var out map[int32]map[int32]int64
	err := d.call(ctx, tg, "describe_log_dirs", map[string]any{"topic": topic}, &out)
	return out, err
}

func (d scriptDriver) electPreferredLeaders(ctx context.Context, tg *target, topic string, partitions []int32) (map[int32]string, error) {
	var out map[int32]string
	err := d.call(ctx, tg, "elect_preferred_leaders", map[string]any{"topic": topic, "partitions": partitions}, &out)
	return out, err
}

func (d scriptDriver) reassign(ctx context.Context, tg *target, topic string, partition int32, replicas []int32) error {
	return d.call(ctx, tg, "reassign", map[string]any{"topic": topic, "partition": partition, "replicas": replicas}, nil)
}

func (d scriptDriver) reassigning(ctx context.Context, tg *target, topic string) (map[int32][]int32, error) {
	var out map[int32][]int32
	err := d.call(ctx, tg, "reassigning", map[string]any{"topic": topic}, &out)
	return out, err
}

func (d scriptDriver) describeProducers(ctx context.Context, tg *target, topic string, partition int32) ([]producerState, error) {
	var out []producerState
	err := d.call(ctx, tg, "describe_producers", map[string]any{"topic": topic, "partition": partition}, &out)
	return out, err
}

func (d scriptDriver) offsetForLeaderEpoch(ctx context.Context, tg *target, topic string, partition, leaderEpoch int32) (int64, int32, error) {
	var out struct {
		EndOffset   int64 `json:"end_offset"`
		LeaderEpoch int32 `json:"leader_epoch"`
	}
	err := d.call(ctx, tg, "offset_for_leader_epoch", map[string]any{"topic": topic, "partition": partition, "leader_epoch": leaderEpoch}, &out)
	return out.EndOffset, out.LeaderEpoch, err
}
