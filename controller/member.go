package controller

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path"

	raft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partlog/partlog/controller/raftlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
)

// Member is one controller of a quorum, as a KRaft controller is: the
// metadata log is a Raft log (go.etcd.io/raft/v3) that every member keeps
// in its __cluster_metadata-0 partition, and the Raft leader, once it has
// applied every entry of the terms before its own, is the active
// controller — the one member that changes the metadata.
//
// Each member applies committed entries, and only those, to a Machine
// that follows the log; that machine's state is the metadata nodes see,
// and its version is the index of the last entry it applied. The active
// controller runs a second Machine, a copy of the committed one when it
// became active, through which calls change the metadata (Do): each
// change is proposed to the quorum as one entry and applied to that
// machine at once, so that the next call sees it, but it is acknowledged
// (its Pending completes) only when the quorum has committed it. When the
// member stops being the leader, that machine and every change still
// pending go: the pending changes fail with kafka.ErrNotController,
// though the new leader may still commit them, as a KRaft controller's
// NOT_CONTROLLER leaves them unknown.
//
// A Member is deterministic, like a replica.Replica: it starts no
// goroutine and reads no clock. Its driver calls Tick every TickInterval,
// Step with each message from another member, and Process after either,
// and sends the messages Process returns. Its only I/O is its Raft log,
// synced before Process returns. It is not safe for concurrent use.
type Member struct {
	id     int32
	opts   Options
	logger *slog.Logger
	log    *raftlog.Log
	rn     *raft.RawNode

	// committed follows the log: it has applied every entry up to applied
	// (of term appliedTerm), and nothing else.
	committed   *Machine
	applied     uint64
	appliedTerm uint64
	confState   *pb.ConfState
	snapshotAt  uint64 // the index of the newest snapshot

	// active is the active controller's machine, nil on a member that is
	// not active, and activeTerm the term it leads in.
	active     *Machine
	activeTerm uint64
	// Proposals carry a sequence number, so that a committed entry of the
	// active term finds its Pending.
	nextSeq uint64
	lastSeq uint64
	pending map[uint64]*Pending

	// observe, if not nil, is called with every committed record, as it
	// is applied.
	observe func(Record)

	// actBeforeCommit, in tests, acknowledges each change as soon as it
	// is proposed: the negative control of the quorum's tests.
	actBeforeCommit bool
	earlyIndex      uint64
}

// Pending is a change the active controller made, until the quorum
// commits it.
type Pending struct {
	done    chan struct{}
	version int64
	err     error
}

// Done is closed once the change is committed, or known not to be
// acknowledged.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Result returns, once Done is closed, the metadata version that holds
// the change (the index of its entry), or kafka.ErrNotController when the
// controller stopped being active before the change committed.
func (p *Pending) Result() (version int64, err error) { return p.version, p.err }

func (p *Pending) complete(version int64, err error) {
	p.version, p.err = version, err
	close(p.done)
}

// completed returns a Pending that is done.
func completed(version int64) *Pending {
	p := &Pending{done: make(chan struct{})}
	p.complete(version, nil)
	return p
}

// raftID is the Raft id of controller node id: Raft reserves 0 for none,
// which is a valid Kafka node id.
func raftID(id int32) uint64 { return uint64(id) + 1 }

// nodeID is the controller node id of a Raft id.
func nodeID(id uint64) int32 { return int32(id - 1) }

// OpenMember opens (creating as needed) controller id's part of the
// quorum whose voters are voters, in dir's log directory logs: the
// partition __cluster_metadata-0 (Topic) holds the Raft log, beside
// KRaft's quorum-state file and %020d-%010d.checkpoint snapshots. A new
// member's log starts with the voters; every member of a new quorum must
// be given the same ones. Of opts it reads TickInterval, ElectionTimeout,
// FailoverSessionTimeout, SnapshotEntries, Logger and what a Machine
// reads. The partition stays logs', which the caller closes after the
// member's last use.
func OpenMember(id int32, voters []int32, logs *log.Dir, opts Options) (*Member, error) {
	return openMember(id, voters, logs, opts, nil)
}

// openMember is OpenMember, calling prepare, if not nil, with the
// partition before it reads it, to rewrite what an older version wrote.
// A metadata log a single controller wrote before the quorum
// (a LogStore's) becomes a Raft log of a quorum of one.
func openMember(id int32, voters []int32, logs *log.Dir, opts Options, prepare func(*log.Log) error) (*Member, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if id < 0 {
		return nil, fmt.Errorf("controller: node id %d is negative", id)
	}
	l, err := logs.Open(Topic, log.Options{SegmentBytes: 16 << 20, MaxIndexBytes: 1 << 20, RetentionMs: -1})
	if err != nil {
		return nil, fmt.Errorf("controller: open metadata log: %w", err)
	}
	if prepare != nil {
		if err := prepare(l); err != nil {
			return nil, err
		}
	}
	dir := path.Join(logs.Path(), Topic.String())
	if len(voters) == 1 && voters[0] == id {
		if err := migrateLogStore(l, id, opts.FS, logs.Path(), dir, opts.Logger, opts); err != nil {
			return nil, err
		}
	} else if old, err := isLogStore(l); err != nil || old {
		return nil, cmp.Or(err, fmt.Errorf("controller: %s holds the metadata log of a single controller, which opens as a quorum of itself alone, not of voters %v", dir, voters))
	}
	rl, err := raftlog.Open(l, opts.FS, path.Join(dir, "quorum-state"), dir)
	if err != nil {
		return nil, fmt.Errorf("controller: open the Raft log: %w", err)
	}
	m := &Member{id: id, opts: opts, logger: opts.Logger.With("controller", id), log: rl, pending: map[uint64]*Pending{}}
	snap, err := rl.Snapshot()
	if err != nil {
		return nil, err
	}
	if err := m.restore(snap); err != nil {
		return nil, err
	}
	hs, _, err := rl.InitialState()
	if err != nil {
		return nil, err
	}
	last, err := rl.LastIndex()
	if err != nil {
		return nil, err
	}
	cfg := &raft.Config{ID: raftID(id), ElectionTick: int(opts.ticks(opts.ElectionTimeout)), HeartbeatTick: 1,
		Storage: rl, Applied: m.applied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
		CheckQuorum: true, PreVote: true, DisableProposalForwarding: true, Logger: raftLogger{m.logger}}
	if m.rn, err = raft.NewRawNode(cfg); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if raft.IsEmptyHardState(hs) && last == 0 && raft.IsEmptySnap(snap) {
		peers := make([]raft.Peer, len(voters))
		for i, v := range voters {
			peers[i] = raft.Peer{ID: raftID(v)}
		}
		if err := m.rn.Bootstrap(peers); err != nil {
			return nil, fmt.Errorf("controller: start the quorum: %w", err)
		}
	}
	return m, nil
}

// restore makes the committed machine the state snap holds (an empty
// state for an empty snapshot).
func (m *Member) restore(snap *pb.Snapshot) error {
	var recs []Record
	if !raft.IsEmptySnap(snap) {
		var err error
		if recs, err = decodeRecords(snap.GetData()); err != nil {
			return fmt.Errorf("controller: snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
		}
	}
	committed, err := NewMachine(&snapshotStore{records: recs}, m.opts)
	if err != nil {
		return err
	}
	m.committed = committed
	md := snap.GetMetadata()
	m.applied, m.appliedTerm, m.snapshotAt = md.GetIndex(), md.GetTerm(), md.GetIndex()
	m.confState = md.GetConfState()
	return nil
}

// snapshotStore is the Store of a machine made from a snapshot: it
// replays the snapshot's records, and writes nothing.
type snapshotStore struct{ records []Record }

func (s *snapshotStore) Append([]Record) error {
	return fmt.Errorf("%w: this machine follows the metadata log", kafka.ErrNotController)
}

func (s *snapshotStore) Replay(fn func(Record) error) error {
	for _, r := range s.records {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// proposer is the Store of the active controller's machine: it proposes
// each Append to the quorum as one entry, and replays the committed state
// the machine starts from.
type proposer struct {
	m     *Member
	start []Record
	last  *Pending // of the last Append
}

func (p *proposer) Append(records []Record) error {
	m := p.m
	seq := m.nextSeq + 1
	data := appendRecords(binary.BigEndian.AppendUint64(nil, seq), records)
	if err := m.rn.Propose(data); err != nil {
		return fmt.Errorf("%w: %v", kafka.ErrNotController, err)
	}
	m.nextSeq, m.lastSeq = seq, seq
	p.last = &Pending{done: make(chan struct{})}
	m.pending[seq] = p.last
	if m.actBeforeCommit {
		// The entry's index: the leader's log holds only its own
		// entries after the last Process saved.
		last, _ := m.log.LastIndex()
		m.earlyIndex = max(m.earlyIndex, last) + 1
		p.last.complete(int64(m.earlyIndex), nil)
		delete(m.pending, seq)
	}
	return nil
}

func (p *proposer) Replay(fn func(Record) error) error {
	return (&snapshotStore{records: p.start}).Replay(fn)
}

// ID returns the member's node id.
func (m *Member) ID() int32 { return m.id }

// Active reports whether the member is the active controller.
func (m *Member) Active() bool { return m.active != nil }

// Leader returns the node id of the quorum's leader as this member knows
// it, and false when it knows none.
func (m *Member) Leader() (int32, bool) {
	lead := m.rn.BasicStatus().Lead
	return nodeID(lead), lead != raft.None
}

// Term returns the member's current Raft term: KRaft's leader epoch of
// the metadata log.
func (m *Member) Term() uint64 { return m.rn.BasicStatus().GetTerm() }

// Version returns the version of the committed metadata: the index of the
// last entry the member applied.
func (m *Member) Version() int64 { return int64(m.applied) }

// State returns a copy of the committed metadata.
func (m *Member) State() ClusterState { return m.committed.State() }

// notController is the error of a call to a member that is not active,
// naming the leader when the member knows one.
func (m *Member) notController() error {
	if lead, ok := m.Leader(); ok && lead != m.id {
		return fmt.Errorf("%w: controller %d is not active; %d leads the quorum", kafka.ErrNotController, m.id, lead)
	}
	return fmt.Errorf("%w: controller %d is not active, and knows no leader", kafka.ErrNotController, m.id)
}

// Do runs fn on the active controller's machine, whose changes are
// proposed to the quorum, and returns the Pending that completes once the
// last of them — or, when fn changed nothing, the last change before it —
// is committed. What fn reads from the machine includes the changes still
// pending: it is an answer to give once the Pending completes. On a
// member that is not active Do fails with kafka.ErrNotController. An
// error of fn is returned as it is; the changes fn made before it failed
// stay proposed.
func (m *Member) Do(fn func(*Machine) error) (*Pending, error) {
	if m.active == nil {
		return nil, m.notController()
	}
	prop := m.active.store.(*proposer)
	prop.last = nil
	err := fn(m.active)
	m.active.Updates() // nodes pull the metadata with their heartbeats
	switch p, ok := m.pending[m.lastSeq]; {
	case err != nil:
		return nil, err
	case prop.last != nil:
		return prop.last, nil
	case ok:
		return p, nil
	}
	return completed(int64(m.applied)), nil
}

// Campaign makes the member stand for election now, rather than once an
// election timeout passed without a leader: for a quorum of one, which
// would otherwise wait that long at every start. Process after it.
func (m *Member) Campaign() error { return m.rn.Campaign() }

// Tick tells the member one TickInterval passed: a tick of Raft's clock
// and, on the active controller, of its machine's (session expiry,
// preferred leaders).
func (m *Member) Tick() error {
	m.rn.Tick()
	if m.active == nil {
		return nil
	}
	err := m.active.Tick()
	m.active.Updates()
	return err
}

// Step hands the member a message from another member. Messages from an
// older term, or for another member, are ignored.
func (m *Member) Step(msg *pb.Message) error {
	if msg.GetTo() != raftID(m.id) {
		return nil
	}
	err := m.rn.Step(msg)
	if errors.Is(err, raft.ErrStepPeerNotFound) {
		return nil // from a member the configuration does not know
	}
	return err
}

// ReportSnapshot tells the member whether a snapshot message it sent
// (pb.MessageType_MsgSnap) reached controller to: until it hears, the
// leader sends that member nothing more, as the snapshot may be on its way.
func (m *Member) ReportSnapshot(to int32, delivered bool) {
	status := raft.SnapshotFailure
	if delivered {
		status = raft.SnapshotFinish
	}
	m.rn.ReportSnapshot(raftID(to), status)
}

// ReportUnreachable tells the member a message to controller to could not
// be sent, so that the leader probes it rather than stream to it.
func (m *Member) ReportUnreachable(to int32) { m.rn.ReportUnreachable(raftID(to)) }

// Process carries out what Raft has ready: it syncs new entries and the
// HardState to the Raft log, installs a snapshot the leader sent, applies
// committed entries to the committed machine, completes the pending
// changes they hold, and takes a snapshot every SnapshotEntries entries.
// It returns the messages for the other members, which are the caller's,
// to send after it returns, in any order; any may be lost, but the sender of a snapshot
// (pb.MessageType_MsgSnap) must hear whether it arrived (ReportSnapshot).
// A failed write to the log is
// returned, and leaves the member to be closed: a member that cannot
// persist must not take part.
func (m *Member) Process() ([]*pb.Message, error) {
	var out []*pb.Message
	for m.rn.HasReady() {
		m.checkLeadership()
		rd := m.rn.Ready()
		if err := m.log.SaveSnapshot(rd.Snapshot); err != nil {
			return out, fmt.Errorf("controller: save a snapshot: %w", err)
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := m.restore(rd.Snapshot); err != nil {
				return out, err
			}
			m.logger.Info("caught up from a snapshot", "index", m.applied, "term", m.appliedTerm)
		}
		if err := m.log.Save(rd.HardState, rd.Entries); err != nil {
			return out, fmt.Errorf("controller: save the Raft log: %w", err)
		}
		out = append(out, rd.Messages...)
		for _, e := range rd.CommittedEntries {
			if err := m.applyEntry(e); err != nil {
				return out, err
			}
		}
		m.rn.Advance(rd)
	}
	m.checkLeadership()
	if m.applied-m.snapshotAt >= uint64(m.opts.SnapshotEntries) {
		data := appendRecords(nil, m.committed.Snapshot())
		if err := m.log.Compact(m.applied, m.confState, data); err != nil {
			return out, fmt.Errorf("controller: snapshot at %d: %w", m.applied, err)
		}
		m.snapshotAt = m.applied
	}
	return out, nil
}

// applyEntry applies one committed entry.
func (m *Member) applyEntry(e *pb.Entry) error {
	switch e.GetType() {
	case pb.EntryType_EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("%w: configuration change at %d: %v", ErrCorruptMetadata, e.GetIndex(), err)
		}
		m.confState = m.rn.ApplyConfChange(&cc)
	case pb.EntryType_EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("%w: configuration change at %d: %v", ErrCorruptMetadata, e.GetIndex(), err)
		}
		m.confState = m.rn.ApplyConfChange(&cc)
	case pb.EntryType_EntryNormal:
		if data := e.GetData(); len(data) > 0 { // a new leader's first entry is empty
			if len(data) < 8 {
				return fmt.Errorf("%w: entry %d is %d bytes", ErrCorruptMetadata, e.GetIndex(), len(data))
			}
			recs, err := decodeRecords(data[8:])
			if err != nil {
				return fmt.Errorf("metadata entry %d: %w", e.GetIndex(), err)
			}
			if err := m.committed.Apply(recs); err != nil {
				return fmt.Errorf("metadata entry %d: %w", e.GetIndex(), err)
			}
			if m.observe != nil {
				for _, r := range recs {
					m.observe(r)
				}
			}
			if m.active != nil && e.GetTerm() == m.activeTerm {
				seq := binary.BigEndian.Uint64(data)
				if p, ok := m.pending[seq]; ok {
					delete(m.pending, seq)
					p.complete(int64(e.GetIndex()), nil)
				}
			}
		}
	}
	m.applied, m.appliedTerm = e.GetIndex(), e.GetTerm()
	return nil
}

// failPending completes every pending change with err.
func (m *Member) failPending(err error) {
	for seq, p := range m.pending {
		p.complete(-1, err)
		delete(m.pending, seq)
	}
}

// checkLeadership makes the member active once it leads and has applied
// an entry of its own term — so every entry before it — and inactive as
// soon as it no longer leads in that term.
func (m *Member) checkLeadership() {
	st := m.rn.BasicStatus()
	leads := st.RaftState == raft.StateLeader
	if m.active != nil && (!leads || st.GetTerm() != m.activeTerm) {
		m.logger.Info("no longer the active controller", "term", m.activeTerm, "pending_changes", len(m.pending))
		m.failPending(fmt.Errorf("%w: controller %d stopped leading term %d before the change committed",
			kafka.ErrNotController, m.id, m.activeTerm))
		m.active = nil
	}
	if m.active == nil && leads && m.appliedTerm == st.GetTerm() {
		active, err := NewMachine(&proposer{m: m, start: m.committed.Snapshot()}, m.opts)
		if err != nil {
			// The committed machine replays its own snapshot: it cannot
			// fail but by a bug, which must not make two states.
			panic(fmt.Sprintf("controller: copy the committed metadata: %v", err))
		}
		active.store.(*proposer).start = nil
		active.ShortenSessions(m.opts.FailoverSessionTimeout)
		m.active, m.activeTerm = active, st.GetTerm()
		m.logger.Info("active controller", "term", m.activeTerm, "metadata_version", m.applied)
	}
}

// ActBeforeCommitForTesting makes the member acknowledge each change as
// soon as it proposes it, before the quorum commits it: a broken
// controller, for the negative controls of simulations that must catch
// it. Never call it otherwise.
func (m *Member) ActBeforeCommitForTesting() { m.actBeforeCommit = true }
