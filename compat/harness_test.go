package compat

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	clientsFlag = flag.String("compat.clients", "", "the clients to run, comma-separated (kcat,confluent,sarama,kgo,kafkajs); all by default")
	targetsFlag = flag.String("compat.targets", "", "the targets to run against, comma-separated (single,cluster,sasl_ssl); all by default")
	checksFlag  = flag.String("compat.checks", "", "the checks to run, comma-separated ids (see allChecks); all by default")
	logLevel    = flag.String("compat.log-level", "warn", "the partlog processes' --log-level; their standard error is shown when the test fails")
)

// outcome is a cell of the result table.
type outcome int

const (
	pass outcome = iota
	fail
	notAvailable // the client has no such call
	notRun       // the check does not apply to the target (a leader kill on a single node)
)

func (o outcome) String() string {
	return [...]string{"PASS", "FAIL", "N/A", "—"}[o]
}

// naError says that a client has no call for what a check needs: the
// check's cell is N/A rather than FAIL.
type naError struct{ reason string }

func (e *naError) Error() string { return e.reason }

// na returns a naError.
func na(format string, args ...any) error { return &naError{fmt.Sprintf(format, args...)} }

// check is one row of the table: a behaviour every client is held to.
type check struct {
	id   string // for -compat.checks and the result lines
	name string // the row's label in the table
	// timeout bounds one run of the check for one client and target.
	timeout time.Duration
	// clusterOnly checks need more than one node.
	clusterOnly bool
	// secureOnly checks need a target whose listeners are SASL_SSL ones.
	secureOnly bool
	// disruptive checks kill or restart nodes: they run one at a time,
	// after every other check, with nothing else running.
	disruptive bool
	run        func(ctx context.Context, x *run) error
}

// run is one check's run for one client against one target.
type run struct {
	t       *testing.T
	d       driver
	tg      *target
	checkID string
}

// topic returns a new topic name for this run.
func (x *run) topic() string { return x.tg.newTopicName(x.d.name(), x.checkID) }

// result is one cell's outcome and, for FAIL and N/A, why.
type result struct {
	client, target, check string
	outcome               outcome
	reason                string
	took                  time.Duration
}

// results collects the cells as checks finish, from several goroutines.
type results struct {
	mu    sync.Mutex
	cells map[[3]string]result // client, target, check
}

func (rs *results) add(r result) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.cells[[3]string{r.client, r.target, r.check}] = r
}

// TestCompatibility runs every selected client's checks against every
// selected target, prints a line per cell and the Markdown tables, and
// fails if any cell is FAIL.
func TestCompatibility(t *testing.T) {
	drivers := selectDrivers(t)
	checks := selectChecks(t)
	targetNames := selectTargets(t)
	start := time.Now()
	bin := buildPartlog(t)
	var targets []*target
	for _, name := range targetNames {
		switch name {
		case "single":
			targets = append(targets, startSingle(t, bin))
		case "cluster":
			targets = append(targets, startCluster(t, bin))
		case "sasl_ssl":
			targets = append(targets, startSASLSSL(t, bin))
		}
	}
	t.Logf("partlog built and started in %v", time.Since(start).Round(time.Millisecond))

	rs := &results{cells: map[[3]string]result{}}
	// First every check that leaves the nodes alone, the clients side by
	// side, each client's checks in turn; then the disruptive ones, one at
	// a time.
	var wg sync.WaitGroup
	for _, d := range drivers {
		wg.Go(func() {
			for _, tg := range targets {
				for _, c := range checks {
					if !c.disruptive {
						runCheck(t, rs, d, tg, c)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, tg := range targets {
		for _, c := range checks {
			if c.disruptive {
				for _, d := range drivers {
					runCheck(t, rs, d, tg, c)
				}
			}
		}
	}
	t.Logf("the checks took %v", time.Since(start).Round(time.Millisecond))

	report := rs.report(drivers, targetNames, checks)
	fmt.Print(report)
	for _, r := range rs.cells {
		if r.outcome == fail {
			t.Fail()
		}
	}
}

// runCheck runs c for d against tg, within c's timeout, and records the
// cell.
func runCheck(t *testing.T, rs *results, d driver, tg *target, c check) {
	r := result{client: d.name(), target: tg.name, check: c.id}
	if c.clusterOnly && len(tg.nodes) == 1 || c.secureOnly && tg.sec == nil {
		r.outcome = notRun
		rs.add(r)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	err := c.run(ctx, &run{t: t, d: d, tg: tg, checkID: c.id})
	r.took = time.Since(start)
	var nae *naError
	switch {
	case err == nil:
		r.outcome = pass
	case errors.As(err, &nae):
		r.outcome, r.reason = notAvailable, nae.reason
	default:
		r.outcome, r.reason = fail, err.Error()
		if ctx.Err() != nil {
			r.reason = fmt.Sprintf("timed out after %v: %s", c.timeout, r.reason)
		}
	}
	t.Logf("%-4s %-9s %-7s %-26s %6.1fs %s", r.outcome, r.client, r.target, r.check, r.took.Seconds(), firstLine(r.reason))
	if r.outcome == fail && strings.Contains(r.reason, "\n") {
		t.Logf("     %s", strings.ReplaceAll(r.reason, "\n", "\n     "))
	}
	rs.add(r)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// report returns the result lines, one per client, check and target, and
// a Markdown table per target.
func (rs *results) report(drivers []driver, targets []string, checks []check) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var b strings.Builder
	b.WriteString("\n=== Kafka client compatibility: one line per client, check and target\n")
	for _, d := range drivers {
		for _, c := range checks {
			for _, tg := range targets {
				r, ok := rs.cells[[3]string{d.name(), tg, c.id}]
				if !ok || r.outcome == notRun {
					continue
				}
				fmt.Fprintf(&b, "%-4s %-9s %-26s %-7s %s\n", r.outcome, d.name(), c.id, tg, firstLine(r.reason))
			}
		}
	}
	for _, tg := range targets {
		fmt.Fprintf(&b, "\n%s\n\n", map[string]string{"single": "Single node (`partlog serve`):",
			"cluster":  "Three-node cluster (`partlog controller` + 3 × `partlog serve --controller`, RF 3, min.insync.replicas=2):",
			"sasl_ssl": "Single node on a SASL_SSL listener that requires client certificates and SCRAM-SHA-512 (`partlog serve --listen SASL_SSL://... --ssl-client-auth required --sasl-users ...`), each client with its own certificate and password:"}[tg])
		b.WriteString("| check |")
		for _, d := range drivers {
			fmt.Fprintf(&b, " %s |", d.label())
		}
		b.WriteString("\n|---|")
		b.WriteString(strings.Repeat("---|", len(drivers)))
		b.WriteString("\n")
		for _, c := range checks {
			fmt.Fprintf(&b, "| %s |", c.name)
			for _, d := range drivers {
				r, ok := rs.cells[[3]string{d.name(), tg, c.id}]
				cell := "—"
				if ok {
					cell = r.outcome.String()
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
			b.WriteString("\n")
		}
	}
	var counts [4]int
	for _, r := range rs.cells {
		counts[r.outcome]++
	}
	fmt.Fprintf(&b, "\n%d cells: %d PASS, %d FAIL, %d N/A\n", len(rs.cells)-counts[notRun], counts[pass], counts[fail], counts[notAvailable])
	return b.String()
}

// allDrivers returns every client, in the table's column order.
func allDrivers() []driver {
	return []driver{kcatDriver{}, confluentDriver(), saramaDriver{}, kgoDriver{}, kafkajsDriver()}
}

// selectDrivers returns the drivers -compat.clients names, all by default.
func selectDrivers(t *testing.T) []driver {
	all := allDrivers()
	if *clientsFlag == "" {
		return all
	}
	var out []driver
	for _, name := range strings.Split(*clientsFlag, ",") {
		i := slices.IndexFunc(all, func(d driver) bool { return d.name() == name })
		if i < 0 {
			t.Fatalf("-compat.clients: no client %q", name)
		}
		out = append(out, all[i])
	}
	return out
}

// selectTargets returns the targets -compat.targets names, both by default.
func selectTargets(t *testing.T) []string {
	if *targetsFlag == "" {
		return []string{"single", "cluster", "sasl_ssl"}
	}
	names := strings.Split(*targetsFlag, ",")
	for _, n := range names {
		if n != "single" && n != "cluster" && n != "sasl_ssl" {
			t.Fatalf("-compat.targets: no target %q (single, cluster, sasl_ssl)", n)
		}
	}
	return names
}

// selectChecks returns the checks -compat.checks names, all by default.
func selectChecks(t *testing.T) []check {
	all := allChecks()
	if *checksFlag == "" {
		return all
	}
	var out []check
	for _, id := range strings.Split(*checksFlag, ",") {
		i := slices.IndexFunc(all, func(c check) bool { return c.id == id })
		if i < 0 {
			t.Fatalf("-compat.checks: no check %q", id)
		}
		out = append(out, all[i])
	}
	return out
}
