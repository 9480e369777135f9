package share_test

import (
	"fmt"
	"time"

	"github.com/partlog/partlog/share"
)

func Example() {
	now := time.Unix(1_700_000_000, 0)
	// A share partition no member has consumed, starting at offset 100
	// (share.auto.offset.reset=latest, with the log ending at 100). The
	// caller writes this state to the share coordinator first; every
	// Update below is written before the member hears of it.
	stored := share.State{StateEpoch: 1, LeaderEpoch: 7, StartOffset: 100}
	p, err := share.New(share.Config{DeliveryCountLimit: 2}, stored)
	if err != nil {
		panic(err)
	}
	write := func(u share.Update) {
		if stored, err = stored.Apply(u); err != nil {
			panic(err)
		}
	}

	// Member a fetches. The log read from the fetch offset returns two
	// batches; compaction removed offsets 103-104 between them.
	fetch := p.FetchOffset()
	got, u, err := p.Acquire("a", fetch, []share.Batch{{100, 102}, {105, 106}}, 500, now)
	if err != nil {
		panic(err)
	}
	write(u)
	fmt.Println("fetch offset", fetch, "a acquired", got)

	// a accepts 100-101, releases 102 and rejects 105.
	u, err = p.Acknowledge("a", []share.AckBatch{
		{FirstOffset: 100, LastOffset: 102, AcknowledgeTypes: []share.AckType{share.Accept, share.Accept, share.Release}},
		{FirstOffset: 105, LastOffset: 105, AcknowledgeTypes: []share.AckType{share.Reject}},
	}, now)
	write(u)
	fmt.Println("after a's acks:", err, "start offset", p.StartOffset())

	// Member b may not acknowledge what a holds.
	_, err = p.Acknowledge("b", []share.AckBatch{{FirstOffset: 106, LastOffset: 106, AcknowledgeTypes: []share.AckType{share.Accept}}}, now)
	fmt.Println("b acknowledging 106:", err)

	// a's lock on 106 expires; b gets 102 and 106 again, for the second
	// and last time.
	deadline, _ := p.NextDeadline()
	write(p.Expire(deadline))
	got, u, _ = p.Acquire("b", p.FetchOffset(), []share.Batch{{100, 102}, {105, 106}}, 500, deadline)
	write(u)
	fmt.Println("b acquired", got)
	// What is stored holds the acquisitions as Available, with their
	// delivery counts: a new leader would not deliver them a third time.
	fmt.Println("stored:", stored.StartOffset, stored.StateBatches)

	// b leaves: 102 and 106 have been delivered twice, so they are
	// archived rather than released.
	write(p.ReleaseMember("b", deadline))
	fmt.Printf("%+v\n", p.Describe())
	fmt.Println("stored:", stored.StartOffset, stored.StateBatches)
	// Output:
	// fetch offset 100 a acquired [{100 102 1} {105 106 1}]
	// after a's acks: <nil> start offset 102
	// b acknowledging 106: INVALID_RECORD_STATE: the record is not acquired by this member; its acknowledgement was not applied: batch 106-106: offset 106 is acquired by another member
	// b acquired [{102 102 2} {106 106 2}]
	// stored: 102 [102-102 AVAILABLE/2 103-104 ARCHIVED/0 105-105 ARCHIVED/1 106-106 AVAILABLE/2]
	// {StartOffset:107 EndOffset:107 Available:0 Acquired:0 Acknowledged:0 Archived:0 Locks:0}
	// stored: 107 []
}
