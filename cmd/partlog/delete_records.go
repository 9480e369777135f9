package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

const deleteRecordsHelp = `Usage: partlog delete-records --dir DIR --offset-json-file FILE
       partlog delete-records --dir DIR --topic T [--partition P] --offset O

Delete-records deletes the records of partitions below an offset, as
Kafka's kafka-delete-records.sh does: each partition's log start offset
(its low watermark) moves up to the offset, consumers no longer read the
records below it, and the segments wholly below it are removed. An offset
of -1 is the partition's high watermark: every record it holds. An offset
above the high watermark is refused.

The partitions and offsets are those of --offset-json-file, in Kafka's
format:

  {"partitions": [{"topic": "t", "partition": 0, "offset": 3}], "version": 1}

or --topic, --partition and --offset name one partition (every partition
of the topic without --partition). The output is kafka-delete-records.sh's,
a line for each partition:

  Executing records delete operation
  Records delete operation completed:
  partition: t-0	low_watermark: 3

or "error: ..." in place of its low watermark; the command then fails.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' serves over TCP; on a cluster each partition's part goes to
its leader.
`

// runDeleteRecords runs "partlog delete-records".
func runDeleteRecords(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("delete-records")
	where := addTargetFlags(fs)
	jsonFile := fs.String("offset-json-file", "", "a JSON `file` of the partitions and the offsets to delete their records below, in Kafka's format")
	topic := fs.String("topic", "", "the `topic` whose records to delete, instead of --offset-json-file")
	partition := fs.Int("partition", 0, "with --topic, the `partition` whose records to delete; every partition when not given")
	offset := fs.Int64("offset", 0, "with --topic, the `offset` below which to delete the records; -1 is the high watermark")
	operands, err := parseFlags(fs, args, deleteRecordsHelp, stdout)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return usageErrorf("delete-records", "unexpected argument %q", operands[0])
	}
	var parts []transport.DeleteRecordsPartition
	switch {
	case *jsonFile != "" && (*topic != "" || isSet(fs, "partition") || isSet(fs, "offset")):
		return usageErrorf("delete-records", "give --offset-json-file or --topic, --partition and --offset, not both")
	case *jsonFile != "":
		data, err := os.ReadFile(*jsonFile)
		if err != nil {
			return fmt.Errorf("delete-records: %w", err)
		}
		if parts, err = parseDeleteRecordsJSON(data); err != nil {
			return fmt.Errorf("delete-records: %s: %w", *jsonFile, err)
		}
	case *topic == "":
		return usageErrorf("delete-records", "give --offset-json-file, or --topic and --offset")
	case !isSet(fs, "offset"):
		return usageErrorf("delete-records", "--topic needs --offset (-1 for the high watermark)")
	case *offset < -1:
		return usageErrorf("delete-records", "--offset %d is not an offset, or -1 for the high watermark", *offset)
	}
	t, err := openTarget("delete-records", where, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	if *topic != "" {
		d, err := describeTopic("delete-records", t, *topic)
		if err != nil {
			return err
		}
		if isSet(fs, "partition") {
			if err := checkPartition("delete-records", d, *partition); err != nil {
				return err
			}
			parts = append(parts, deleteRecordsPartition(*topic, int32(*partition), *offset))
		} else {
			for _, p := range d.Partitions {
				parts = append(parts, deleteRecordsPartition(*topic, p.Partition, *offset))
			}
		}
	}
	fmt.Fprintln(stdout, "Executing records delete operation")
	resp, err := t.deleteRecords(context.Background(), &transport.DeleteRecordsRequest{Partitions: parts})
	if err != nil {
		return fmt.Errorf("delete-records: %s", serverMessage(err))
	}
	fmt.Fprintln(stdout, "Records delete operation completed:")
	failed := 0
	for _, r := range resp.Partitions {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "partition: %s-%d\terror: %s\n", r.Topic, r.Partition, serverMessage(r.Err))
			continue
		}
		fmt.Fprintf(stdout, "partition: %s-%d\tlow_watermark: %d\n", r.Topic, r.Partition, r.LowWatermark)
	}
	if failed > 0 {
		return fmt.Errorf("delete-records: %d of %d partitions failed", failed, len(resp.Partitions))
	}
	return t.close()
}

func deleteRecordsPartition(topic string, partition int32, offset int64) transport.DeleteRecordsPartition {
	return transport.DeleteRecordsPartition{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: partition}, Offset: offset}
}

// deleteRecordsJSON is kafka-delete-records.sh's --offset-json-file.
type deleteRecordsJSON struct {
	Version    *int `json:"version"`
	Partitions *[]struct {
		Topic     *string `json:"topic"`
		Partition *int32  `json:"partition"`
		Offset    *int64  `json:"offset"`
	} `json:"partitions"`
}

// parseDeleteRecordsJSON reads an --offset-json-file as Kafka reads it:
// version 1 (the default), a partitions array whose entries each have a
// topic, a partition and an offset, no partition twice.
func parseDeleteRecordsJSON(data []byte) ([]transport.DeleteRecordsPartition, error) {
	var doc deleteRecordsJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, fmt.Errorf("version %d is not supported: only 1 is", *doc.Version)
	}
	if doc.Partitions == nil {
		return nil, errors.New(`no "partitions" field`)
	}
	var parts []transport.DeleteRecordsPartition
	seen := map[kafka.TopicPartition]bool{}
	var dups []string
	for i, p := range *doc.Partitions {
		if p.Topic == nil || p.Partition == nil || p.Offset == nil {
			return nil, fmt.Errorf(`partitions[%d] needs "topic", "partition" and "offset"`, i)
		}
		if *p.Offset < -1 {
			return nil, fmt.Errorf("partitions[%d]: offset %d is not an offset, or -1 for the high watermark", i, *p.Offset)
		}
		dp := deleteRecordsPartition(*p.Topic, *p.Partition, *p.Offset)
		if seen[dp.TopicPartition] {
			dups = append(dups, fmt.Sprintf("%s-%d", dp.Topic, dp.Partition))
		}
		seen[dp.TopicPartition] = true
		parts = append(parts, dp)
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("the file names partitions more than once: %s", strings.Join(dups, ","))
	}
	if len(parts) == 0 {
		return nil, errors.New("no partitions")
	}
	return parts, nil
}
