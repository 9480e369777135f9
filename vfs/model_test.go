package vfs_test

import (
	"bytes"
	"math/rand/v2"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/vfs"
)

// fileModel is the obvious, slow model of one file's page cache and disk:
// a dirty flag per byte and a full copy of the disk.
type fileModel struct {
	cur   []byte
	dirty []bool
	disk  []byte
}

func (m *fileModel) writeAt(p []byte, off int) {
	if len(p) == 0 {
		return // like pwrite, an empty write does not extend the file
	}
	if end := off + len(p); end > len(m.cur) {
		m.truncate(end)
	}
	copy(m.cur[off:], p)
	for i := range p {
		m.dirty[off+i] = true
	}
}

func (m *fileModel) truncate(size int) {
	for len(m.cur) < size {
		m.cur = append(m.cur, 0)
		m.dirty = append(m.dirty, true)
	}
	m.cur, m.dirty = m.cur[:size], m.dirty[:size]
}

func (m *fileModel) sync(ok bool) {
	if ok {
		disk := make([]byte, len(m.cur))
		for i := range disk {
			switch {
			case m.dirty[i]:
				disk[i] = m.cur[i]
			case i < len(m.disk):
				disk[i] = m.disk[i]
			}
		}
		m.disk = disk
	}
	clear(m.dirty)
}

// TestMemMatchesModel runs random writes, truncates, syncs and failed syncs
// on a MemFS file and on fileModel, and checks after each step that reads,
// and crash clones under each policy, agree with the model.
func TestMemMatchesModel(t *testing.T) {
	for round := range int64(40) {
		rng := rand.New(rand.NewPCG(uint64(round), 0))
		mem := newDurableDir(t)
		failSync := false
		fsys := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Kind == vfs.OpSync && failSync {
				return errIO
			}
			return nil
		}))
		f, err := fsys.Create("/d/f")
		require.NoError(t, err)
		require.NoError(t, fsys.SyncDir("/d"))
		model := &fileModel{}

		for step := range 150 {
			size := len(model.cur)
			switch op := rng.IntN(10); {
			case op < 4: // write somewhere, possibly past the end
				p := make([]byte, rng.IntN(300))
				for i := range p {
					p[i] = byte('a' + rng.IntN(26))
				}
				off := rng.IntN(size + 100)
				_, err := f.WriteAt(p, int64(off))
				require.NoError(t, err)
				model.writeAt(p, off)
			case op < 5:
				n := rng.IntN(size + 200)
				require.NoError(t, f.Truncate(int64(n)))
				model.truncate(n)
			case op < 6:
				n := rng.IntN(size + 200)
				require.NoError(t, f.Preallocate(int64(n)))
				model.truncate(max(n, size))
			default:
				failSync = rng.IntN(4) == 0
				err := f.Sync()
				require.Equal(t, failSync, err != nil)
				model.sync(!failSync)
			}

			where := func(what string) []any { return []any{"round %d step %d: %s", round, step, what} }
			require.Equal(t, string(model.cur), readFile(t, mem, "/d/f"), where("read")...)
			require.Equal(t, string(model.disk), readFile(t, mem.CrashClone(keepNone), "/d/f"), where("KeepNone")...)
			require.Equal(t, string(model.cur), readFile(t, mem.CrashClone(keepAll), "/d/f"), where("KeepAll")...)

			got := []byte(readFile(t, mem.CrashClone(vfs.CrashOptions{Seed: int64(step), KeepUnsynced: vfs.KeepRandomPrefix}), "/d/f"))
			require.GreaterOrEqual(t, len(got), len(model.disk), where("KeepRandomPrefix")...)
			require.LessOrEqual(t, len(got), max(len(model.disk), len(model.cur)), where("KeepRandomPrefix")...)
			want := bytes.Clone(model.disk)
			for i := len(model.disk); i < len(got); i++ {
				if model.dirty[i] {
					want = append(want, model.cur[i])
				} else {
					want = append(want, 0) // lost by a failed sync
				}
			}
			require.Equal(t, string(want), string(got), where("KeepRandomPrefix")...)
		}
	}
}

// TestMemDirectoriesMatchModel runs random creates, removes, renames and
// directory syncs over two directories and checks that KeepNone keeps
// exactly the entries each directory's last SyncDir saw and KeepAll keeps
// the current ones.
func TestMemDirectoriesMatchModel(t *testing.T) {
	type inode struct{ data string } // files are synced: contents are durable
	dirs := []string{"/d", "/e"}
	names := []string{"a", "b", "c"}
	flatten := func(entries ...map[string]*inode) map[string]string {
		out := map[string]string{"/d": "dir", "/e": "dir"}
		for _, e := range entries {
			for p, n := range e {
				out[p] = n.data
			}
		}
		return out
	}
	for round := range int64(20) {
		rng := rand.New(rand.NewPCG(uint64(round), 1))
		mem := vfs.NewMem()
		cur := map[string]*inode{}
		durable := map[string]map[string]*inode{"/d": {}, "/e": {}}
		for _, d := range dirs {
			require.NoError(t, mem.MkdirAll(d, 0o755))
		}
		require.NoError(t, mem.SyncDir("/"))
		pick := func() string { return dirs[rng.IntN(2)] + "/" + names[rng.IntN(3)] }
		for step := range 100 {
			switch op := rng.IntN(4); op {
			case 0:
				p := pick()
				data := string(rune('A' + step%26))
				writeFile(t, mem, p, data) // Create reuses an existing inode
				if n := cur[p]; n != nil {
					n.data = data
				} else {
					cur[p] = &inode{data}
				}
			case 1:
				p := pick()
				err := mem.Remove(p)
				if _, ok := cur[p]; ok {
					require.NoError(t, err)
					delete(cur, p)
				} else {
					require.Error(t, err)
				}
			case 2:
				from, to := pick(), pick()
				err := mem.Rename(from, to)
				if n, ok := cur[from]; ok {
					require.NoError(t, err)
					delete(cur, from)
					cur[to] = n
				} else {
					require.Error(t, err)
				}
			case 3:
				d := dirs[rng.IntN(2)]
				require.NoError(t, mem.SyncDir(d))
				clear(durable[d])
				for p, n := range cur {
					if path.Dir(p) == d {
						durable[d][p] = n
					}
				}
			}
			require.Equal(t, flatten(durable["/d"], durable["/e"]), dump(t, mem.CrashClone(keepNone)), "round %d step %d", round, step)
			require.Equal(t, flatten(cur), dump(t, mem.CrashClone(keepAll)), "round %d step %d", round, step)
		}
	}
}
