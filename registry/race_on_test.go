//go:build race

package registry_test

// raceEnabled: the race detector instruments closures, so allocation
// counts are not the product's under -race.
const raceEnabled = true
