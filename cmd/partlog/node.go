package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
)

// dirFlag adds --dir, the data directory a command opens, to fs.
func dirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", "", "the node's data `directory` (required)")
}

// openNode opens the data directory of a command's --dir with opts. A
// directory that another process has open is refused with a clear message
// rather than shared: two writers would corrupt it.
func openNode(command, dir string, opts ...partlog.Option) (*partlog.Node, error) {
	if dir == "" {
		return nil, usageErrorf(command, "--dir is required")
	}
	n, err := partlog.Open(dir, opts...)
	if errors.Is(err, partlog.ErrLocked) {
		return nil, fmt.Errorf("%s: data directory %s is in use by another partlog (a running node or command); stop it first: %w", command, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	return n, nil
}

// describeTopic describes topic, which must exist: the commands that read
// and write records do not create topics, as Kafka's do not unless the
// broker auto-creates them.
func describeTopic(command string, t *target, topic string) (partlog.TopicDescription, error) {
	descs, err := t.describe(context.Background(), topic)
	if errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		return partlog.TopicDescription{}, fmt.Errorf("%s: topic %q does not exist in %s; create it with 'partlog topics create'", command, topic, t.where())
	}
	if err != nil {
		return partlog.TopicDescription{}, fmt.Errorf("%s: %w", command, err)
	}
	return descs[0], nil
}

// checkPartition checks that d has partition p.
func checkPartition(command string, d partlog.TopicDescription, p int) error {
	if p < 0 || p >= len(d.Partitions) {
		return fmt.Errorf("%s: topic %s has no partition %d: it has %d (0 to %d)", command, d.Name, p, len(d.Partitions), len(d.Partitions)-1)
	}
	return nil
}

// configFlag collects repeated --config key=value flags.
type configFlag map[string]string

func (c configFlag) String() string {
	var parts []string
	for k, v := range c {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (c configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	c[strings.TrimSpace(k)] = strings.TrimSpace(v)
	return nil
}
