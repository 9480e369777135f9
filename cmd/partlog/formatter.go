package main

// formatter.go holds consume's message formatters, Kafka's
// MessageFormatter classes: DefaultMessageFormatter with its print.*
// properties, and the formatters of __consumer_offsets records.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/group"
)

// A messageFormatter appends a record's output to a buffer, as Kafka's
// MessageFormatter writes it.
type messageFormatter interface {
	append(b []byte, r *consumer.Record) []byte
}

// formatterNames maps the names --formatter takes, Kafka's class names and
// short aliases, to the formatters.
var formatterNames = map[string]string{
	"kafka.tools.DefaultMessageFormatter":                     "default",
	"org.apache.kafka.tools.consumer.DefaultMessageFormatter": "default",
	"default": "default",
	"kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter": "offsets",
	"offsets": "offsets",
	"kafka.coordinator.group.GroupMetadataManager$GroupMetadataMessageFormatter": "group-metadata",
	"group-metadata": "group-metadata",
}

// propertyFlag collects repeated --property key=value flags, keeping the
// value as it is given, spaces included, as Kafka's tools do: a
// key.separator of " = " is three characters.
type propertyFlag map[string]string

func (p propertyFlag) String() string { return configFlag(p).String() }

func (p propertyFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	p[strings.TrimSpace(k)] = v
	return nil
}

// newFormatter returns the formatter that --formatter names, configured
// with the --property settings. The __consumer_offsets formatters take no
// properties: as Kafka's, they ignore them (the names are still checked).
func newFormatter(name string, f *defaultFormatter, props map[string]string, stderr io.Writer) (messageFormatter, error) {
	if err := f.configure(props); err != nil {
		return nil, err
	}
	switch formatterNames[name] {
	case "default":
		return f, nil
	case "offsets":
		return &offsetsFormatter{offsets: true, stderr: stderr}, nil
	case "group-metadata":
		return &offsetsFormatter{groups: true, stderr: stderr}, nil
	}
	return nil, fmt.Errorf("--formatter %q is not one of %s", name, strings.Join(slices.Sorted(maps.Keys(formatterNames)), ", "))
}

// defaultFormatter is Kafka's DefaultMessageFormatter: a line per record
// holding the fields its print.* properties ask for, in this order, each
// followed by key.separator, then the value and line.separator. When
// print.value is false, the last field printed ends the line instead.
type defaultFormatter struct {
	timestamp, partition, offset, delivery, epoch, headers, key bool
	// value is print.value, true unless turned off.
	value bool
	// separator follows each field before the value (key.separator);
	// lineSeparator ends a record (line.separator); headersSeparator is
	// between headers (headers.separator); null is what a null key, value
	// or header value prints as (null.literal).
	separator, lineSeparator, headersSeparator, null []byte
	// utf8 replaces invalid UTF-8 in keys, values and header values, as
	// Kafka's StringDeserializer does, per part: key, value, header.
	utf8Key, utf8Value, utf8Header bool
}

// newDefaultFormatter returns Kafka's DefaultMessageFormatter with its
// defaults: the value alone, a tab between fields, "null" for null.
func newDefaultFormatter() *defaultFormatter {
	return &defaultFormatter{value: true, separator: []byte("\t"), lineSeparator: []byte("\n"),
		headersSeparator: []byte(","), null: []byte(nullLiteral)}
}

// nullLiteral is what a null key, value or header value prints as unless
// null.literal says otherwise.
const nullLiteral = "null"

// formatterProperties are the properties of Kafka's DefaultMessageFormatter,
// as --property takes them.
var formatterProperties = []string{
	"print.timestamp", "print.partition", "print.offset", "print.delivery", "print.epoch", "print.headers",
	"print.key", "print.value", "key.separator", "line.separator", "headers.separator", "null.literal",
	"key.deserializer", "value.deserializer", "headers.deserializer",
}

// The deserializers a *.deserializer property may name: consume prints
// bytes as they are (ByteArrayDeserializer) or as UTF-8 text
// (StringDeserializer, which replaces invalid UTF-8).
const (
	byteArrayDeserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
	stringDeserializer    = "org.apache.kafka.common.serialization.StringDeserializer"
)

// configure applies --property settings, as Kafka's
// DefaultMessageFormatter.configure does. An unknown property or a value
// that is not true or false where one is wanted is an error.
func (f *defaultFormatter) configure(props map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		var b *bool
		switch k {
		case "print.timestamp":
			b = &f.timestamp
		case "print.partition":
			b = &f.partition
		case "print.offset":
			b = &f.offset
		case "print.delivery":
			b = &f.delivery
		case "print.epoch":
			b = &f.epoch
		case "print.headers":
			b = &f.headers
		case "print.key":
			b = &f.key
		case "print.value":
			b = &f.value
		case "key.separator":
			f.separator = []byte(v)
		case "line.separator":
			f.lineSeparator = []byte(v)
		case "headers.separator":
			f.headersSeparator = []byte(v)
		case "null.literal":
			f.null = []byte(v)
		case "key.deserializer", "value.deserializer", "headers.deserializer":
			if v != byteArrayDeserializer && v != stringDeserializer {
				return fmt.Errorf("--property %s=%s: consume prints bytes as they are (%s) or as UTF-8 (%s), no other deserializer",
					k, v, byteArrayDeserializer, stringDeserializer)
			}
			utf8 := v == stringDeserializer
			switch k {
			case "key.deserializer":
				f.utf8Key = utf8
			case "value.deserializer":
				f.utf8Value = utf8
			default:
				f.utf8Header = utf8
			}
		default:
			return fmt.Errorf("unknown --property %q; consume knows %s", k, strings.Join(formatterProperties, ", "))
		}
		if b != nil {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				*b = true
			case "false":
				*b = false
			default:
				return fmt.Errorf("--property %s=%s: not true or false", k, v)
			}
		}
	}
	return nil
}

// append appends r's line to b: DefaultMessageFormatter.writeTo.
func (f *defaultFormatter) append(b []byte, r *consumer.Record) []byte {
	// fields counts the fields still to print after the current one, so
	// that each is followed by key.separator, and the last by
	// line.separator.
	more := func(after ...bool) []byte {
		for _, m := range after {
			if m {
				return f.separator
			}
		}
		return f.lineSeparator
	}
	if f.timestamp {
		b = append(b, r.TimestampType.String()...)
		b = append(b, ':')
		b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
		b = append(b, more(f.partition, f.offset, f.delivery, f.epoch, f.headers, f.key, f.value)...)
	}
	if f.partition {
		b = append(b, "Partition:"...)
		b = strconv.AppendInt(b, int64(r.Partition), 10)
		b = append(b, more(f.offset, f.delivery, f.epoch, f.headers, f.key, f.value)...)
	}
	if f.offset {
		b = append(b, "Offset:"...)
		b = strconv.AppendInt(b, r.Offset, 10)
		b = append(b, more(f.delivery, f.epoch, f.headers, f.key, f.value)...)
	}
	if f.delivery {
		// The delivery count of a share group's record; a consumer
		// group's records have none.
		b = append(b, "Delivery:NOT_PRESENT"...)
		b = append(b, more(f.epoch, f.headers, f.key, f.value)...)
	}
	if f.epoch {
		b = append(b, "Epoch:"...)
		if r.LeaderEpoch >= 0 {
			b = strconv.AppendInt(b, int64(r.LeaderEpoch), 10)
		} else {
			b = append(b, "NOT_PRESENT"...)
		}
		b = append(b, more(f.headers, f.key, f.value)...)
	}
	if f.headers {
		if len(r.Headers) == 0 {
			b = append(b, "NO_HEADERS"...)
		}
		for i, h := range r.Headers {
			if i > 0 {
				b = append(b, f.headersSeparator...)
			}
			b = append(b, h.Key...)
			b = append(b, ':')
			b = f.appendBytes(b, h.Value, f.utf8Header)
		}
		b = append(b, more(f.key, f.value)...)
	}
	if f.key {
		b = f.appendBytes(b, r.Key, f.utf8Key)
		b = append(b, more(f.value)...)
	}
	if f.value {
		b = f.appendBytes(b, r.Value, f.utf8Value)
		b = append(b, f.lineSeparator...)
	}
	return b
}

// appendBytes appends v, or null.literal when v is null.
func (f *defaultFormatter) appendBytes(b, v []byte, utf8 bool) []byte {
	switch {
	case v == nil:
		return append(b, f.null...)
	case utf8:
		return append(b, utf8String(v)...)
	}
	return append(b, v...)
}

// offsetsFormatter prints records of __consumer_offsets as Kafka's
// GroupMetadataManager formatters do: OffsetsMessageFormatter prints the
// committed offsets (offsets), GroupMetadataMessageFormatter the groups'
// metadata (groups), and each skips the other's records.
type offsetsFormatter struct {
	offsets, groups bool
	stderr          io.Writer // for records that do not decode
}

func (f *offsetsFormatter) append(b []byte, r *consumer.Record) []byte {
	if r.Key == nil {
		return b // as Kafka's formatters skip a record without a key
	}
	rec, err := decodeOffsetsRecord(r.Key, r.Value)
	if errors.Is(err, group.ErrUnknownVersion) {
		return b // a record of a kind Kafka's formatters do not print either
	}
	if err != nil {
		fmt.Fprintf(f.stderr, "partlog: consume: %s-%d offset %d: cannot decode it: %v\n", r.Topic, r.Partition, r.Offset, err)
		return b
	}
	switch {
	case rec.key.IsGroup() && f.groups:
		b = rec.appendGroupMetadata(b)
	case !rec.key.IsGroup() && f.offsets:
		b = rec.appendOffsetAndMetadata(b)
	default:
		return b
	}
	return append(b, '\n')
}
