package kread_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/partlog/partlog/internal/kread"
)

var errCorrupt = errors.New("test: corrupt")

// A read past the end fails as the caller's sentinel, every later read
// returns zero, and Done reports the first failure; bytes left over are a
// failure too.
func TestReader(t *testing.T) {
	b := kbin.AppendInt16(nil, 7)
	b = kbin.AppendUvarint(b, 300)
	r := kread.New(b, errCorrupt)
	if v := r.Int16(); v != 7 {
		t.Fatalf("Int16 %d, want 7", v)
	}
	if v := r.Uvarint(); v != 300 {
		t.Fatalf("Uvarint %d, want 300", v)
	}
	if err := r.Done("record"); err != nil {
		t.Fatalf("Done: %v", err)
	}
	if v := r.Int32(); v != 0 || !errors.Is(r.Err, errCorrupt) {
		t.Fatalf("read past the end: %d, %v", v, r.Err)
	}
	first := r.Err
	r.Fail("later")
	if r.Int8() != 0 || r.Err != first {
		t.Fatalf("a later failure replaced the first: %v", r.Err)
	}
	if err := r.Done("record"); !errors.Is(err, errCorrupt) {
		t.Fatalf("Done after a failure: %v", err)
	}
	left := kread.New([]byte{1, 2, 3}, errCorrupt)
	left.Int8()
	if err := left.Done("record"); !errors.Is(err, errCorrupt) {
		t.Fatalf("bytes left over: %v", err)
	}
}
