package main

// consume prints records, as Kafka's kafka-console-consumer.sh does, with
// the lines of its DefaultMessageFormatter, through the consumer package's
// Poll: its timeout is what ends the command when records stop coming.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
)

const consumeHelp = `Usage: partlog consume --dir DIR --topic TOPIC [flags]

Consume prints the records of TOPIC on standard output, a line each, as
Kafka's kafka-console-consumer.sh does. It starts at the end of each
partition, printing only records produced from then on, unless
--from-beginning or --offset says otherwise. It runs until it is interrupted
(Ctrl-C), until it has printed --max-messages records, or until --timeout
passes without a new record. Then it prints "Processed a total of N
messages" on standard error, closes the data directory and exits with status
0. Runs of 100,000 records and more report progress on standard error every
5 seconds.

A line is the record's value, after the fields asked for, in this order,
each followed by key.separator (a tab unless set), as Kafka's
DefaultMessageFormatter writes them:

  --print-timestamp   CreateTime:1700000000000 (LogAppendTime:... when the
                      topic stamps the time)
  --print-partition   Partition:0
  --print-offset      Offset:42
  --print-headers     k1:v1,k2:v2, or NO_HEADERS
  --print-key         the key

so that --print-partition --print-offset --print-key prints lines such as

  Partition:0	Offset:42	user-7	clicked

A null key or value prints as null. Keys and values are written byte for
byte: a value holding a newline spans lines.

--consumer-property KEY=VALUE sets a consumer property, as Kafka's tool
takes it: group.protocol=consumer joins --group with Kafka 4's consumer
group protocol (KIP-848), whose coordinator assigns the partitions
(classic, the default, has the consumers assign them);
group.remote.assignor=uniform|range picks the coordinator's assignor.

--property KEY=VALUE sets the properties of kafka-console-consumer.sh's
formatter, as Kafka's tool takes them (repeat it for more; the flags above
are the same as the print.* properties):

  print.timestamp=true    the timestamp type and timestamp
  print.partition=true    Partition:N
  print.offset=true       Offset:N
  print.delivery=true     Delivery:NOT_PRESENT (a share group's count)
  print.epoch=true        Epoch:N, the leader epoch of the record's batch
  print.headers=true      the headers, or NO_HEADERS
  print.key=true          the key
  print.value=false       no value: the last field printed ends the line
  key.separator=S         what follows each field (--key-separator)
  line.separator=S        what ends each record; a newline unless set
  headers.separator=S     what separates headers; a comma unless set
  null.literal=S          what a null key, value or header prints as
  key.deserializer=C, value.deserializer=C, headers.deserializer=C
                          org.apache.kafka.common.serialization.StringDeserializer
                          (invalid UTF-8 becomes U+FFFD) or ByteArrayDeserializer
                          (bytes as they are, the default)

For example, --property print.key=true --property key.separator=:
prints "user-7:clicked". An unknown property is an error.

--formatter offsets (Kafka's
kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter)
decodes the records of __consumer_offsets and prints each committed offset
as Kafka's formatter does:

  [g,t,0]::OffsetAndMetadata(offset=5, leaderEpoch=Optional.empty, metadata=, commitTimestamp=1700000000000, expireTimestamp=None)

and [g,t,0]::NULL for a deleted one. --formatter group-metadata (Kafka's
...GroupMetadataManager$GroupMetadataMessageFormatter) prints the groups'
metadata records instead:

  g::GroupMetadata(groupId=g, generation=1, protocolType=Some(consumer), currentState=Stable, members=HashMap(...))

Each skips the other's records, as Kafka's do, and ignores the print.*
properties. For example:

  partlog consume --dir D --topic __consumer_offsets --from-beginning \
      --formatter offsets --timeout 1s

--isolation-level read_committed reads only the records of committed
transactions (and those written outside transactions), up to the last
stable offset, as Kafka's consumer with isolation.level=read_committed;
the default, read_uncommitted, reads every record below the high
watermark.

--group G makes the consumer a member of consumer group G: the group's
members share the topic's partitions, each partition starts at the group's
committed offset (or as --from-beginning says, when it has none), and the
offsets of the records printed are committed after each batch and when the
command ends, so that the next run goes on from there. With --partition it
reads that partition only and commits for the group.

--partition P reads that partition only, from --offset O when it is given:
an offset, earliest or latest. An offset outside the partition starts at its
end, as Kafka's auto.offset.reset=latest does. Without --partition every
partition of the topic is read, each in offset order.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// runConsume runs "partlog consume".
func runConsume(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("consume")
	where := addTargetFlags(fs)
	topic := fs.String("topic", "", "the `topic` to consume (required)")
	fromBeginning := fs.Bool("from-beginning", false, "start at the oldest record rather than at the end")
	partition := fs.Int("partition", -1, "the `partition` to consume; by default every partition")
	offset := fs.String("offset", "", "the `offset` in --partition to start at: a number, earliest or latest")
	maxMessages := fs.Int64("max-messages", 0, "exit after printing `N` records; 0 means no limit")
	timeout := durationVar(fs, "timeout", 0, "exit when no record came for this `duration`; 0 means never")
	group := fs.String("group", "", "the consumer `group` to consume in, committing its offsets")
	isolation := fs.String("isolation-level", "read_uncommitted", "the `isolation level`: read_uncommitted or read_committed (isolation.level)")
	f := newDefaultFormatter()
	fs.BoolVar(&f.timestamp, "print-timestamp", false, "print each record's timestamp type and timestamp (print.timestamp=true)")
	fs.BoolVar(&f.partition, "print-partition", false, "print each record's partition (print.partition=true)")
	fs.BoolVar(&f.offset, "print-offset", false, "print each record's offset (print.offset=true)")
	fs.BoolVar(&f.headers, "print-headers", false, "print each record's headers (print.headers=true)")
	fs.BoolVar(&f.key, "print-key", false, "print each record's key (print.key=true)")
	separator := fs.String("key-separator", "\t", "the `separator` after each printed field (key.separator); a tab unless set")
	props := propertyFlag{}
	fs.Var(props, "property", "a formatter property `key=value` (see above); repeat for more")
	consumerProps := propertyFlag{}
	fs.Var(consumerProps, "consumer-property", "a consumer property `key=value`: group.protocol (classic or consumer) or group.remote.assignor; repeat for more")
	formatter := fs.String("formatter", "default", "the `formatter` that prints records: default, offsets or group-metadata, or Kafka's class name of one")
	operands, err := parseFlags(fs, args, consumeHelp, stdout)
	if err != nil {
		return err
	}
	f.separator = []byte(*separator)
	format, err := newFormatter(*formatter, f, props, stderr)
	if err != nil {
		return &usageError{command: "consume", err: err}
	}
	switch {
	case len(operands) > 0:
		return usageErrorf("consume", "unexpected argument %q", operands[0])
	case *topic == "":
		return usageErrorf("consume", "--topic is required")
	case *partition < -1:
		return usageErrorf("consume", "--partition %d is negative", *partition)
	case *offset != "" && *partition < 0:
		return usageErrorf("consume", "--offset needs --partition")
	case *offset != "" && *fromBeginning:
		return usageErrorf("consume", "--offset and --from-beginning cannot both be given")
	case *maxMessages < 0:
		return usageErrorf("consume", "--max-messages %d is negative", *maxMessages)
	case *timeout < 0:
		return usageErrorf("consume", "--timeout %v is negative", *timeout)
	}
	level := consumer.ReadUncommitted
	switch *isolation {
	case "read_uncommitted":
	case "read_committed":
		level = consumer.ReadCommitted
	default:
		return usageErrorf("consume", "--isolation-level %q: read_uncommitted or read_committed", *isolation)
	}
	reset := consumer.Latest
	if *fromBeginning {
		reset = consumer.Earliest
	}
	tp := kafka.TopicPartition{Topic: *topic, Partition: int32(*partition)}
	var assign consumer.Option
	switch *offset {
	case "", "latest":
		assign = consumer.Partitions(tp)
	case "earliest":
		assign, reset = consumer.Partitions(tp), consumer.Earliest
	default:
		o, err := strconv.ParseInt(*offset, 10, 64)
		if err != nil || o < 0 {
			return usageErrorf("consume", "--offset %q is not an offset, earliest or latest", *offset)
		}
		assign = consumer.PartitionsAt(map[kafka.TopicPartition]int64{tp: o})
	}
	if *partition < 0 {
		assign = consumer.Topics(*topic)
	}

	n, err := openTarget("consume", where, stderr)
	if err != nil {
		return err
	}
	defer n.close()
	desc, err := describeTopic("consume", n, *topic)
	if err != nil {
		return err
	}
	if *partition >= 0 {
		if err := checkPartition("consume", desc, *partition); err != nil {
			return err
		}
	}
	opts := []consumer.Option{assign, consumer.AutoOffsetReset(reset)}
	opts = append(opts, consumer.Isolation(level))
	if *group != "" {
		// Commit exactly what was printed, not what Poll fetched beyond
		// --max-messages.
		opts = append(opts, consumer.Group(*group), consumer.ClientID("console-consumer"), consumer.DisableAutoCommit())
	}
	groupOpts, err := consumerProperties(consumerProps, *group != "")
	if err != nil {
		return &usageError{command: "consume", err: err}
	}
	opts = append(opts, groupOpts...)
	c, err := consumer.New(n.client(), opts...)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer c.Close()

	ctx, stop := interruptContext(context.Background())
	defer stop()
	wait := *timeout
	if wait == 0 {
		wait = time.Hour // and again, until interrupted
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	prog := newProgress(stderr, "consumed", time.Now())
	var (
		count   int64
		line    []byte
		errs    []error
		printed = map[kafka.TopicPartition]consumer.CommittedOffset{}
	)
	commit := func() {
		if *group == "" || len(printed) == 0 {
			return
		}
		if err := c.CommitOffsets(context.Background(), printed); err != nil {
			errs = append(errs, fmt.Errorf("consume: commit: %w", err))
		}
		clear(printed)
	}
poll:
	for *maxMessages == 0 || count < *maxMessages {
		fetches, err := c.Poll(ctx, wait)
		if err != nil {
			if ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("consume: %w", err))
			}
			break
		}
		if fetches.Empty() {
			if *timeout > 0 {
				break
			}
			continue
		}
		for i := range fetches {
			for j := range fetches[i].Records {
				if *maxMessages > 0 && count == *maxMessages {
					break poll
				}
				r := &fetches[i].Records[j]
				line = format.append(line[:0], r)
				out.Write(line)
				count++
				printed[r.TopicPartition()] = consumer.CommittedOffset{Offset: r.Offset + 1, LeaderEpoch: -1}
			}
		}
		if err := out.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("consume: write output: %w", err))
			break
		}
		commit()
		prog.report(time.Now(), count)
	}
	stop()
	if err := out.Flush(); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("consume: write output: %w", err))
	}
	commit()
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", count)
	if err := c.Close(); err != nil {
		errs = append(errs, fmt.Errorf("consume: %w", err))
	}
	if err := n.close(); err != nil {
		errs = append(errs, fmt.Errorf("consume: %w", err))
	}
	return errors.Join(errs...)
}

// consumerProperties returns the consumer options --consumer-property
// sets; the group ones need a --group.
func consumerProperties(props propertyFlag, grouped bool) ([]consumer.Option, error) {
	var opts []consumer.Option
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		switch k {
		case "group.protocol":
			switch strings.ToLower(v) {
			case "classic":
				opts = append(opts, consumer.GroupProtocol(consumer.ClassicProtocol))
			case "consumer":
				opts = append(opts, consumer.GroupProtocol(consumer.ConsumerProtocol))
			default:
				return nil, fmt.Errorf("--consumer-property group.protocol=%q: classic or consumer", v)
			}
		case "group.remote.assignor":
			opts = append(opts, consumer.GroupRemoteAssignor(v))
		default:
			return nil, fmt.Errorf("--consumer-property %q: partlog's consume takes group.protocol and group.remote.assignor", k)
		}
		if !grouped {
			return nil, fmt.Errorf("--consumer-property %s needs --group", k)
		}
	}
	return opts, nil
}
