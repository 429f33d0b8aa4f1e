package callbacks

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// callCtx is a distinct object per call, as ADK's tool contexts are.
type callCtx struct {
	agent.ToolContext
	n int
}

func newTestBinding(t *testing.T, pol registry.Policy) (*binding, *registry.Breaker) {
	t.Helper()
	reg := registry.MustNew(registry.WithDefaultPolicy(pol))
	br, err := reg.Get("dep")
	if err != nil {
		t.Fatal(err)
	}
	return &binding{key: "dep", br: br}, br
}

// sameShardID is a call ID that always lands in one shard, forcing the shard
// past its slice into the overflow map.
const sameShardID = "adk-000000-zz"

func admit(t *testing.T, tix *tickets, ctx callKey, call, inv string, bd *binding) {
	t.Helper()
	if tix.reserve(ctx, call, inv, bd, 0) {
		return
	}
	tk, d := bd.br.Reserve()
	if !d.Allowed {
		t.Fatal("refused")
	}
	if !tix.put(ctx, call, inv, tk, bd, 0) {
		t.Fatal("not tracked")
	}
}

func TestTicketsOverflowAndDrain(t *testing.T) {
	bd, br := newTestBinding(t, registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true})
	tix := newTickets(1 << 16)
	ctxs := make([]*callCtx, 100)
	for i := range ctxs {
		ctxs[i] = &callCtx{n: i}
		inv := "inv-a"
		if i%2 == 1 {
			inv = "inv-b"
		}
		// Every call reuses one call ID: identity, not the ID, tells them apart.
		admit(t, tix, ctxs[i], sameShardID, inv, bd)
	}
	if n := tix.len(); n != 100 {
		t.Fatalf("pending = %d, want 100", n)
	}
	for i := 0; i < 40; i += 2 { // successes reported in place, from the slice and the map
		if tix.reportSuccess(ctxs[i], sameShardID) == nil {
			t.Fatalf("entry %d not found", i)
		}
	}
	tk, got := tix.take(ctxs[1], sameShardID)
	if got == nil {
		t.Fatal("take missed")
	}
	tk.Report(registry.Failure, 0)
	if tix.reportSuccess(&callCtx{n: -1}, sameShardID) != nil {
		t.Fatal("a call that was never admitted matched another call")
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
	if c := br.Counts(); c.Successes != 20 || c.Failures != 1 || c.Exclusions != 79 {
		t.Fatalf("counts = %+v, want 20 successes, 1 failure, 79 exclusions", c)
	}
}

func TestTicketsDuplicateAndCap(t *testing.T) {
	bd, br := newTestBinding(t, registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true})
	tix := newTickets(16 * ticketShards) // 16 per shard
	c := &callCtx{}
	admit(t, tix, c, "adk-dup-000001", "inv", bd)
	tk2, _ := br.Reserve()
	if tix.put(c, "adk-dup-000001", "inv", tk2, bd, 0) { // the same call admitted twice: not tracked
		t.Fatal("a duplicate was tracked")
	}
	tk2.Report(registry.Excluded, 0)
	if tix.reportSuccess(c, "adk-dup-000001") == nil {
		t.Fatal("the first admission lost its entry")
	}
	if cnt := br.Counts(); cnt.Exclusions != 1 || cnt.Successes != 1 {
		t.Fatalf("counts = %+v, want the duplicate excluded and the first a success", cnt)
	}
	for i := range 17 { // past the per-shard cap the oldest entry is abandoned
		tk, _ := br.Reserve()
		tix.put(&callCtx{n: i}, fmt.Sprint(sameShardID), "inv", tk, bd, 0)
	}
	if n := tix.len(); n != 16 {
		t.Fatalf("pending = %d, want the cap 16", n)
	}
	if cnt := br.Counts(); cnt.Exclusions != 2 {
		t.Fatalf("cap eviction not reported: %+v", cnt)
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

// A half-open probe at the head of a full shard must not be evicted: that
// would free its slot and admit a second probe while the first still runs.
func TestTicketsCapNeverEvictsProbe(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(0, 0))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: time.Second, NoJitter: true}))
	probeBr, _ := reg.Get("probed")
	other, _ := reg.Get("other")
	probeBd := &binding{key: "probed", br: probeBr}
	otherBd := &binding{key: "other", br: other}
	tk, _ := probeBr.Reserve()
	tk.Report(registry.Failure, 0) // open
	clk.Advance(2 * time.Second)
	tix := newTickets(16 * ticketShards) // 16 per shard
	probe, d := probeBr.Reserve()
	if !d.Allowed || !probe.Probe() {
		t.Fatalf("no probe admitted: %+v", d)
	}
	if !tix.put(&callCtx{n: -1}, sameShardID, "inv", probe, probeBd, 0) {
		t.Fatal("probe not tracked")
	}
	for i := range 40 { // fill the shard far past its cap with ordinary calls
		admit(t, tix, &callCtx{n: i}, sameShardID, "inv", otherBd)
	}
	if _, d := probeBr.Reserve(); d.Allowed {
		t.Fatal("a second probe was admitted while the first is still running")
	}
	if got := probeBr.PendingProbes(); got != 1 {
		t.Fatalf("pending probes = %d, want 1", got)
	}
	tix.drain("inv")
}

// reportSuccess reports ctx's pending call as a success and returns its
// binding (nil when there is none: the plugin's own short-circuit, or a
// call it never admitted), as AfterTool does for a plain success (the
// handler itself goes through takePlainSuccess and takeEntry).
func (t *tickets) reportSuccess(ctx callKey, call string) *binding {
	tk, bd := t.take(ctx, call)
	tk.Report(registry.Success, 0) // a no-op without an entry
	return bd
}
