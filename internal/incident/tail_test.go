package incident

import "testing"

// TestHealthyTailNeverTrips is the false-trip benchmark at a tenth of its
// size, 100,000 calls per row (go run ./samples/incident -scenario
// healthy-tail runs the million): a healthy heavy-tailed dependency is never
// tripped by the default policy. It drives the registry alone, not the
// runner, so it runs under -race too (about 6 s).
func TestHealthyTailNeverTrips(t *testing.T) {
	rs, err := RunTails(100_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Trips != 0 || r.refused != 0 {
			t.Errorf("%s at %d/s: %d trips, %d calls refused", r.shape, r.perSecond, r.Trips, r.refused)
		}
		if r.threshold <= 0 {
			t.Errorf("%s at %d/s: the detector never armed", r.shape, r.perSecond)
		}
	}
}
