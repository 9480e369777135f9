package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/partlog/partlog/transport"
)

// checkAlter checks the command line of topics alter: a topic, and
// something to change (changes counts the configs to set and remove).
func checkAlter(fs *flag.FlagSet, topic string, partitions, changes int) error {
	switch {
	case topic == "":
		return usageErrorf("topics", "alter needs --topic")
	case isSet(fs, "replication-factor"):
		return usageErrorf("topics", "alter cannot change --replication-factor")
	case !isSet(fs, "partitions") && changes == 0:
		return usageErrorf("topics", "alter needs --partitions, --config or --delete-config")
	case isSet(fs, "partitions") && (partitions < 1 || partitions > math.MaxInt32):
		return fmt.Errorf("topics: %w: --partitions %d is not a partition count (1 to %d)", transport.ErrInvalidPartitions, partitions, math.MaxInt32)
	}
	return nil
}

// alterTopic changes a topic as older kafka-topics.sh --alter did: first
// its configs (set and deleted ones; the others stay as they are), then its
// partition count when count is not zero.
func alterTopic(ctx context.Context, t *target, topic string, count int32, set map[string]string, deleted []string, stdout, stderr io.Writer) error {
	if len(set)+len(deleted) > 0 {
		var changes []transport.ConfigChange
		for _, k := range deleted {
			changes = append(changes, transport.ConfigChange{Name: k, Op: transport.ConfigDelete})
		}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			changes = append(changes, transport.ConfigChange{Name: k, Op: transport.ConfigSet, Value: set[k]})
		}
		if err := alterConfigs(ctx, t.admin(), transport.ConfigResource{Type: transport.ConfigTopic, Name: topic}, changes); err != nil {
			return fmt.Errorf("altering %s's configs: %s", topic, t.adminMessage(err, topic))
		}
		fmt.Fprintf(stdout, "Updated config for topic %s.\n", topic)
	}
	if count == 0 {
		return nil
	}
	resp, err := t.admin().CreatePartitions(ctx, &transport.CreatePartitionsRequest{Topics: []transport.PartitionCount{{Topic: topic, Count: count}}})
	if err == nil {
		err = resp.Topics[0].Err
	}
	if err != nil {
		return fmt.Errorf("adding partitions to %s: %s", topic, t.adminMessage(err, topic))
	}
	// The warning kafka-topics.sh gives, on standard error: what the
	// command did goes to standard output.
	fmt.Fprintln(stderr, "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected")
	fmt.Fprintln(stdout, "Adding partitions succeeded!")
	return nil
}

// alterConfigs makes changes to the configs of r, incrementally.
func alterConfigs(ctx context.Context, admin transport.AdminClient, r transport.ConfigResource, changes []transport.ConfigChange) error {
	resp, err := admin.AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{ConfigResource: r, Changes: changes}}})
	if err != nil {
		return err
	}
	return resp.Resources[0].Err
}

// adminMessage says what went wrong with an admin call about topic: that
// it does not exist, or the node's error as the node wrote it.
func (t *target) adminMessage(err error, topic string) string {
	if errors.Is(err, transport.ErrUnknownTopicOrPartition) {
		return fmt.Sprintf("topic %q does not exist in %s", topic, t.where())
	}
	return serverMessage(err)
}
