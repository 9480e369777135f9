package main

// producer_props.go maps Kafka's producer configs, as perf produce's
// --producer-props takes them, to the producer package's options.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// producerProps are the Kafka producer configs --producer-props maps, each
// to the producer option that is the same knob.
var producerProps = map[string]func(v string) (producer.Option, error){
	"acks": func(v string) (producer.Option, error) {
		var a acksFlag
		if err := a.Set(v); err != nil {
			return nil, err
		}
		return producer.Acks(transport.Acks(a)), nil
	},
	"linger.ms":                             msProp(producer.Linger),
	"batch.size":                            intProp(producer.BatchSize),
	"buffer.memory":                         int64Prop(producer.BufferMemory),
	"max.in.flight.requests.per.connection": intProp(producer.MaxInFlight),
	"max.request.size":                      intProp(producer.MaxRequestSize),
	"retries":                               intProp(producer.Retries),
	"max.block.ms":                          msProp(producer.MaxBlock),
	"retry.backoff.ms":                      msProp(producer.RetryBackoff),
	"delivery.timeout.ms":                   msProp(producer.DeliveryTimeout),
	"request.timeout.ms":                    msProp(producer.RequestTimeout),
	"metadata.max.age.ms":                   msProp(producer.MetadataMaxAge),
	"enable.idempotence": func(v string) (producer.Option, error) {
		switch strings.ToLower(v) {
		case "true":
			return producer.Idempotent(true), nil
		case "false":
			return producer.Idempotent(false), nil
		}
		return nil, fmt.Errorf("not true or false")
	},
	"compression.type": func(v string) (producer.Option, error) {
		for _, c := range []record.Compression{record.None, record.Gzip, record.Snappy, record.LZ4, record.Zstd} {
			if v == c.String() {
				return producer.Compression(c), nil
			}
		}
		return nil, fmt.Errorf("not none, gzip, snappy, lz4 or zstd")
	},
}

// producerPropFlags are the perf produce flags that set the same knob as a
// producer config; giving both is an error.
var producerPropFlags = map[string]string{"acks": "acks", "linger.ms": "linger", "batch.size": "batch-size", "buffer.memory": "buffer-memory"}

// The configs --producer-props takes that are not the producer's: the
// address to reach, and the serializers perf produce's records need.
const (
	bootstrapServersProp = "bootstrap.servers"
	byteArraySerializer  = "org.apache.kafka.common.serialization.ByteArraySerializer"
	keySerializerProp    = "key.serializer"
	valueSerializerProp  = "value.serializer"
)

func intProp(opt func(int) producer.Option) func(string) (producer.Option, error) {
	return func(v string) (producer.Option, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("not an integer")
		}
		return opt(n), nil
	}
}

func int64Prop(opt func(int64) producer.Option) func(string) (producer.Option, error) {
	return func(v string) (producer.Option, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer")
		}
		return opt(n), nil
	}
}

// msProp maps a *.ms config: milliseconds, as Kafka takes them.
func msProp(opt func(time.Duration) producer.Option) func(string) (producer.Option, error) {
	return func(v string) (producer.Option, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > int64(1<<63-1)/int64(time.Millisecond) {
			return nil, fmt.Errorf("not a number of milliseconds")
		}
		return opt(time.Duration(n) * time.Millisecond), nil
	}
}

// parseProducerProps returns the producer options of --producer-props
// settings, and the address bootstrap.servers names ("" for none).
func parseProducerProps(props map[string]string, flagSet func(string) bool) ([]producer.Option, string, error) {
	var opts []producer.Option
	var bootstrap string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		switch k {
		case bootstrapServersProp:
			// The first address: a target is reached through one node,
			// and finds the others from it.
			bootstrap, _, _ = strings.Cut(v, ",")
			continue
		case keySerializerProp, valueSerializerProp:
			if v != byteArraySerializer {
				return nil, "", fmt.Errorf("--producer-props %s=%s: perf produce's records are bytes; only %s serializes them", k, v, byteArraySerializer)
			}
			continue
		}
		parse, ok := producerProps[k]
		if !ok {
			return nil, "", fmt.Errorf("--producer-props %s: not a producer config partlog's producer has; it takes %s, %s, %s and %s",
				k, strings.Join(slices.Sorted(maps.Keys(producerProps)), ", "), bootstrapServersProp, keySerializerProp, valueSerializerProp)
		}
		if f, ok := producerPropFlags[k]; ok && flagSet(f) {
			return nil, "", fmt.Errorf("--%s and --producer-props %s both set %s; give one", f, k, k)
		}
		opt, err := parse(v)
		if err != nil {
			return nil, "", fmt.Errorf("--producer-props %s=%s: %v", k, v, err)
		}
		opts = append(opts, opt)
	}
	return opts, bootstrap, nil
}

// expandMultiValue rewrites "--name a b c" into "--name a --name b
// --name c", so that a flag takes several values after it, as Kafka's
// tools take --producer-props: the arguments after it up to the next one
// that starts with "-".
func expandMultiValue(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a != "-"+name && a != "--"+name {
			continue
		}
		first := true
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			if !first {
				out = append(out, a)
			}
			out = append(out, args[i+1])
			first = false
			i++
		}
	}
	return out
}
