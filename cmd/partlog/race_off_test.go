//go:build !race

package main

// raceEnabled reports a -race build of the tests.
const raceEnabled = false
