package vfs_test

import (
	"fmt"
	"io"
	"syscall"

	"github.com/partlog/partlog/vfs"
)

// A crash keeps what was synced: the file's bytes up to its last Sync, and
// the directory entries up to the last SyncDir.
func ExampleMemFS_CrashClone() {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/data", 0o755)
	fsys.SyncDir("/") // makes /data itself durable

	f, _ := fsys.Create("/data/00000000000000000000.log")
	fsys.SyncDir("/data") // makes the new file's name durable
	f.Write([]byte("batch 0;"))
	f.Sync()
	f.Write([]byte("batch 1;")) // not synced

	f2, _ := fsys.Create("/data/orphan.log")
	f2.Write([]byte("synced, but its name is not"))
	f2.Sync()

	for _, keep := range []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepAll} {
		after := fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: keep})
		names, _ := after.List("/data")
		log, _ := after.Open("/data/00000000000000000000.log")
		data, _ := io.ReadAll(log)
		fmt.Printf("%v: %v %q\n", keep, names, data)
	}
	// Output:
	// KeepNone: [00000000000000000000.log] "batch 0;"
	// KeepAll: [00000000000000000000.log orphan.log] "batch 0;batch 1;"
}

// WithFaults fails chosen operations: here the second sync of any .log
// file, with EIO.
func ExampleWithFaults() {
	mem := vfs.NewMem()
	fsys := vfs.WithFaults(mem, vfs.FailOn(vfs.OpSync, "*.log", 1, syscall.EIO))

	f, _ := fsys.Create("/0.log")
	fsys.SyncDir("/")
	for i := range 3 {
		f.Write([]byte{'a' + byte(i)})
		fmt.Println("sync:", f.Sync())
	}
	// The failed sync lost "b" for good: the retry did not write it.
	after := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	log, _ := after.Open("/0.log")
	data, _ := io.ReadAll(log)
	fmt.Printf("%q after %d ops\n", data, fsys.Ops())
	// Output:
	// sync: <nil>
	// sync: input/output error
	// sync: <nil>
	// "a\x00c" after 8 ops
}
