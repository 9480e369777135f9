package replica_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica/replicatest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scripts")

// TestScripts runs the interaction scripts in testdata/scripts, in the
// manner of etcd raft's rafttest: each block is a command, "----", and
// the output it must print. -rewrite writes the output the commands print.
//
// Commands: cluster seed=N replicas=1,2,3 min-isr=M [unclean]
// [alter-delay=T]; produce acks=all|1|0 VALUE...; tick [N]; stabilize;
// status; produces; log NODE; check; crash NODE [keep-unsynced]; restart
// NODE; bounce NODE; wipe NODE; cut-log NODE OFFSET (while down); pause
// NODE; resume NODE; cut FROM TO; partition A B; isolate NODE; heal;
// elect-preferring NODE.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var c *replicatest.Cluster
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		cmd := line
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: %q is not followed by ----", file, i, cmd)
		}
		i++
		var want []string
		for i < len(lines) && lines[i] != "" {
			want = append(want, lines[i])
			i++
		}
		got := runCommand(t, &c, cmd)
		out.WriteString(cmd + "\n----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
		if !*rewrite && !slices.Equal(got, want) {
			t.Fatalf("%s: %s\n got:\n%s\nwant:\n%s", file, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runCommand(t *testing.T, cp **replicatest.Cluster, line string) []string {
	t.Helper()
	f := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%q: bad number %q", line, s)
		}
		return n
	}
	node := func(k int) int32 {
		if len(pos) <= k {
			t.Fatalf("%q: missing node", line)
		}
		return int32(num(pos[k]))
	}
	c := *cp
	if f[0] != "cluster" && c == nil {
		t.Fatalf("%q before cluster", line)
	}
	switch f[0] {
	case "cluster":
		cfg := replicatest.Config{Seed: num(args["seed"]), Options: testOptions(int(num(args["min-isr"])))}
		for _, s := range strings.Split(args["replicas"], ",") {
			cfg.Replicas = append(cfg.Replicas, int32(num(s)))
		}
		if slices.Contains(pos, "unclean") {
			cfg.Unclean = controller.AllowUnclean
		}
		if d, ok := args["alter-delay"]; ok {
			cfg.AlterPartitionDelay = num(d)
		}
		*cp = replicatest.NewCluster(t, cfg)
		(*cp).Stabilize()
		return status(*cp)
	case "produce":
		acks := map[string]kafka.Acks{"all": kafka.AcksAll, "1": kafka.AcksLeader, "0": kafka.AcksNone}[args["acks"]]
		p, err := c.Produce(c.Leader(), acks, pos...)
		if err != nil {
			return []string{"error: " + shortErr(err)}
		}
		return []string{fmt.Sprintf("p%d at offset %d", p.Token, p.BaseOffset)}
	case "tick":
		n := int64(1)
		if len(pos) > 0 {
			n = num(pos[0])
		}
		c.RunTicks(int(n))
		return nil
	case "stabilize":
		c.Stabilize()
		return nil
	case "status":
		return status(c)
	case "produces":
		var out []string
		for _, p := range c.Produced {
			state := "pending"
			switch {
			case p.Acked():
				state = "acked"
			case p.Done:
				state = "failed: " + shortErr(p.Err)
			}
			out = append(out, fmt.Sprintf("p%d %v at %d: %s", p.Token, p.Values, p.BaseOffset, state))
		}
		return out
	case "log":
		n := c.Nodes[node(0)]
		bs, err := replicatest.ReadBatches(n.Log, 0, n.Log.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range bs {
			out = append(out, fmt.Sprintf("%d-%d epoch %d %v", b.BaseOffset, b.LastOffset, b.Epoch, b.Values))
		}
		if len(out) == 0 {
			out = []string{"empty"}
		}
		return out
	case "check":
		c.Check()
		return []string{"ok"}
	case "crash":
		c.Crash(node(0), slices.Contains(pos, "keep-unsynced"))
		return status(c)
	case "restart":
		c.Restart(node(0))
		return status(c)
	case "bounce":
		c.Bounce(node(0))
		return nil
	case "wipe":
		c.Wipe(node(0))
		return nil
	case "cut-log":
		n := c.Nodes[node(0)]
		l, err := log.Open("/data/"+c.TP.String(), log.Options{FS: n.FS, SegmentBytes: 16 << 10, MaxIndexBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateTo(num(pos[1])); err != nil {
			t.Fatal(err)
		}
		l.Close()
		c.ForgetCommitted(num(pos[1]))
		return nil
	case "pause":
		c.Net.Pause(node(0))
		return nil
	case "resume":
		c.Net.Resume(node(0))
		return nil
	case "cut":
		c.Net.Cut(node(0), node(1))
		return nil
	case "partition":
		c.Net.Partition(node(0), node(1))
		return nil
	case "isolate":
		c.Net.Isolate(node(0), c.Cfg.Replicas...)
		return nil
	case "heal":
		c.Net.HealAll()
		return nil
	case "elect-preferring":
		c.ElectPreferring(node(0))
		return status(c)
	}
	t.Fatalf("unknown command %q", line)
	return nil
}

// status prints the controller's state and each node's.
func status(c *replicatest.Cluster) []string {
	s := c.State
	out := []string{fmt.Sprintf("controller: leader %d epoch %d isr %v", s.Leader, s.LeaderEpoch, s.ISR)}
	for _, id := range c.Cfg.Replicas {
		n := c.Nodes[id]
		if !n.Up() {
			out = append(out, fmt.Sprintf("%d: down", id))
			continue
		}
		st := n.Replica.Status()
		out = append(out, fmt.Sprintf("%d: %s epoch %d hw %d leo %d", id, st.Role, st.State.LeaderEpoch, st.HighWatermark, n.Log.LogEndOffset()))
	}
	return out
}

// shortErr is an error's Kafka name, or its text.
func shortErr(err error) string {
	var e *kafka.Error
	for _, k := range []*kafka.Error{kafka.ErrNotEnoughReplicas, kafka.ErrNotLeaderOrFollower, kafka.ErrLeaderNotAvailable} {
		if errorsIs(err, k) {
			e = k
		}
	}
	if e != nil {
		return e.Name
	}
	return err.Error()
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
