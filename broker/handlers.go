package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// The Broker answers transport requests for the partitions it hosts.
var _ transport.Client = (*Broker)(nil)

// Produce appends each partition's batch and answers where it landed.
func (n *Broker) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ProduceResponse{Topics: make([]transport.ProduceTopicResponse, len(req.Topics))}
	type appendJob struct {
		h  *replicaHost
		rp transport.ProducePartition
		pr *transport.ProducePartitionResponse
	}
	var jobs []appendJob
	distinct := map[*replicaHost]bool{}
	for i, rt := range req.Topics {
		tr := &resp.Topics[i]
		tr.Topic = rt.Topic
		tr.Partitions = make([]transport.ProducePartitionResponse, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			pr := &tr.Partitions[j]
			*pr = transport.ProducePartitionResponse{Partition: rp.Partition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			h, err := n.leaderReplica(rt.Topic, rp.Partition)
			if err == nil {
				err = checkClientBatch(rp.Records)
			}
			if err != nil {
				pr.Err = err
				continue
			}
			jobs = append(jobs, appendJob{h, rp, pr})
			distinct[h] = true
		}
	}
	appendOne := func(j appendJob) {
		base, appendTime, err := n.appendVerified(ctx, j.h, req, j.rp.Records)
		j.pr.BaseOffset, j.pr.LogAppendTime, j.pr.LogStartOffset, j.pr.Err = base, appendTime, j.h.p.LogStartOffset(), err
		if err == nil {
			n.produced(j.h.tp.Topic, j.rp.Records)
		}
	}
	if len(jobs) < 2 || len(distinct) < len(jobs) {
		// One partition, or a partition named twice: in order, so that
		// its batches land in the order sent.
		for _, j := range jobs {
			appendOne(j)
		}
		return resp, nil
	}
	// Partitions are independent logs: append them at once, so that a
	// request's syncs before acknowledging overlap rather than queue.
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { appendOne(j) })
	}
	wg.Wait()
	return resp, nil
}

// Fetch reads each partition from its fetch offset, up to its high
// watermark. When fewer than MinBytes are there it waits, up to MaxWait,
// for a high watermark to move — woken by the append that moves it, not by
// polling.
func (n *Broker) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	resp, err := n.fetch(ctx, req)
	if err == nil {
		n.fetched(resp)
	}
	return resp, err
}

// fetch is Fetch, before its answer is counted.
func (n *Broker) fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	var (
		wake     chan struct{}
		watching []*partition.Partition
		timer    *time.Timer
	)
	defer func() {
		for _, p := range watching {
			p.Stop(wake)
		}
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		resp, bytes, failed := n.readFetch(req)
		if failed && n.closing.Load() {
			return closedFetch(resp)
		}
		if failed || bytes >= int(max(req.MinBytes, 1)) || req.MaxWait <= 0 || n.closing.Load() {
			return resp, nil
		}
		closeFiles(resp) // read again below
		if wake == nil {
			// Watch before reading again, so that no append between the
			// read and the wait goes unnoticed.
			wake = make(chan struct{}, 1)
			for _, rt := range req.Topics {
				for _, rp := range rt.Partitions {
					if p, err := n.partition(rt.Topic, rp.Partition); err == nil {
						p.Notify(wake)
						watching = append(watching, p)
					}
				}
			}
			timer = time.NewTimer(req.MaxWait)
			continue
		}
		select {
		case <-wake:
		case <-timer.C:
			resp, _, failed := n.readFetch(req)
			if failed && n.closing.Load() {
				return closedFetch(resp)
			}
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// closedFetch answers a fetch whose partitions closed under it as the
// node closed: with ErrClosed, as a request that comes after Close, so
// that a client tries elsewhere (a cluster's new leader) rather than take
// the closed partitions for failed ones.
func closedFetch(resp *transport.FetchResponse) (*transport.FetchResponse, error) {
	closeFiles(resp)
	return nil, ErrClosed
}

// readFetch reads once what a fetch asks for, within its byte limits. It
// reports the record bytes read and whether any partition failed.
func (n *Broker) readFetch(req *transport.FetchRequest) (*transport.FetchResponse, int, bool) {
	resp := &transport.FetchResponse{Topics: make([]transport.FetchTopicResponse, len(req.Topics))}
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20 // fetch.max.bytes
	}
	total, failed := 0, false
	// free is the part of req.Buffer not holding records yet; each
	// partition reads into it, capped so that it cannot append over
	// what the next one reads.
	free := req.Buffer[:0]
	for i, rt := range req.Topics {
		tr := &resp.Topics[i]
		tr.Topic = rt.Topic
		tr.Partitions = make([]transport.FetchPartitionResponse, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			pr := &tr.Partitions[j]
			*pr = transport.FetchPartitionResponse{Partition: rp.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			p, err := n.readablePartition(rt.Topic, rp.Partition)
			if err != nil {
				pr.Err, failed = err, true
				continue
			}
			limit := int(rp.MaxBytes)
			if limit <= 0 {
				limit = 1 << 20 // max.partition.fetch.bytes
			}
			// The request's budget bounds every partition; only the first
			// with records may pass it, by its first batch, as in Kafka.
			limit = min(limit, budget-total)
			if total == 0 {
				limit = max(limit, 1)
			}
			var res partition.FetchResult
			var file vfs.FileRange
			switch {
			case limit <= 0:
				res = partition.FetchResult{HighWatermark: p.HighWatermark(), LogStartOffset: p.LogStartOffset()}
				res.LastStableOffset, err = p.LastStableOffset()
			case req.FileRecords:
				res, file, err = p.FetchRangeIsolated(rp.FetchOffset, limit, req.Isolation)
				if errors.Is(err, log.ErrNoDescriptor) {
					res, err = p.FetchIsolated(nil, rp.FetchOffset, limit, req.Isolation)
				}
			default:
				res, err = p.FetchIsolated(free[:0:cap(free)], rp.FetchOffset, limit, req.Isolation)
				if n := len(res.Records); n > 0 && n <= cap(free) && &res.Records[0] == &free[:1][0] {
					res.Records = res.Records[:n:n]
					free = free[n:n:cap(free)] // read in place
				}
			}
			pr.HighWatermark, pr.LastStableOffset, pr.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
			for _, a := range res.AbortedTransactions {
				pr.AbortedTransactions = append(pr.AbortedTransactions, transport.AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
			}
			if err != nil {
				pr.Err, failed = n.goneError(rt.Topic, rp.Partition, err), true
				continue
			}
			pr.Records = res.Records
			pr.File = file
			total += len(res.Records) + int(file.Size)
		}
	}
	return resp, total, failed
}

// goneError is the error a fetch or ListOffsets answers for a partition whose read
// failed with err. A partition closed under a node that stays open was
// deleted or moved away between the lookup and the read: the client hears
// what a lookup says now (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER)
// or, when the partition is back, NOT_LEADER_OR_FOLLOWER, all retriable, as
// if the request had come a moment later; never the node's ErrClosed.
func (n *Broker) goneError(topic string, id int32, err error) error {
	if !errors.Is(err, kafka.ErrClosed) || n.closing.Load() {
		return err
	}
	if _, lookup := n.readablePartition(topic, id); lookup != nil {
		return lookup
	}
	return fmt.Errorf("%w: %s-%d was replaced during the read", kafka.ErrNotLeaderOrFollower, topic, id)
}

// closeFiles closes the file ranges of a fetch answer that is not sent.
func closeFiles(resp *transport.FetchResponse) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			p.File.Close()
		}
	}
}

// ListOffsets answers offsets by time for each partition.
func (n *Broker) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ListOffsetsResponse{Topics: make([]transport.ListOffsetsTopicResponse, len(req.Topics))}
	for i, rt := range req.Topics {
		tr := &resp.Topics[i]
		tr.Topic = rt.Topic
		tr.Partitions = make([]transport.ListOffsetsPartitionResponse, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			pr := &tr.Partitions[j]
			*pr = transport.ListOffsetsPartitionResponse{Partition: rp.Partition, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
			p, err := n.readablePartition(rt.Topic, rp.Partition)
			if err != nil {
				pr.Err = err
				continue
			}
			pr.Offset, pr.Timestamp, err = p.ListOffsetIsolated(rp.Timestamp, req.Isolation)
			if err != nil {
				pr.Err = n.goneError(rt.Topic, rp.Partition, err)
			}
			pr.LeaderEpoch = p.LeaderEpoch()
		}
	}
	return resp, nil
}

// autoCreate creates the unknown topics a Metadata request names when it
// allows it and the node auto-creates topics (AutoCreateTopics). A topic
// that cannot be created is answered as unknown, or with what was wrong
// with its name.
func (n *Broker) autoCreate(ctx context.Context, req *transport.MetadataRequest) {
	if !req.AllowAutoTopicCreation || n.opts.NoAutoCreateTopics {
		return
	}
	md, _ := n.member.metadata()
	for _, name := range req.Topics {
		if _, ok := md.Topics[name]; ok || strings.HasPrefix(name, "__") || ValidateTopicName(name) != nil ||
			req.MayCreate != nil && !req.MayCreate(name) {
			continue
		}
		nt := NewTopic{Name: name, Partitions: n.opts.AutoCreatePartitions, ReplicationFactor: n.opts.AutoCreateReplicationFactor}
		if len(md.Nodes) > 0 {
			nt.ReplicationFactor = min(nt.ReplicationFactor, int16(len(md.Nodes)))
		}
		err := n.createTopic(ctx, nt)
		switch {
		case err == nil:
			n.logger.Info("auto-created a topic", "topic", name, "partitions", nt.Partitions, "replication_factor", nt.ReplicationFactor)
		case !errors.Is(err, kafka.ErrTopicAlreadyExists):
			n.logger.Warn("auto-creating a topic failed", "topic", name, "err", err)
		}
	}
}

// Metadata describes the cluster's live nodes and the topics asked for
// (all of them when none are named).
func (n *Broker) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	n.autoCreate(ctx, req)
	return n.metadataResponse(req), nil
}

// readablePartition returns a partition consumers may read: the leader
// answers reads, as in Kafka.
func (n *Broker) readablePartition(name string, id int32) (*partition.Partition, error) {
	h, err := n.leaderReplica(name, id)
	if err != nil {
		return nil, err
	}
	return h.p, nil
}

// checkClientBatch refuses what only a coordinator writes: transaction
// markers (control batches), which WriteTxnMarkers writes, and
// transactional batches without a sequence, which the group coordinator
// writes for TxnOffsetCommit — as Kafka refuses them from a client with
// INVALID_RECORD. A batch too short to parse is the append's to refuse.
func checkClientBatch(batch []byte) error {
	h, err := record.ParseHeader(batch)
	switch {
	case err != nil:
		return nil
	case h.Attributes.IsControl():
		return fmt.Errorf("%w: a client may not write a control batch", kafka.ErrInvalidRecord)
	case h.Attributes.IsTransactional() && h.BaseSequence == record.NoSequence:
		return fmt.Errorf("%w: a transactional batch without a sequence", kafka.ErrInvalidRecord)
	}
	return nil
}
