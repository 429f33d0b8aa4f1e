//go:build race

package breaker_test

// raceEnabled: the race detector slows a turn through the runner about
// tenfold; the soak runs a fifth of its invocations under it (CI runs the
// full figure again without it).
const raceEnabled = true
