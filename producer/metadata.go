package producer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// topicState is what the producer knows of a topic: its partitions, each
// with its accumulator, and the topic's partitioner.
type topicState struct {
	name        string
	partitioner TopicPartitioner
	// partitions holds the partitions, indexed by number. It only grows:
	// Kafka adds partitions to a topic but never removes them.
	partitions atomicSlice[partitionState]
}

// lookup returns the topic the producer knows by that name, or nil. The
// topic of the last lookup is cached, so that a run of records to one
// topic costs no map lookup.
func (p *Producer) lookup(name string) *topicState {
	if t := p.lastTopic.Load(); t != nil && t.name == name {
		return t
	}
	t := (*p.topics.Load())[name]
	if t != nil {
		p.lastTopic.Store(t)
	}
	return t
}

// loadTopic fetches the metadata of a topic the producer does not know yet,
// again every RetryBackoff while the topic is unknown, until ctx ends or the
// deadline passes (once, with a zero deadline), as Kafka's producer waits up
// to max.block.ms for a topic's metadata.
func (p *Producer) loadTopic(ctx context.Context, name string, deadline time.Time) (*topicState, error) {
	var lastErr error
	for {
		if err := p.refreshMetadata(ctx, []string{name}); err != nil {
			lastErr = err
		}
		if t := p.lookup(name); t != nil {
			return t, nil
		}
		if lastErr == nil {
			lastErr = fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
		}
		if !IsRetriable(lastErr) && !errors.Is(lastErr, kafka.ErrUnknownTopicOrPartition) {
			return nil, fmt.Errorf("producer: metadata for topic %q: %w", name, lastErr)
		}
		wait := min(p.cfg.retryBackoff, time.Until(deadline))
		if deadline.IsZero() || wait <= 0 {
			return nil, fmt.Errorf("producer: topic %q not present in metadata within max.block.ms %v: %w", name, p.cfg.maxBlock, lastErr)
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("producer: waiting for metadata of topic %q: %w", name, ctx.Err())
		case <-p.stop:
			timer.Stop()
			return nil, ErrClosed
		}
		if p.closing.Load() {
			return nil, ErrClosed
		}
	}
}

// refreshMetadata asks for the metadata of the topics named and installs
// what it learns: new topics, and partitions added to known ones. An error
// is returned when there was no answer, or when the first topic asked for
// came back with an error.
func (p *Producer) refreshMetadata(ctx context.Context, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.requestTimeout)
	resp, err := p.client.Metadata(ctx, &transport.MetadataRequest{Topics: names})
	cancel()
	if err != nil {
		return p.requestError(ctx, err)
	}
	var first error
	for _, tm := range resp.Topics {
		switch {
		case tm.Err != nil:
			if first == nil {
				first = tm.Err
			}
		case len(tm.Partitions) == 0:
			if first == nil {
				first = fmt.Errorf("%w: topic %q has no partitions", kafka.ErrLeaderNotAvailable, tm.Topic)
			}
		default:
			p.install(tm)
		}
	}
	return first
}

// install adds a topic, or the partitions a known topic gained.
func (p *Producer) install(tm transport.TopicMetadata) {
	n := 0
	for _, pm := range tm.Partitions {
		n = max(n, int(pm.Partition)+1)
	}
	p.topicsMu.Lock()
	defer p.topicsMu.Unlock()
	topics := *p.topics.Load()
	t := topics[tm.Topic]
	if t == nil {
		t = &topicState{name: tm.Topic, partitioner: p.cfg.partitioner.ForTopic(tm.Topic)}
	} else if len(t.partitions.Load()) >= n {
		return
	}
	old := t.partitions.Load()
	parts := make([]*partitionState, n)
	copy(parts, old)
	limit := 1
	if p.idem != nil {
		limit = p.cfg.maxInFlight
	}
	for i := len(old); i < n; i++ {
		parts[i] = &partitionState{topic: t, id: int32(i), limit: limit}
	}
	t.partitions.Store(parts)
	if topics[tm.Topic] == nil {
		next := maps.Clone(topics)
		next[tm.Topic] = t
		p.topics.Store(&next)
	}
	all := append(append([]*partitionState(nil), p.allPartitions.Load()...), parts[len(old):]...)
	p.allPartitions.Store(all)
}

// topicNames returns the names of the topics the producer knows.
func (p *Producer) topicNames() []string {
	topics := *p.topics.Load()
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	return names
}

// refreshInBackground refreshes the metadata of the topics named (of every
// known topic when names is nil) on a goroutine of its own, unless a
// refresh is already running.
func (p *Producer) refreshInBackground(names []string) {
	if !p.refreshing.CompareAndSwap(false, true) {
		return
	}
	p.goroutines.Go(func() {
		defer p.refreshing.Store(false)
		if names == nil {
			names = p.topicNames()
		}
		if len(names) > 0 {
			_ = p.refreshMetadata(p.ctx, names) // failures show up as produce errors
		}
	})
}
