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

// newLogger returns a logger that writes to w at level l, or discards
// everything when l is off.
func newLogger(w io.Writer, l *logLevel) *slog.Logger {
	if l.off {
		w = io.Discard
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l.level}))
}
