package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// logLevel is a flag holding how much a long-running command (serve,
// controller) logs to standard error: "off" (the default), or slog's
// levels "error", "warn", "info", "debug".
type logLevel struct {
	off   bool
	level slog.Level
}

// logLevelFlag adds --log-level to fs.
func logLevelFlag(fs *flag.FlagSet) *logLevel {
	l := &logLevel{off: true}
	fs.Var(l, "log-level", "what to log to standard error: off (the default), error, warn, info or debug; the `level`")
	return l
}

func (l *logLevel) String() string {
	if l == nil || l.off {
		return "off"
	}
	return strings.ToLower(l.level.String())
}

func (l *logLevel) Set(s string) error {
	if strings.EqualFold(s, "off") {
		l.off = true
		return nil
	}
	if err := l.level.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("log level %q is not off, error, warn, info or debug", s)
	}
	l.off = false
	return nil
}

// warningLogger returns the logger of a command that opens a data
// directory itself: warnings and errors, on standard error, each line
// prefixed "partlog: COMMAND:", without a time.
func warningLogger(w io.Writer, command string) *slog.Logger {
	h := slog.NewTextHandler(&prefixWriter{w: w, prefix: "partlog: " + command + ": "}, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(h)
}

// prefixWriter writes each Write (a log line) to w after prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// newLogger returns a logger that writes to w at level l, or discards
// everything when l is off.
func newLogger(w io.Writer, l *logLevel) *slog.Logger {
	if l.off {
		w = io.Discard
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l.level}))
}
