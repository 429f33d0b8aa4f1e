//go:build race

package breaker_test

// raceEnabled: the race detector slows a turn through the runner about
// tenfold; the soak runs a fifth of its invocations under it (a run
// without the race detector runs its full figure).
const raceEnabled = true
