// Consumergroup is the seed's consumer group case in one program: topic
// "study" with four partitions, group "lzl" with two consumers, and one
// producer sending hellos. Each hello reaches exactly one of the two
// consumers. Then one consumer leaves; the other takes its partitions over
// and goes on from the offsets the group committed, so that nothing is lost
// and nothing is received twice. It prints each step.
//
//	go run ./examples/consumergroup [-dir DIR]
//
// The directory is emptied first: the default one lives under the OS's
// temporary directory, and a directory of your own must be a partlog data
// directory (or empty) to be used.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "partlog-consumergroup"), "data directory (emptied first)")
	flag.Parse()
	if err := run(context.Background(), *dir); err != nil {
		fmt.Fprintln(os.Stderr, "consumergroup:", err)
		os.Exit(1)
	}
}

// received is a hello as one consumer got it.
type received struct {
	by    string
	tp    kafka.TopicPartition
	off   int64
	value string
}

// groupConsumer is one member of group lzl, polling in a goroutine of its
// own as an application does.
type groupConsumer struct {
	name string
	c    *consumer.Consumer
	stop chan struct{}
	done chan error

	mu    sync.Mutex
	owned []kafka.TopicPartition
}

func run(ctx context.Context, dir string) error {
	if err := emptyDataDir(dir); err != nil {
		return err
	}
	fmt.Printf("data directory: %s\n", dir)
	node, err := partlog.Open(dir)
	if err != nil {
		return err
	}
	defer node.Close()
	if err := node.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 4}); err != nil {
		return err
	}
	fmt.Println("created topic study with 4 partitions")

	got := make(chan received, 100)
	changed := make(chan string, 100)
	c1, err := startConsumer(node, "consumer-1", got, changed)
	if err != nil {
		return err
	}
	c2, err := startConsumer(node, "consumer-2", got, changed)
	if err != nil {
		return err
	}
	// Wait for the group to settle: two members, two partitions each.
	if err := awaitOwners(changed, map[*groupConsumer]int{c1: 2, c2: 2}); err != nil {
		return err
	}
	fmt.Printf("group lzl is stable: consumer-1 has %v, consumer-2 has %v\n", c1.partitions(), c2.partitions())

	p, err := producer.New(node.Client(), producer.Linger(time.Millisecond))
	if err != nil {
		return err
	}
	defer p.Close()
	send := func(from, to int) error {
		var recs []*producer.Record
		for i := from; i < to; i++ {
			recs = append(recs, &producer.Record{Topic: "study", Value: []byte(fmt.Sprintf("hello %d", i))})
		}
		return p.ProduceSync(ctx, recs...).FirstErr()
	}

	fmt.Println("\nthe producer sends hello 0 to hello 19")
	if err := send(0, 20); err != nil {
		return err
	}
	seen := map[string]received{}
	if err := receive(got, seen, 20); err != nil {
		return err
	}

	fmt.Println("\nconsumer-2 leaves the group: it commits what it processed and gives its partitions up")
	gave := c2.partitions()
	if err := c2.close(); err != nil {
		return err
	}
	if err := awaitOwners(changed, map[*groupConsumer]int{c1: 4}); err != nil {
		return err
	}
	committed, err := c1.c.Committed(ctx, gave...)
	if err != nil {
		return err
	}
	for _, tp := range gave {
		fmt.Printf("consumer-1 takes over %v from its committed offset %d\n", tp, committed[tp].Offset)
	}

	fmt.Println("\nthe producer sends hello 20 to hello 39")
	if err := send(20, 40); err != nil {
		return err
	}
	if err := receive(got, seen, 20); err != nil {
		return err
	}
	if err := c1.close(); err != nil {
		return err
	}

	counts := map[string]int{}
	for _, r := range seen {
		counts[r.by]++
	}
	fmt.Printf("\nall 40 hellos received, each exactly once: consumer-1 got %d, consumer-2 got %d\n", counts["consumer-1"], counts["consumer-2"])
	return nil
}

// startConsumer starts a member of group lzl that commits after each poll
// and when it gives partitions up (commit on revoke).
func startConsumer(node *partlog.Node, name string, got chan<- received, changed chan<- string) (*groupConsumer, error) {
	g := &groupConsumer{name: name, stop: make(chan struct{}), done: make(chan error, 1)}
	c, err := consumer.New(node.Client(),
		consumer.Group("lzl"), consumer.Topics("study"), consumer.ClientID(name),
		consumer.AutoOffsetReset(consumer.Earliest), consumer.DisableAutoCommit(),
		consumer.HeartbeatInterval(100*time.Millisecond), consumer.SessionTimeout(6*time.Second),
		consumer.FetchMaxWait(100*time.Millisecond),
		consumer.OnPartitionsRevoked(func(ctx context.Context, c *consumer.Consumer, tps []kafka.TopicPartition) {
			if err := c.Commit(ctx); err != nil {
				fmt.Printf("%s: commit on revoke failed: %v\n", name, err)
			}
			g.mu.Lock()
			g.owned = slices.DeleteFunc(g.owned, func(tp kafka.TopicPartition) bool { return slices.Contains(tps, tp) })
			g.mu.Unlock()
			fmt.Printf("%s: partitions revoked: %v\n", name, tps)
			changed <- name
		}),
		consumer.OnPartitionsAssigned(func(ctx context.Context, c *consumer.Consumer, tps []kafka.TopicPartition) {
			g.mu.Lock()
			g.owned = append(g.owned, tps...)
			g.mu.Unlock()
			fmt.Printf("%s: partitions assigned: %v (generation %d)\n", name, tps, c.GroupMetadata().Generation)
			changed <- name
		}),
	)
	if err != nil {
		return nil, err
	}
	g.c = c
	go func() {
		ctx := context.Background()
		for {
			select {
			case <-g.stop:
				g.done <- c.Close()
				return
			default:
			}
			fetches, err := c.Poll(ctx, 50*time.Millisecond)
			if err != nil {
				c.Close()
				g.done <- err
				return
			}
			fetches.EachRecord(func(r *consumer.Record) {
				got <- received{by: name, tp: r.TopicPartition(), off: r.Offset, value: string(r.Value)}
			})
			if !fetches.Empty() {
				if err := c.Commit(ctx); err != nil {
					fmt.Printf("%s: commit failed: %v\n", name, err)
				}
			}
		}
	}()
	return g, nil
}

func (g *groupConsumer) partitions() []kafka.TopicPartition {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Clone(g.owned)
	slices.SortFunc(out, func(a, b kafka.TopicPartition) int { return int(a.Partition - b.Partition) })
	return out
}

// close stops the consumer's loop, which closes it: it revokes its
// partitions (committing) and leaves the group at once.
func (g *groupConsumer) close() error {
	close(g.stop)
	return <-g.done
}

// awaitOwners waits until each consumer owns the number of partitions
// given.
func awaitOwners(changed <-chan string, want map[*groupConsumer]int) error {
	timeout := time.After(30 * time.Second)
	for {
		done := true
		for g, n := range want {
			done = done && len(g.partitions()) == n
		}
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-timeout:
			return errors.New("the group did not settle within 30s")
		}
	}
}

// receive prints n hellos as they come, and fails on one received twice.
func receive(got <-chan received, seen map[string]received, n int) error {
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case r := <-got:
			if prev, dup := seen[r.value]; dup {
				return fmt.Errorf("%s received twice: by %s and by %s", r.value, prev.by, r.by)
			}
			seen[r.value] = r
			fmt.Printf("%s received %-8s from %v at offset %d\n", r.by, r.value, r.tp, r.off)
		case <-timeout:
			return fmt.Errorf("a hello did not arrive within 30s")
		}
	}
	return nil
}

// emptyDataDir removes dir if it is a partlog data directory, or empty.
func emptyDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, partlog.MetaPropertiesFileName)); err != nil && len(entries) > 0 {
		return fmt.Errorf("%s holds files but is not a partlog data directory; give an empty one", dir)
	}
	return os.RemoveAll(dir)
}
