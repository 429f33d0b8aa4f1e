//go:build race

package main

// raceEnabled: the race detector slows the storm runs about twelvefold.
const raceEnabled = true
