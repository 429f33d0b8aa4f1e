//go:build race

package shed

// raceEnabled: the race detector slows the throttle simulations about
// fiftyfold.
const raceEnabled = true
