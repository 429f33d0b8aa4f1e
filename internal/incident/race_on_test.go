//go:build race

package incident

// raceEnabled: under the race detector the registry runs about ten times
// slower, so the tests that drive it for minutes of virtual time sample
// less.
const raceEnabled = true
