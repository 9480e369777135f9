package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
)

const perfHelp = `Usage: partlog perf <produce|consume> --dir DIR --topic TOPIC [flags]

Perf measures how fast a data directory takes and gives records, with the
producer or consumer in this process, as Kafka's kafka-producer-perf-test.sh
and kafka-consumer-perf-test.sh measure a cluster, and prints what they
print:

  partlog perf produce --dir D --topic T --num-records N
      (--record-size S | --payload-file F [--payload-delimiter D])
      [--acks A] [--batch-size B] [--linger DUR] [--throughput R]
      [--producer-props k=v...] [--partitions P] [--config k=v]...
      [--transactional-id ID] [--transaction-duration-ms DUR]
  partlog perf consume --dir D --topic T --messages N [--fetch-size B]
      [--timeout DUR] [--from-latest]

Run 'partlog help perf produce' or 'partlog help perf consume' for more.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// runPerf runs "partlog perf": its first argument names the subcommand.
func runPerf(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("perf", "say produce or consume")
	}
	switch args[0] {
	case "produce":
		return runPerfProduce(args[1:], stdout, stderr)
	case "consume":
		return runPerfConsume(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, perfHelp)
		return flag.ErrHelp
	}
	if strings.HasPrefix(args[0], "-") {
		return usageErrorf("perf", "say produce or consume before the flags, not %s", args[0])
	}
	return usageErrorf("perf", "unknown subcommand %q; say produce or consume", args[0])
}

// cpuProfileFlag adds --cpuprofile to a perf command.
func cpuProfileFlag(fs *flag.FlagSet) *string {
	return fs.String("cpuprofile", "", "write a CPU profile of the run to `file`, for 'go tool pprof'")
}

// startCPUProfile starts a CPU profile into path, if given, and returns
// the function that stops it.
func startCPUProfile(command, path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
