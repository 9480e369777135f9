package main

// reassign-partitions moves partitions' replicas between nodes, as
// kafka-reassign-partitions.sh does, and cluster unregisters a node, as
// kafka-cluster.sh unregister does.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

const reassignHelp = `Usage: partlog reassign-partitions --bootstrap-server HOST:PORT --topics-to-move-json-file FILE --broker-list 4,5,6 --generate
       partlog reassign-partitions --bootstrap-server HOST:PORT --reassignment-json-file FILE --execute|--verify|--cancel

Reassign-partitions moves partitions' replicas to other nodes of a
cluster, as Kafka's kafka-reassign-partitions.sh does, with its files:

  --generate  reads the topics of --topics-to-move-json-file,
              {"version":1,"topics":[{"topic":"orders"}]}, and prints their
              current assignment (keep it to roll back) and a proposed one
              over the nodes of --broker-list, as reassignment JSON:
              {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[4,5,6]}]}
  --execute   starts the reassignments of --reassignment-json-file: each
              partition's new replicas catch up from its leader, and once
              all are in sync the partition keeps them alone (its leader
              moves to the first if it led elsewhere) and the nodes of the
              old replicas delete them. The command returns once the
              controller has recorded them; they go on in the background.
  --verify    says, for each partition of the file, whether its
              reassignment is completed or still in progress, and fails
              until every one is completed.
  --cancel    stops the reassignments of the file's partitions, back to
              the replicas they had.

  partlog reassign-partitions --bootstrap-server 127.0.0.1:9101 --reassignment-json-file move.json --execute
`

// runReassign runs "partlog reassign-partitions".
func runReassign(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reassign-partitions")
	where := addTargetFlags(fs)
	topicsFile := fs.String("topics-to-move-json-file", "", "with --generate, a JSON `file` naming the topics to move")
	brokers := fs.String("broker-list", "", "with --generate, the `ids` of the nodes to move the topics to, comma-separated")
	planFile := fs.String("reassignment-json-file", "", "a JSON `file` of the partitions and their new replicas")
	generate := fs.Bool("generate", false, "print the current and a proposed assignment")
	execute := fs.Bool("execute", false, "start the reassignments of --reassignment-json-file")
	verify := fs.Bool("verify", false, "check the reassignments of --reassignment-json-file")
	cancel := fs.Bool("cancel", false, "cancel the reassignments of --reassignment-json-file")
	operands, err := parseFlags(fs, args, reassignHelp, stdout)
	if err != nil {
		return err
	}
	modes := 0
	for _, m := range []bool{*generate, *execute, *verify, *cancel} {
		if m {
			modes++
		}
	}
	switch {
	case len(operands) > 0:
		return usageErrorf("reassign-partitions", "unexpected argument %q", operands[0])
	case modes != 1:
		return usageErrorf("reassign-partitions", "give one of --generate, --execute, --verify and --cancel")
	case *generate && (*topicsFile == "" || *brokers == ""):
		return usageErrorf("reassign-partitions", "--generate needs --topics-to-move-json-file and --broker-list")
	case !*generate && *planFile == "":
		return usageErrorf("reassign-partitions", "--execute, --verify and --cancel need --reassignment-json-file")
	}
	ctx := context.Background()
	if *generate {
		var ids []int32
		for _, s := range strings.Split(*brokers, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil || id < 0 {
				return usageErrorf("reassign-partitions", "--broker-list %q is not node ids separated by commas", *brokers)
			}
			ids = append(ids, int32(id))
		}
		topics, err := readTopicsToMove(*topicsFile)
		if err != nil {
			return fmt.Errorf("reassign-partitions: %s: %w", *topicsFile, err)
		}
		t, err := openTarget("reassign-partitions", where, stderr)
		if err != nil {
			return err
		}
		defer t.close()
		return generateReassignment(ctx, t, topics, ids, stdout)
	}
	plan, err := readReassignment(*planFile)
	if err != nil {
		return fmt.Errorf("reassign-partitions: %s: %w", *planFile, err)
	}
	t, err := openTarget("reassign-partitions", where, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	admin := t.clusterAdmin()
	switch {
	case *verify:
		return verifyReassignment(ctx, t, admin, plan, stdout)
	case *cancel:
		for i := range plan {
			plan[i].Replicas = nil
		}
	}
	resp, err := admin.AlterPartitionReassignments(ctx, &transport.AlterPartitionReassignmentsRequest{Partitions: plan})
	if err != nil {
		return fmt.Errorf("reassign-partitions: %s", serverMessage(err))
	}
	var done, failed []string
	for _, r := range resp.Partitions {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", r.TopicPartition, serverMessage(r.Err)))
			continue
		}
		done = append(done, r.TopicPartition.String())
	}
	verb := "started"
	if *cancel {
		verb = "cancelled"
	}
	if len(done) > 0 {
		fmt.Fprintf(stdout, "Successfully %s partition reassignments for %s\n", verb, strings.Join(done, ","))
	}
	for _, f := range failed {
		fmt.Fprintf(stdout, "Error reassigning partition(s):\n%s\n", f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("reassign-partitions: %d of %d partitions failed", len(failed), len(plan))
	}
	return t.close()
}

// reassignmentJSON is kafka-reassign-partitions.sh's file of partitions and
// their replicas.
type reassignmentJSON struct {
	Version    int                     `json:"version"`
	Partitions []reassignmentPartition `json:"partitions"`
}

type reassignmentPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	// LogDirs is Kafka's log_dirs: accepted so that Kafka's files read,
	// and ignored, since a node keeps one data directory.
	LogDirs []string `json:"log_dirs,omitempty"`
}

// readReassignment reads a reassignment file.
func readReassignment(file string) ([]transport.PartitionReassignment, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r reassignmentJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a reassignment file: %w", err)
	}
	if len(r.Partitions) == 0 {
		return nil, fmt.Errorf("no partitions")
	}
	var out []transport.PartitionReassignment
	for _, p := range r.Partitions {
		if p.Topic == "" || len(p.Replicas) == 0 {
			return nil, fmt.Errorf("partition %s-%d has no topic or no replicas", p.Topic, p.Partition)
		}
		out = append(out, transport.PartitionReassignment{TopicPartition: kafka.TopicPartition{Topic: p.Topic, Partition: p.Partition}, Replicas: p.Replicas})
	}
	return out, nil
}

// readTopicsToMove reads a topics-to-move file:
// {"version":1,"topics":[{"topic":"t"}]}.
func readTopicsToMove(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r struct {
		Version int `json:"version"`
		Topics  []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("not a topics-to-move file: %w", err)
	}
	var names []string
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no topics")
	}
	return names, nil
}

// writeAssignment prints parts as a reassignment file's JSON on one line.
func writeAssignment(w io.Writer, parts []reassignmentPartition) error {
	b, err := json.Marshal(reassignmentJSON{Version: 1, Partitions: parts})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// generateReassignment prints the topics' current assignment and one that
// spreads their partitions' replicas over ids: partition p's replicas are
// ids p, p+1, ... (modulo their count), keeping its replication factor.
func generateReassignment(ctx context.Context, t *target, topics []string, ids []int32, stdout io.Writer) error {
	descs, err := t.describe(ctx, topics...)
	if err != nil {
		return fmt.Errorf("reassign-partitions: %s", serverMessage(err))
	}
	var current, proposed []reassignmentPartition
	for _, d := range descs {
		for _, p := range d.Partitions {
			current = append(current, reassignmentPartition{Topic: d.Name, Partition: p.Partition, Replicas: p.Replicas})
			rf := len(p.Replicas)
			if rf > len(ids) {
				return fmt.Errorf("reassign-partitions: %s-%d has %d replicas; --broker-list names %d nodes", d.Name, p.Partition, rf, len(ids))
			}
			var replicas []int32
			for j := range rf {
				replicas = append(replicas, ids[(int(p.Partition)+j)%len(ids)])
			}
			proposed = append(proposed, reassignmentPartition{Topic: d.Name, Partition: p.Partition, Replicas: replicas})
		}
	}
	fmt.Fprintln(stdout, "Current partition replica assignment")
	if err := writeAssignment(stdout, current); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nProposed partition reassignment configuration")
	return writeAssignment(stdout, proposed)
}

// verifyReassignment says of each partition of plan whether its
// reassignment is done, and fails while any is not.
func verifyReassignment(ctx context.Context, t *target, admin transport.ClusterAdminClient, plan []transport.PartitionReassignment, stdout io.Writer) error {
	ongoing, err := admin.ListPartitionReassignments(ctx, &transport.ListPartitionReassignmentsRequest{})
	if err != nil {
		return fmt.Errorf("reassign-partitions: %s", serverMessage(err))
	}
	// The plan's topics' assignments, in one description.
	var topics []string
	for _, p := range plan {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	descs, err := t.describe(ctx, topics...)
	if err != nil {
		return fmt.Errorf("reassign-partitions: %s", serverMessage(err))
	}
	replicas := map[kafka.TopicPartition][]int32{}
	for _, desc := range descs {
		for _, d := range desc.Partitions {
			replicas[kafka.TopicPartition{Topic: desc.Name, Partition: d.Partition}] = d.Replicas
		}
	}
	fmt.Fprintln(stdout, "Status of partition reassignment:")
	pending := 0
	for _, p := range plan {
		if slices.ContainsFunc(ongoing.Reassignments, func(o transport.OngoingReassignment) bool { return o.TopicPartition == p.TopicPartition }) {
			fmt.Fprintf(stdout, "Reassignment of partition %s is still in progress.\n", p.TopicPartition)
			pending++
			continue
		}
		if !slices.Equal(replicas[p.TopicPartition], p.Replicas) {
			fmt.Fprintf(stdout, "There is no active reassignment of partition %s, but its replicas are not %v.\n", p.TopicPartition, p.Replicas)
			pending++
			continue
		}
		fmt.Fprintf(stdout, "Reassignment of partition %s is completed.\n", p.TopicPartition)
	}
	if pending > 0 {
		return fmt.Errorf("reassign-partitions: %d of %d reassignments are not completed", pending, len(plan))
	}
	return nil
}

const clusterHelp = `Usage: partlog cluster unregister --bootstrap-server HOST:PORT --id N

Cluster unregister removes node N from the cluster, as Kafka's
kafka-cluster.sh unregister does: the controller fences it, if it is live,
so that the partitions it led elect other leaders, and forgets it. Its
partitions keep it among their replicas until they are reassigned
(partlog reassign-partitions).
`

// runCluster runs "partlog cluster".
func runCluster(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "unregister" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprint(stdout, clusterHelp)
			return flag.ErrHelp
		}
		return usageErrorf("cluster", "give unregister")
	}
	fs := newFlagSet("cluster")
	where := addTargetFlags(fs)
	id := fs.Int("id", -1, "the `id` of the node to unregister")
	operands, err := parseFlags(fs, args[1:], clusterHelp, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(operands) > 0:
		return usageErrorf("cluster", "unexpected argument %q", operands[0])
	case *id < 0 || *id > 1<<31-1:
		return usageErrorf("cluster", "--id is required: the node to unregister")
	}
	t, err := openTarget("cluster", where, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	resp, err := t.clusterAdmin().UnregisterBroker(context.Background(), &transport.UnregisterBrokerRequest{BrokerID: int32(*id)})
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("cluster: %s", serverMessage(err))
	}
	fmt.Fprintf(stdout, "Broker %d is no longer registered.\n", *id)
	return t.close()
}
