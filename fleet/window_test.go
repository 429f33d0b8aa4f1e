package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestWindowCountSemantics: a count window keeps the newest N outcomes,
// trimming the oldest delta in proportion (rounding toward dropping
// failures); MinCalls and FailureRate gate as the local breaker's do.
func TestWindowCountSemantics(t *testing.T) {
	p := registry.Policy{CountWindow: 10, MinCalls: 10, FailureRate: 0.5}.WithDefaults()
	t0 := time.Unix(1000, 0)
	var w window
	w.add(t0, 0, 6, &p)
	if w.meets(&p) {
		t.Fatal("6 calls met a 10-call gate")
	}
	w.add(t0.Add(2*time.Second), 8, 0, &p) // 14 outcomes: the 4 oldest go, all failures
	if w.s != 8 || w.f != 2 || len(w.deltas) != 2 {
		t.Fatalf("after trim: %d/%d %+v", w.s, w.f, w.deltas)
	}
	w.add(t0.Add(4*time.Second), 0, 5, &p) // 15: 5 oldest go (2 failures, 3 successes)
	if w.s != 5 || w.f != 5 || !w.meets(&p) {
		t.Fatalf("after second trim: %d/%d %+v meets %v", w.s, w.f, w.deltas, w.meets(&p))
	}
	p.DisableFailureRate = true
	if w.meets(&p) {
		t.Fatal("met with the failure rate disabled")
	}
	w.reset([3]uint64{7, 8, 9})
	if w.s+w.f != 0 || len(w.deltas) != 0 || w.last != [2]uint64{7, 8} {
		t.Fatalf("reset: %d/%d %+v %v", w.s, w.f, w.deltas, w.last)
	}
}

// TestWindowTimeSemantics: a time window forgets deltas older than Window
// (a count window does not: it keeps its newest outcomes), coalesces close
// deltas, and keeps at most maxDeltas however its clock moves.
func TestWindowTimeSemantics(t *testing.T) {
	p := registry.Policy{Window: 64 * time.Second, MinCalls: 4, FailureRate: 0.5}.WithDefaults()
	t0 := time.Unix(1000, 0)
	var w window
	w.add(t0, 0, 3, &p)
	w.add(t0.Add(500*time.Millisecond), 1, 0, &p) // within Window/64: merged, at t0
	if len(w.deltas) != 1 || !w.meets(&p) {
		t.Fatalf("coalesce: %+v", w.deltas)
	}
	w.add(t0.Add(30*time.Second), 4, 0, &p)
	w.add(t0.Add(64*time.Second), 0, 1, &p) // the t0 delta expires
	if w.s != 4 || w.f != 1 || w.meets(&p) {
		t.Fatalf("expiry: %d/%d %+v", w.s, w.f, w.deltas)
	}
	for i := range 1000 {
		w.add(t0.Add(65*time.Second+time.Duration(i)*time.Millisecond*10), 1, 1, &p)
	}
	if len(w.deltas) > maxDeltas {
		t.Fatalf("%d deltas", len(w.deltas))
	}
	var s, f uint64
	for _, d := range w.deltas {
		s, f = s+d.s, f+d.f
	}
	if s != w.s || f != w.f || w.s != 1004 || w.f != 1001 {
		t.Fatalf("sums %d/%d, held %d/%d", s, f, w.s, w.f)
	}
	for i := range 3 * maxDeltas { // a clock going backwards: no coalescing, still bounded
		w.add(t0.Add(70*time.Second-time.Duration(i)*time.Second/100), 0, 1, &p)
	}
	if len(w.deltas) > maxDeltas {
		t.Fatalf("%d deltas with a clock going back", len(w.deltas))
	}
	cp := registry.Policy{CountWindow: 1000, Window: time.Minute}.WithDefaults()
	var c window
	c.add(t0, 0, 50, &cp)
	c.forget(t0.Add(time.Hour), &cp)
	if c.s+c.f != 50 {
		t.Fatalf("a count window forgot outcomes an hour old: %d/%d left of 0/50", c.s, c.f)
	}
}

// TestOriginsCountEachSequenceOnce: a sender's sequence counts once, older
// ones are stale; a sender unheard for originForget is heard again (a
// restart with its clock set back), and the table stays bounded.
func TestOriginsCountEachSequenceOnce(t *testing.T) {
	var o origins
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		origin string
		seq    uint64
		at     time.Duration
		want   string
	}{
		{"a", 10, 0, ""}, {"a", 10, 0, "duplicate"}, {"a", 9, 0, "stale"}, {"b", 9, 0, ""}, {"a", 11, time.Second, ""},
		{"a", 5, originForget, "stale"}, {"a", 5, originForget + 2*time.Second, ""}, {"a", 5, originForget + 3*time.Second, "duplicate"},
	} {
		if got := o.admit(c.origin, c.seq, t0.Add(c.at)); got != c.want {
			t.Fatalf("%+v: got %q", c, got)
		}
	}
	for i := range 3 * maxOrigins {
		if got := o.admit(fmt.Sprint("r", i), 1, t0.Add(time.Hour+time.Duration(i))); got != "" {
			t.Fatalf("r%d: %q", i, got)
		}
	}
	if len(o.last) > maxOrigins {
		t.Fatalf("%d origins remembered", len(o.last))
	}
}

// TestOptionsShareInterval: the configuration's share_interval and
// disable_outcome_sharing become the settings New uses.
func TestOptionsShareInterval(t *testing.T) {
	for _, c := range []struct {
		cfg  config.Fleet
		want time.Duration
	}{
		{config.Fleet{Address: "r:1"}, DefaultShareInterval},
		{config.Fleet{Address: "r:1", ShareInterval: config.Duration(20 * time.Millisecond)}, 20 * time.Millisecond},
		{config.Fleet{Address: "r:1", DisableOutcomeSharing: true}, 0},
	} {
		opts, err := Options(&c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var s settings
		for _, o := range opts {
			o.apply(&s)
		}
		s.defaults()
		if s.share != c.want {
			t.Errorf("%+v: share interval %v, want %v", c.cfg, s.share, c.want)
		}
	}
}

// TestOptionsLocalOperatorActions: local_operator_actions reaches New's
// settings; absent, actions are the fleet's.
func TestOptionsLocalOperatorActions(t *testing.T) {
	for _, local := range []bool{false, true} {
		opts, err := Options(&config.Fleet{Address: "r:1", LocalOperatorActions: local})
		if err != nil {
			t.Fatal(err)
		}
		var s settings
		for _, o := range opts {
			o.apply(&s)
		}
		if s.localActions != local {
			t.Errorf("local_operator_actions %v: settings say %v", local, s.localActions)
		}
	}
}
