package callbacks

import (
	"fmt"
	"testing"

	"github.com/adkbreaker/adkbreaker/registry"
)

func newTestBinding(t *testing.T, pol registry.Policy) (*binding, *registry.Breaker) {
	t.Helper()
	reg := registry.MustNew(registry.WithDefaultPolicy(pol))
	br, err := reg.Get("dep")
	if err != nil {
		t.Fatal(err)
	}
	return &binding{key: "dep", br: br}, br
}

// sameShardIDs returns n call IDs that all land in one shard (same last two
// bytes), forcing the shard past its slice into the overflow map.
func sameShardIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("adk-%06d-zz", i)
	}
	return out
}

func TestTicketsOverflowAndDrain(t *testing.T) {
	bd, br := newTestBinding(t, registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true})
	tix := newTickets(1 << 16)
	ids := sameShardIDs(100)
	for i, id := range ids {
		inv := "inv-a"
		if i%2 == 1 {
			inv = "inv-b"
		}
		k := ticketKey{inv: inv, call: id}
		if !tix.reserve(&k, bd) {
			tk, d := br.Reserve()
			if !d.Allowed {
				t.Fatal("refused")
			}
			tix.put(&k, tk, bd)
		}
	}
	if n := tix.len(); n != 100 {
		t.Fatalf("pending = %d, want 100", n)
	}
	// Successes reported in place, from the slice and from the map.
	for i := 0; i < 40; i += 2 {
		if tix.reportSuccess(&ticketKey{inv: "inv-a", call: ids[i]}) == nil {
			t.Fatalf("entry %d not found", i)
		}
	}
	// A failure taken out and reported by the caller.
	tk, got := tix.take(&ticketKey{inv: "inv-b", call: ids[1]})
	if got == nil {
		t.Fatal("take missed")
	}
	tk.Report(registry.Failure, 0)
	// The wrong invocation never matches.
	if tix.reportSuccess(&ticketKey{inv: "inv-b", call: ids[2]}) != nil {
		t.Fatal("matched across invocations")
	}
	if n := tix.drain("inv-a"); n != 30 {
		t.Fatalf("drained %d of inv-a, want 30", n)
	}
	if n := tix.drain("inv-b"); n != 49 {
		t.Fatalf("drained %d of inv-b, want 49", n)
	}
	if n := tix.len(); n != 0 {
		t.Fatalf("pending after drain = %d", n)
	}
	c := br.Counts()
	if c.Successes != 20 || c.Failures != 1 || c.Exclusions != 79 {
		t.Fatalf("counts = %+v, want 20 successes, 1 failure, 79 exclusions", c)
	}
}

func TestTicketsDuplicateAndCap(t *testing.T) {
	bd, br := newTestBinding(t, registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true})
	tix := newTickets(16 * ticketShards) // 16 per shard
	k := ticketKey{inv: "inv", call: "adk-dup-000001"}
	tk, _ := br.Reserve()
	tix.put(&k, tk, bd)
	tk2, _ := br.Reserve()
	if tix.put(&k, tk2, bd) { // a model that reused a call ID: the second is not tracked
		t.Fatal("a duplicate key was tracked")
	}
	tk2.Report(registry.Excluded, 0)
	if tix.reportSuccess(&k) == nil { // the first is still there, and reports its own outcome
		t.Fatal("the first call lost its entry")
	}
	if c := br.Counts(); c.Exclusions != 1 || c.Successes != 1 {
		t.Fatalf("counts = %+v, want the duplicate excluded and the first a success", c)
	}
	// Past the per-shard cap the oldest entry is abandoned.
	ids := sameShardIDs(17)
	for _, id := range ids {
		tk, _ := br.Reserve()
		tix.put(&ticketKey{inv: "inv", call: id}, tk, bd)
	}
	if n := tix.len(); n != 16 {
		t.Fatalf("pending = %d, want the cap 16", n)
	}
	if c := br.Counts(); c.Exclusions != 2 {
		t.Fatalf("cap eviction not reported: %+v", c)
	}
	tix.drain("inv")
}

func TestTryReserve(t *testing.T) {
	_, br := newTestBinding(t, registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true})
	var r registry.Reservation
	if !br.TryReserve(&r) || !r.Valid() {
		t.Fatal("closed breaker refused the fast path")
	}
	r.Report(registry.Failure, 0) // trips (threshold 1)
	var r2 registry.Reservation
	if br.TryReserve(&r2) || r2.Valid() || br.Closed() {
		t.Fatal("fast path admitted on an open breaker")
	}
}
