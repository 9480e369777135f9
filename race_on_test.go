//go:build race

package partlog_test

// raceEnabled reports a -race build of the tests.
const raceEnabled = true
