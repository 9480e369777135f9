package index_test

import (
	"fmt"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/vfs"
)

// A lookup finds the greatest entry at or below the target offset.
func ExampleOffsetIndex_Lookup() {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/d", 0o755)
	idx, _ := index.OpenOffsetIndex(fsys, "/d/00000000000000000100.index", 100, 4096)
	defer idx.Close()
	idx.Append(109, 4150) // the batch ending at offset 109 starts at byte 4150
	idx.Append(131, 8420)
	fmt.Println(idx.Lookup(105), idx.Lookup(120), idx.Lookup(200))
	// Output: {100 0} {109 4150} {131 8420}
}
