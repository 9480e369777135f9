package vfs

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
)

// ShortWrite returns a fault for an Injector to return. On an OpWrite it
// makes the write put the first n bytes of its data in the file (all of it
// if shorter) and then return n and err; err nil means io.ErrShortWrite. On
// any other operation it is just err. errors.Is(ShortWrite(n, err), err)
// holds.
func ShortWrite(n int, err error) error {
	return &shortWriteError{n: n, err: err}
}

type shortWriteError struct {
	n   int
	err error
}

func (e *shortWriteError) cause() error {
	if e.err == nil {
		return io.ErrShortWrite
	}
	return e.err
}

func (e *shortWriteError) Error() string {
	return fmt.Sprintf("short write of %d bytes: %v", e.n, e.cause())
}

func (e *shortWriteError) Unwrap() error { return e.cause() }

// plain returns the error a fault stands for on an operation other than a
// write.
func plain(err error) error {
	var sw *shortWriteError
	if errors.As(err, &sw) {
		return sw.cause()
	}
	return err
}

// FailOn returns an Injector that fails operations of the given kind whose
// path matches pathGlob, returning err.
//
// With nth >= 0 it fails once: the nth matching operation, counting from 0,
// so FailOn(OpSync, "*.log", 0, eio) fails the first sync of a .log file
// and no other. With nth < 0 it fails every matching operation.
//
// pathGlob is a path.Match pattern. A pattern holding a slash is matched
// against the whole path, cleaned; one without is matched against the last
// element, so "*.log" matches "/data/0.log". An empty pattern matches every
// path. FailOn panics on a malformed pattern.
func FailOn(kind OpKind, pathGlob string, nth int, err error) Injector {
	if _, perr := path.Match(pathGlob, ""); perr != nil {
		panic(fmt.Sprintf("vfs: FailOn: bad pattern %q: %v", pathGlob, perr))
	}
	var (
		mu   sync.Mutex
		seen int
	)
	return InjectorFunc(func(op Op) error {
		if op.Kind != kind || !matchPath(pathGlob, op.Path) {
			return nil
		}
		if nth < 0 {
			return err
		}
		mu.Lock()
		i := seen
		seen++
		mu.Unlock()
		if i == nth {
			return err
		}
		return nil
	})
}

func matchPath(glob, name string) bool {
	if glob == "" {
		return true
	}
	if strings.Contains(glob, "/") {
		name = path.Clean(name)
	} else {
		name = path.Base(name)
	}
	ok, _ := path.Match(glob, name)
	return ok
}

// FailAt returns an Injector that fails the operation whose Seq is seq, of
// any kind, and no other. Running a workload once and then once for each
// seq below FaultFS.Ops enumerates every single failure.
func FailAt(seq int64, err error) Injector {
	return InjectorFunc(func(op Op) error {
		if op.Seq == seq {
			return err
		}
		return nil
	})
}

// FailFrom returns an Injector that fails every operation from Seq seq on:
// a disk that dies at that point. Combined with MemFS.CrashClone it models
// a crash just before operation seq.
func FailFrom(seq int64, err error) Injector {
	return InjectorFunc(func(op Op) error {
		if op.Seq >= seq {
			return err
		}
		return nil
	})
}

// Once returns an Injector that fails as inj does until inj has failed one
// operation, and then never again.
func Once(inj Injector) Injector {
	var (
		mu    sync.Mutex
		fired bool
	)
	return InjectorFunc(func(op Op) error {
		mu.Lock()
		defer mu.Unlock()
		if fired {
			return nil
		}
		err := inj.Inject(op)
		fired = err != nil
		return err
	})
}

// Any returns an Injector that asks each of injs, in order, about every
// operation and returns the first error. Every injector is asked even after
// one has failed the operation, so each counts the same operations whatever
// the others do.
func Any(injs ...Injector) Injector {
	return InjectorFunc(func(op Op) error {
		var first error
		for _, inj := range injs {
			if err := inj.Inject(op); err != nil && first == nil {
				first = err
			}
		}
		return first
	})
}
