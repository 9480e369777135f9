package log

import "fmt"

// SwitchOffCleanerRule switches one of the cleaner's transaction rules off
// for l (see cleanerRules), for tests that show the rule matters: "remove
// aborted", "aborted out of the key map", "keep markers of live
// transactions" or "remove empty markers". Call it before cleaning.
func SwitchOffCleanerRule(l *Log, rule string) {
	switch rule {
	case "remove aborted":
		l.cleaning.off.keepAborted = true
	case "aborted out of the key map":
		l.cleaning.off.abortedKeys = true
	case "keep markers of live transactions":
		l.cleaning.off.markersOfLive = true
	case "remove empty markers":
		l.cleaning.off.keepMarkers = true
	default:
		panic(fmt.Sprintf("no cleaner rule %q", rule))
	}
}
