//go:build race

package record

// raceEnabled reports a -race build, in which sync.Pool drops items at
// random, so allocation counts mean less.
const raceEnabled = true
