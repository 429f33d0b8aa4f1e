//go:build !race

package breaker_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
