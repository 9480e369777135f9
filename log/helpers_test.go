package log_test

import "io/fs"

var errNotExist = fs.ErrNotExist
