package log

import (
	"errors"
	"strings"
	"testing"

	"github.com/partlog/partlog/vfs"
)

func TestCheckpointFormat(t *testing.T) {
	data := formatCheckpoint([][]string{{"study", "0", "42"}, {"study", "1", "7"}})
	if got, want := string(data), "0\n2\nstudy 0 42\nstudy 1 7\n"; got != want {
		t.Fatalf("formatted %q, want %q", got, want)
	}
	entries, err := parseCheckpoint(data, 3)
	if err != nil || len(entries) != 2 || strings.Join(entries[1], " ") != "study 1 7" {
		t.Fatalf("parsed %q, %v", entries, err)
	}
	for _, bad := range []string{"", "0\n", "1\n0\n", "0\n2\na 0 1\n", "0\nx\n", "0\n1\na 0\n", "0\n1\na 0 1 2\n"} {
		if _, err := parseCheckpoint([]byte(bad), 3); !errors.Is(err, ErrBadCheckpoint) {
			t.Errorf("%q: got %v, want ErrBadCheckpoint", bad, err)
		}
	}
}

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"study-0": 10, "study-1": 0, "my-topic-12": 1 << 40}
	if err := writeOffsetCheckpoint(fsys, "/d/cp", want); err != nil {
		t.Fatal(err)
	}
	got, err := readOffsetCheckpoint(fsys, "/d/cp")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	missing, err := readOffsetCheckpoint(fsys, "/d/none")
	if err != nil || len(missing) != 0 {
		t.Fatalf("a missing checkpoint is empty: %v, %v", missing, err)
	}
}

// FuzzCheckpoint feeds arbitrary bytes to the checkpoint parsers (test 32 of
// the reliability plan): they return entries or ErrBadCheckpoint, never
// panic, and whatever parses formats back to the same bytes.
func FuzzCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\nstudy 0 42\nstudy 1 7\n"), 3)
	f.Add([]byte("0\n1\n5 100\n"), 2)
	f.Add([]byte("0\n0\n"), 2)
	f.Add([]byte("0\n1\na 0 -1\n"), 3)
	f.Fuzz(func(t *testing.T, data []byte, fields int) {
		if fields < 1 || fields > 4 {
			return
		}
		entries, err := parseCheckpoint(data, fields)
		if err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("error %v is not ErrBadCheckpoint", err)
			}
			return
		}
		again, err := parseCheckpoint(formatCheckpoint(entries), fields)
		if err != nil || len(again) != len(entries) {
			t.Fatalf("reformatted checkpoint does not parse the same: %v", err)
		}
		fsys := vfs.NewMem()
		fsys.MkdirAll("/d", 0o755)
		w, _ := fsys.Create("/d/leader-epoch-checkpoint")
		w.Write(data)
		w.Close()
		c := newEpochCache(fsys, "/d")
		if ok, _ := c.load(); ok {
			for i := 1; i < len(c.entries); i++ {
				if c.entries[i].Epoch <= c.entries[i-1].Epoch || c.entries[i].StartOffset < c.entries[i-1].StartOffset {
					t.Fatalf("loaded epochs not increasing: %v", c.entries)
				}
			}
		}
		if fields == 3 {
			fsys.Create("/d/x")
			w, _ := fsys.Create("/d/x")
			w.Write(data)
			w.Close()
			if m, err := readOffsetCheckpoint(fsys, "/d/x"); err == nil {
				for k, v := range m {
					if _, ok := ParseTopicPartition(k); !ok || v < 0 {
						t.Fatalf("bad entry %q %d", k, v)
					}
				}
			}
		}
	})
}
