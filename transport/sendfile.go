package transport

// sendfile.go writes Fetch answers whose records stay in segment files:
// the answer's own fields are encoded as Kafka's FetchResponse, and each
// partition's records are sent from their file with sendfile(2), so the
// node never copies record bytes into user space on the fetch path.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
	"golang.org/x/sys/unix"
)

// filePiece is a file range that goes into a response frame at a byte
// position of its encoded part.
type filePiece struct {
	at   int
	file vfs.FileRange
}

// appendFetchFrame appends a whole Fetch response frame in the given
// version (4 to 12), as kmsg's FetchResponse.AppendTo encodes it, except
// that a partition's records in a File are left out of dst: the returned
// pieces say where they go. The frame's length counts them.
func appendFetchFrame(dst []byte, correlationID int32, r *FetchResponse, version int16) ([]byte, []filePiece) {
	flexible := version >= 12
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // the frame's length, set below
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0) // response header tags
	}
	dst = binary.BigEndian.AppendUint32(dst, 0) // throttle
	if version >= 7 {
		dst = binary.BigEndian.AppendUint16(dst, 0) // error code
		dst = binary.BigEndian.AppendUint32(dst, 0) // session id: none
	}
	var pieces []filePiece
	var fileBytes int64
	dst = appendLen(dst, len(r.Topics), flexible)
	for _, t := range r.Topics {
		dst = appendString(dst, t.Topic, flexible)
		dst = appendLen(dst, len(t.Partitions), flexible)
		for _, p := range t.Partitions {
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint16(dst, uint16(kafka.CodeOf(p.Err)))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.LastStableOffset))
			if version >= 5 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
			}
			dst = appendAbortedTransactions(dst, p.AbortedTransactions, flexible)
			if version >= 11 {
				dst = binary.BigEndian.AppendUint32(dst, 0xffffffff) // preferred read replica: -1
			}
			switch {
			case p.File.Size > 0:
				dst = appendLen(dst, int(p.File.Size), flexible)
				pieces = append(pieces, filePiece{at: len(dst) - start, file: p.File})
				fileBytes += p.File.Size
			default:
				// No records is an empty field, never a null one:
				// librdkafka takes -1 for a parse failure (Kafka sends 0).
				dst = appendLen(dst, len(p.Records), flexible)
				dst = append(dst, p.Records...)
			}
			if flexible {
				dst = append(dst, 0) // partition tags
			}
		}
		if flexible {
			dst = append(dst, 0) // topic tags
		}
	}
	if flexible {
		dst = append(dst, 0) // response tags
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(int64(len(dst)-start-4)+fileBytes))
	return dst, pieces
}

// appendAbortedTransactions appends a partition's aborted_transactions:
// null for nil (a read_uncommitted answer), else each producer id and
// first offset.
func appendAbortedTransactions(dst []byte, aborted []AbortedTransaction, flexible bool) []byte {
	if aborted == nil {
		return appendNullLen(dst, flexible)
	}
	dst = appendLen(dst, len(aborted), flexible)
	for _, a := range aborted {
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
		if flexible {
			dst = append(dst, 0) // aborted transaction tags
		}
	}
	return dst
}

// appendLen appends the length of an array or of bytes: a compact
// (uvarint n+1) length in a flexible version, an int32 before.
func appendLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

func appendNullLen(dst []byte, flexible bool) []byte {
	if flexible {
		return append(dst, 0)
	}
	return binary.BigEndian.AppendUint32(dst, 0xffffffff)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}

// errShortFile means a file range ended before its size: the segment was
// truncated under the fetch. The frame is broken, so the connection closes
// and the client fetches again.
var errShortFile = errors.New("transport: segment file shorter than the range being sent")

// writeFrameWithFiles writes frame with the file pieces spliced in, the
// files through sendfile straight from the page cache to conn.
func writeFrameWithFiles(w *bufio.Writer, conn syscall.Conn, frame []byte, pieces []filePiece) error {
	prev := 0
	for _, p := range pieces {
		if _, err := w.Write(frame[prev:p.at]); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := sendfile(conn, p.file); err != nil {
			return err
		}
		prev = p.at
	}
	_, err := w.Write(frame[prev:])
	return err
}

// sendfile sends a file range to conn with sendfile(2), waiting for the
// socket whenever its buffer is full.
func sendfile(conn syscall.Conn, r vfs.FileRange) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	pos, left := r.Pos, r.Size
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		for left > 0 {
			n, err := unix.Sendfile(int(fd), r.FD, &pos, int(min(left, 1<<30)))
			if n > 0 {
				left -= int64(n)
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until the socket can take more
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				serr = fmt.Errorf("transport: sendfile: %w", err)
				return true
			case n == 0:
				serr = errShortFile
				return true
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return serr
}
