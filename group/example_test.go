package group_test

import (
	"fmt"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/transport"
)

// memLog keeps __consumer_offsets in memory.
type memLog map[int32][]group.Record

func (l memLog) AppendTransactional(p int32, _ int64, _ int16, recs []group.Record) error {
	return l.Append(p, recs)
}

func (l memLog) Append(p int32, recs []group.Record) error {
	l[p] = append(l[p], recs...)
	return nil
}

func Example() {
	log := memLog{}
	now := time.Unix(1_700_000_000, 0)
	c := group.New(log, group.Options{Now: func() time.Time { return now }, NewMemberID: func(client string) string { return client + "-1" }})

	// A member joins the empty group. The first rebalance waits
	// group.initial.rebalance.delay.ms (3s) for others to join; none
	// does, so after it the member leads generation 1 alone.
	var join *transport.JoinGroupResponse
	c.Join(&transport.JoinGroupRequest{Group: "lzl", ClientID: "c", ProtocolType: "consumer", SessionTimeout: 10 * time.Second,
		Protocols: []transport.JoinGroupProtocol{{Name: "range"}}}, func(r *transport.JoinGroupResponse) { join = r })
	fmt.Println("answered at once:", join != nil)
	now = now.Add(3 * time.Second)
	c.Tick()
	fmt.Println("joined:", join.MemberID, "generation", join.GenerationID, "leader", join.Leader)

	// The leader sends the assignment; the group is Stable.
	c.Sync(&transport.SyncGroupRequest{Group: "lzl", MemberID: join.MemberID, GenerationID: join.GenerationID,
		Assignments: []transport.SyncGroupAssignment{{MemberID: join.MemberID, Assignment: []byte("study-0")}}}, func(*transport.SyncGroupResponse) {})

	commit := func(gen int32, off int64) error {
		resp := c.Commit(&transport.OffsetCommitRequest{Group: "lzl", MemberID: join.MemberID, GenerationID: gen,
			Topics: []transport.OffsetCommitTopic{{Topic: "study", Partitions: []transport.OffsetCommitPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}}}})
		return resp.Topics[0].Partitions[0].Err
	}
	fmt.Println("commit in generation 1:", commit(1, 42))
	fmt.Println("commit in generation 0:", commit(0, 7))

	// No heartbeat for the session timeout: the member is dropped.
	now = now.Add(11 * time.Second)
	c.Tick()
	d := c.Describe(&transport.DescribeGroupsRequest{Groups: []string{"lzl"}}).Groups[0]
	fmt.Println("after the session timeout:", d.State, "generation", d.GenerationID)

	p := group.PartitionFor("lzl", group.DefaultOffsetsTopicPartitions)
	fmt.Println("records in", group.OffsetsTopic, "partition", p, ":", len(log[p]))
	f := c.Fetch(&transport.OffsetFetchRequest{Group: "lzl", Topics: []transport.OffsetFetchTopic{{Topic: "study", Partitions: []int32{0}}}})
	fmt.Println("committed offset:", f.Topics[0].Partitions[0].Offset)
	// Output:
	// answered at once: false
	// joined: c-1 generation 1 leader c-1
	// commit in generation 1: <nil>
	// commit in generation 0: ILLEGAL_GENERATION: the generation id is not the group's current one: generation 0, the group is at 1
	// after the session timeout: Empty generation 2
	// records in __consumer_offsets partition 28 : 3
	// committed offset: 42
}
