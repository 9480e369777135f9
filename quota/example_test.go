package quota_test

import (
	"fmt"
	"time"

	"github.com/partlog/partlog/quota"
)

// A Manager over the quotas in force says how long a client that went
// over its quota waits: alice may produce 1000 bytes a second, with a
// second's burst.
func ExampleManager() {
	quotas := quota.NewConfig(map[quota.Entity]map[string]float64{
		{User: "alice"}:       {quota.ProducerByteRate: 1000},
		{User: quota.Default}: {quota.ProducerByteRate: 1e6},
	})
	m := &quota.Manager{Config: func() *quota.Config { return quotas }, Window: time.Second}
	now := time.Unix(0, 0)
	fmt.Println(m.Record(now, "alice", "app", quota.ProducerByteRate, 1000))
	fmt.Println(m.Record(now, "alice", "app", quota.ProducerByteRate, 250))
	fmt.Println(m.Record(now.Add(time.Second), "alice", "app", quota.ProducerByteRate, 500))
	fmt.Println(m.Record(now, "bob", "app", quota.ProducerByteRate, 250))
	// Output:
	// 0s
	// 250ms
	// 0s
	// 0s
}

// Resolve applies Kafka's order: a user's client id, the user, the
// default user, the client id.
func ExampleConfig_Resolve() {
	quotas := quota.NewConfig(map[quota.Entity]map[string]float64{
		{User: "alice", ClientID: "batch"}: {quota.ConsumerByteRate: 100},
		{User: "alice"}:                    {quota.ConsumerByteRate: 1000},
		{ClientID: quota.Default}:          {quota.ConsumerByteRate: 5000},
	})
	for _, who := range [][2]string{{"alice", "batch"}, {"alice", "web"}, {"bob", "web"}} {
		limit, metered, _ := quotas.Resolve(who[0], who[1], quota.ConsumerByteRate)
		fmt.Printf("%s/%s: %v, metered as {%s}\n", who[0], who[1], limit, metered)
	}
	// Output:
	// alice/batch: 100, metered as {user-principal 'alice', client-id 'batch'}
	// alice/web: 1000, metered as {user-principal 'alice'}
	// bob/web: 5000, metered as {client-id 'web'}
}
