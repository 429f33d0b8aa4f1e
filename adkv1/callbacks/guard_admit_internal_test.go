package callbacks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// scObserver records short-circuit events.
type scObserver struct {
	mu  sync.Mutex
	evs []ShortCircuitEvent
}

func (o *scObserver) ShortCircuit(_ context.Context, ev ShortCircuitEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, ev)
}
func (o *scObserver) TurnEnded(context.Context, TurnEndEvent) {}

func (o *scObserver) events() []ShortCircuitEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]ShortCircuitEvent(nil), o.evs...)
}

// hookTool runs fn when it runs.
type hookTool struct {
	scriptTool
	fn   func(ctx agent.ToolContext)
	runs int
}

func (t *hookTool) Run(ctx agent.ToolContext, args any) (map[string]any, error) {
	t.runs++
	if t.fn != nil {
		t.fn(ctx)
	}
	return t.scriptTool.Run(ctx, args)
}

func newAdmitHandler(t *testing.T, pol registry.Policy) (*Handler, *scObserver) {
	t.Helper()
	reg := registry.MustNew(registry.WithDefaultPolicy(pol))
	obs := &scObserver{}
	h, err := New(Config{Registry: reg, RepeatLimit: NoRepeatLimit, Observer: obs, Mappings: []Mapping{{Tools: []string{"lookup"}, Dependency: "dep"}}})
	if err != nil {
		t.Fatal(err)
	}
	return h, obs
}

// TestGuardedRunRefusesWhatChangedSinceBeforeTool: a guarded call is
// admitted by its Run; a trip (or a bulkhead filled) between BeforeTool and
// Run refuses it there, with the payload BeforeTool would have returned and
// one short-circuit observed, and the tool never runs.
func TestGuardedRunRefusesWhatChangedSinceBeforeTool(t *testing.T) {
	for _, c := range []struct {
		name   string
		pol    registry.Policy
		change func(t *testing.T, br *registry.Breaker) (undo func())
		reason string
	}{
		{
			name: "tripped", pol: registry.Policy{OpenFor: time.Hour},
			change: func(_ *testing.T, br *registry.Breaker) func() {
				br.Trip(time.Minute, registry.CauseRetryHint)
				return func() {}
			},
			reason: "circuit_open",
		},
		{
			name: "bulkhead full", pol: registry.Policy{OpenFor: time.Hour, MaxConcurrent: 1},
			change: func(t *testing.T, br *registry.Breaker) func() {
				tk, d := br.Admit() // another call takes the only slot
				if !d.Allowed {
					t.Fatal("the bulkhead's slot was not free")
				}
				return func() { tk.Done(registry.Success) }
			},
			reason: "saturated",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, obs := newAdmitHandler(t, c.pol)
			inner := &hookTool{}
			gt := h.Guard(inner).(*GuardedTool)
			ctx := &guardCtx{call: "adk-call-1"}
			if r, _ := h.BeforeTool(ctx, gt, map[string]any{}); r != nil {
				t.Fatalf("BeforeTool refused a call on a closed breaker: %v", r)
			}
			br, ok := h.Registry().Lookup("dep")
			if !ok {
				t.Fatal("no breaker")
			}
			undo := c.change(t, br)
			defer undo()
			res, err := gt.Run(ctx, map[string]any{})
			if err != nil {
				t.Fatalf("Run returned an error for a refusal: %v", err)
			}
			if inner.runs != 0 {
				t.Fatal("the tool ran although the breaker refused the call")
			}
			if got := res["reason"]; got != c.reason {
				t.Fatalf("payload reason = %v, want %q (payload %v)", got, c.reason, res)
			}
			if evs := obs.events(); len(evs) != 1 || string(evs[0].Reason) != c.reason {
				t.Fatalf("short-circuits observed = %+v, want one %q", evs, c.reason)
			}
			h.AfterTool(ctx, gt, map[string]any{}, res, nil)
			if got := br.Reported(); got != [3]uint64{} {
				t.Fatalf("reported = %v: a refused call was counted", got)
			}
			if n, _ := h.Pending(); n != 0 {
				t.Fatalf("pending = %d", n)
			}
		})
	}
}

// TestGuardedRunPanicReleasesItsSlot: a guarded tool that panics has its
// call released (Excluded) before the panic goes on: its bulkhead slot is
// free again, so the dependency is not left saturated by a dead call.
func TestGuardedRunPanicReleasesItsSlot(t *testing.T) {
	h, _ := newAdmitHandler(t, registry.Policy{OpenFor: time.Hour, MaxConcurrent: 1})
	inner := &hookTool{fn: func(agent.ToolContext) { panic("tool bug") }}
	gt := h.Guard(inner).(*GuardedTool)
	ctx := &guardCtx{call: "adk-call-1"}
	if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
		t.Fatal("short-circuited")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		gt.Run(ctx, nil)
	}()
	br, _ := h.Registry().Lookup("dep")
	if got := br.Reported(); got != [3]uint64{0, 0, 1} {
		t.Fatalf("reported = %v, want one excluded", got)
	}
	if got := br.ContainCounts().InFlight; got != 0 {
		t.Fatalf("in flight after the panic = %d, want 0", got)
	}
	if _, d := br.Admit(); !d.Allowed {
		t.Fatalf("the next call was refused (%v): the panicking call kept its slot", d.Reason)
	}
}

// TestGuardedRunRegistersSelfAdmittingCalls: when the tool's client admits
// its own calls unless a layer did (mcpguard consults Registry.Admitted),
// the call Run admitted is visible to Registry.Admitted while the tool runs,
// and counted once.
func TestGuardedRunRegistersSelfAdmittingCalls(t *testing.T) {
	h, _ := newAdmitHandler(t, registry.Policy{OpenFor: time.Hour})
	br, err := h.Registry().Get("dep")
	if err != nil {
		t.Fatal(err)
	}
	br.SetSelfAdmitting()
	var inside bool
	inner := &hookTool{fn: func(ctx agent.ToolContext) { inside = h.Registry().Admitted(ctx, "dep") }}
	gt := h.Guard(inner).(*GuardedTool)
	ctx := &guardCtx{call: "adk-call-1"}
	if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
		t.Fatal("short-circuited")
	}
	if _, err := gt.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !inside {
		t.Fatal("Registry.Admitted did not see the call Run admitted: the client would admit it a second time")
	}
	if h.Registry().Admitted(ctx, "dep") {
		t.Fatal("the call is still admitted after it was reported")
	}
	h.AfterTool(ctx, gt, nil, nil, nil)
	if got := br.Reported(); got != [3]uint64{1, 0, 0} {
		t.Fatalf("reported = %v, want one success", got)
	}
}

// TestGuardedShadowObservedOnce: a shadow-mode breaker that would refuse a
// guarded call observes the would-be short-circuit once (in BeforeTool, not
// again in Run), runs the tool and counts nothing.
func TestGuardedShadowObservedOnce(t *testing.T) {
	h, obs := newAdmitHandler(t, registry.Policy{OpenFor: time.Hour, Shadow: true})
	br, err := h.Registry().Get("dep")
	if err != nil {
		t.Fatal(err)
	}
	br.Trip(time.Minute, registry.CauseRetryHint)
	inner := &hookTool{}
	gt := h.Guard(inner).(*GuardedTool)
	ctx := &guardCtx{call: "adk-call-1"}
	if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
		t.Fatalf("a shadow breaker refused: %v", r)
	}
	if _, err := gt.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	h.AfterTool(ctx, gt, nil, nil, nil)
	if inner.runs != 1 {
		t.Fatalf("tool runs = %d, want 1", inner.runs)
	}
	if evs := obs.events(); len(evs) != 1 || !evs[0].Shadow {
		t.Fatalf("shadow short-circuits observed = %+v, want one", evs)
	}
	if got := br.Reported(); got != [3]uint64{} {
		t.Fatalf("reported = %v: a shadow refusal was counted", got)
	}
	if n, _ := h.Pending(); n != 0 {
		t.Fatalf("pending = %d", n)
	}
}

// cancelledCtx is a guardCtx whose caller has cancelled.
type cancelledCtx struct{ guardCtx }

func (c *cancelledCtx) Err() error { return context.Canceled }

// TestJudgeAfterCallerCancellation: once the caller has cancelled, a
// call's outcome is excluded, a success too (a tool may return nil when it
// sees its context done: that must not close a half-open breaker).
func TestJudgeAfterCallerCancellation(t *testing.T) {
	h, _ := newAdmitHandler(t, registry.Policy{OpenFor: time.Hour})
	for _, c := range []struct {
		err  error
		want [3]uint64
	}{
		{nil, [3]uint64{0, 0, 1}},
		{context.Canceled, [3]uint64{0, 0, 2}},
		{errors.New("upstream 503"), [3]uint64{0, 0, 3}},
	} {
		gt := h.Guard(&scriptTool{err: c.err}).(*GuardedTool)
		ctx := &cancelledCtx{guardCtx{call: "adk-call-1"}}
		if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
			t.Fatal("short-circuited")
		}
		gt.Run(ctx, nil)
		if c.err != nil {
			h.OnToolError(ctx, gt, nil, c.err)
		}
		h.AfterTool(ctx, gt, nil, nil, c.err)
		br, _ := h.Registry().Lookup("dep")
		if got := br.Reported(); got != c.want {
			t.Fatalf("after a cancelled call returning %v: reported = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestGuardedRunUnseenByBeforeToolIsUntracked: a GuardedTool whose handler's
// BeforeTool never bound it (an agent without the handler's callbacks, or a
// runner whose plugin is another handler's) runs its tool untracked, as the
// handler never saw the call: Run neither admits nor refuses it, whatever
// the dependency's breaker says. A refusal there built its payload from a
// binding with no payload builder (a nil-pointer panic, which ADK does not
// recover: it ends the process); an admission there counted a call another
// handler already counted, and a tool error left an entry nobody removes.
func TestGuardedRunUnseenByBeforeToolIsUntracked(t *testing.T) {
	for _, c := range []struct {
		name string
		open bool
		err  error
	}{
		{name: "open breaker", open: true},
		{name: "closed breaker, tool error", err: errors.New("upstream 503")},
		{name: "closed breaker, success"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, obs := newAdmitHandler(t, registry.Policy{OpenFor: time.Hour})
			br, err := h.Registry().Get("dep") // the dependency's breaker exists (another tool, config, mcpguard)
			if err != nil {
				t.Fatal(err)
			}
			if c.open {
				br.Trip(time.Minute, registry.CauseRetryHint)
			}
			inner := &hookTool{scriptTool: scriptTool{err: c.err}}
			gt := h.Guard(inner).(*GuardedTool)
			var runErr error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Run panicked: %v", p)
					}
				}()
				_, runErr = gt.Run(&guardCtx{call: "adk-call-1"}, map[string]any{})
			}()
			if inner.runs != 1 || runErr != c.err {
				t.Fatalf("tool runs = %d, err = %v; want the tool run once, untracked, with its own error", inner.runs, runErr)
			}
			if got := br.Reported(); got != [3]uint64{} {
				t.Fatalf("reported = %v: a call the handler never saw was counted", got)
			}
			if evs := obs.events(); len(evs) != 0 {
				t.Fatalf("short-circuits observed = %+v", evs)
			}
			if tk, inv := h.Pending(); tk != 0 || inv != 0 {
				t.Fatalf("pending = %d tickets, %d invocations: left behind by a call no callback will finish", tk, inv)
			}
		})
	}
}

// TestGuardedPendingRunPanicReleasesItsCall: a guarded call whose admission
// sits in the pending table (a half-open probe BeforeTool admitted, or a
// call of a self-admitting client such as mcpguard) is released as Excluded
// when its tool panics, as one admitted on Run's stack is: the probe slot or
// bulkhead slot is free again at once, without waiting for an AfterRun that
// agent-level use never has.
func TestGuardedPendingRunPanicReleasesItsCall(t *testing.T) {
	for _, c := range []struct {
		name string
		prep func(t *testing.T, br *registry.Breaker, clk *registrytest.FakeClock)
	}{
		{name: "self-admitting, bulkhead", prep: func(_ *testing.T, br *registry.Breaker, _ *registrytest.FakeClock) { br.SetSelfAdmitting() }},
		{name: "half-open probe", prep: func(t *testing.T, br *registry.Breaker, clk *registrytest.FakeClock) {
			br.Trip(time.Minute, registry.CauseRetryHint)
			clk.Advance(2 * time.Minute)
			if st := br.State(); st != registry.StateHalfOpen {
				t.Fatalf("state = %v, want half_open", st)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
			reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{OpenFor: time.Hour, MaxConcurrent: 1, HalfOpenProbes: 1, NoJitter: true}))
			h, err := New(Config{Registry: reg, RepeatLimit: NoRepeatLimit, Mappings: []Mapping{{Tools: []string{"lookup"}, Dependency: "dep"}}})
			if err != nil {
				t.Fatal(err)
			}
			br, err := reg.Get("dep")
			if err != nil {
				t.Fatal(err)
			}
			c.prep(t, br, clk)
			inner := &hookTool{fn: func(agent.ToolContext) { panic("tool bug") }}
			gt := h.Guard(inner).(*GuardedTool)
			ctx := &guardCtx{call: "adk-call-1"}
			if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
				t.Fatalf("short-circuited: %v", r)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the panic was swallowed")
					}
				}()
				gt.Run(ctx, nil)
			}()
			if n, _ := h.Pending(); n != 0 {
				t.Fatalf("pending after the panic = %d, want 0", n)
			}
			if got := br.ContainCounts().InFlight; got != 0 {
				t.Fatalf("in flight after the panic = %d, want 0", got)
			}
			if got := br.PendingProbes(); got != 0 {
				t.Fatalf("pending probes after the panic = %d, want 0", got)
			}
			if got := br.Reported(); got[0] != 0 || got[1] != 0 {
				t.Fatalf("reported = %v: a panicking call was counted", got)
			}
		})
	}
}

// TestUnwrapNestedGuards: one handler's guard around another's (BeforeModel
// guards a foreign GuardedTool again) unwraps to the tool itself, and both
// resolve as it.
func TestUnwrapNestedGuards(t *testing.T) {
	h1, _ := newAdmitHandler(t, registry.Policy{})
	h2, _ := newAdmitHandler(t, registry.Policy{})
	inner := &scriptTool{}
	nested := h2.Guard(h1.Guard(inner))
	if g, ok := nested.(*GuardedTool); !ok || g.h != h2 {
		t.Fatalf("h2.Guard(h1's guard) = %T, want h2's own GuardedTool", nested)
	}
	if got := Unwrap(nested); got != inner {
		t.Fatalf("Unwrap = %T, want the tool itself", got)
	}
	if keyOf(nested) != keyOf(inner) {
		t.Fatalf("keyOf(nested) = %+v, want %+v", keyOf(nested), keyOf(inner))
	}
}
