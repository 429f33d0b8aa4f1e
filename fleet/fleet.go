package fleet

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Fleet shares one registry's trips and probes with the other replicas of
// an agent through Redis. The local breakers stay in charge: Redis only
// advises. Nothing on the admission path talks to Redis; a Redis that is
// down, slow or hung leaves every replica breaking on its own.
//
// A Fleet is safe for concurrent use. Close it when the agent stops.
type Fleet struct {
	reg    *registry.Registry
	s      settings
	client *redis.Client
	clock  registry.Clock

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	unsub  func()

	out      chan outbound // local decisions to publish
	leaseReq chan leaseOp  // probe leases to take or renew
	kick     chan struct{} // resync now

	deps sync.Map // registry.Key → *dep

	// rb is the breaker around Redis itself (a private registry).
	rb         *registry.Breaker
	subscribed atomic.Bool

	st   counters
	once sync.Once

	// Outcome sharing (outcomes.go).
	origins origins
	outSeq  uint64 // sequence of the last outcome message; the sharer's alone

	logMu     sync.Mutex
	lastClass string
	lastLog   time.Time

	hmu     sync.Mutex
	hchange chan struct{} // closed and replaced when health may have changed
	// downSince is when (unix ns, registry clock) the fleet was last seen
	// not Healthy, 0 while it is: a replica probes on its own only once
	// Redis has been unavailable for a lease (AllowProbe).
	downSince atomic.Int64
}

// dep is what the fleet knows of one dependency. Guarded by mu.
type dep struct {
	mu      sync.Mutex
	lastGen uint64 // newest fleet decision applied or published
	lease   leaseState
	until   time.Time // lease or foreign lease end (registry clock)
	// For a lease of this replica: when it was won, and whether a probe
	// has used it. An unused lease is renewed (a heartbeat: a crashed
	// holder stops renewing) until the replica's next call probes, for at
	// most two lease periods; then it is released for the others.
	wonAt time.Time
	used  bool
	// unpublished is a local decision Redis did not take (outage); it is
	// published when Redis returns if the breaker is still in that state.
	// unpublishedOp is the same for an operator's isolate or reset, kept
	// apart so that a later trip or close does not replace it (a reset
	// followed by a trip must still end the fleet's isolation).
	unpublished, unpublishedOp *outbound
	// localOp: this replica's operator isolated or reset the dependency,
	// and no fleet generation orders that action yet (WithLocalOperatorActions,
	// or not published yet: Redis away). A reset read at a resync is then
	// not applied: the replica cannot tell it from one recorded before the
	// action (its breaker may not have existed then), and undoing an
	// operator's isolation with a stale reset is the worse mistake. Cleared
	// when the action is published or a decision is received live.
	localOp bool
	// win is the dependency's fleet window (its own lock: the probe gate
	// takes mu on the half-open path).
	win window
}

type leaseState uint8

const (
	leaseNone leaseState = iota
	leaseAcquiring
	leaseMine
	leaseOther
)

type leaseOp struct {
	key   registry.Key
	renew bool
}

type outbound struct {
	key   registry.Key
	kind  string
	until time.Time // end of an open hold (registry clock)
	cause registry.Cause
}

// New connects a registry to the fleet and returns at once: connecting,
// subscribing and reading current holds happen in the background, so New
// never waits for Redis. Invalid options return one error listing every
// problem.
func New(reg *registry.Registry, opts ...Option) (*Fleet, error) {
	var s settings
	for _, o := range opts {
		o.apply(&s)
	}
	if reg == nil {
		s.errs = append(s.errs, errors.New("registry: must not be nil"))
	}
	if s.replica == "" {
		var b [8]byte
		_, _ = crand.Read(b[:])
		s.replica = hex.EncodeToString(b[:])
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	s.defaults()
	f := &Fleet{
		reg: reg, s: s, clock: reg.Clock(),
		out:      make(chan outbound, s.queue),
		leaseReq: make(chan leaseOp, 256),
		kick:     make(chan struct{}, 1),
		hchange:  make(chan struct{}),
	}
	f.downSince.Store(f.clock.Now().UnixNano()) // not sharing until subscribed
	rreg, err := registry.New(registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 2, DisableFailureRate: true,
		OpenFor: time.Second, OpenBackoff: 2, MaxOpenFor: 30 * time.Second,
		ProbeLease: 2*s.commandTimeout + s.dialTimeout,
	}))
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f.rb, _ = rreg.Get("redis")
	rreg.Subscribe(f.logRedisHealth)
	if s.meter != nil {
		if err := f.registerMetrics(s.meter); err != nil {
			return nil, fmt.Errorf("fleet: metrics: %w", err)
		}
	}
	f.client = newClient(&s)
	for _, h := range s.hooks {
		f.client.AddHook(h)
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.unsub = reg.Subscribe(f.onTransition)
	reg.SetProbeGate(f)
	f.wg.Add(3)
	go f.publisher()
	go f.leaser()
	go f.subscriber()
	if s.share > 0 {
		// Outcomes reported before the fleet joined are not shared.
		for _, k := range reg.Keys() {
			f.clearWindow(k)
		}
		f.wg.Add(1)
		go f.sharer()
	}
	return f, nil
}

// ReplicaID returns this replica's ID in the fleet.
func (f *Fleet) ReplicaID() string { return f.s.replica }

// Close detaches the fleet from the registry (which goes on breaking alone),
// stops its goroutines and closes the Redis connections. A probe lease this
// replica holds is left to expire. Close is idempotent.
func (f *Fleet) Close() error {
	f.once.Do(func() {
		f.reg.SetProbeGate(nil)
		f.unsub()
		f.cancel()
		f.wg.Wait()
		_ = f.client.Close()
	})
	return nil
}

// Healthy reports whether the fleet is sharing: subscribed to the channel
// and with its Redis breaker closed. When false, the replica breaks on its
// own (probes included).
func (f *Fleet) Healthy() bool { return f.subscribed.Load() && f.rb.Closed() }

// WaitHealthy waits until the fleet is sharing (Healthy) or ctx ends, for
// readiness checks and tests. Nothing else ever waits for Redis.
func (f *Fleet) WaitHealthy(ctx context.Context) error {
	for {
		f.hmu.Lock()
		ch := f.hchange
		f.hmu.Unlock()
		if f.Healthy() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fleet) healthChanged() {
	if f.Healthy() {
		f.downSince.Store(0)
	} else {
		f.downSince.CompareAndSwap(0, f.clock.Now().UnixNano())
	}
	f.hmu.Lock()
	close(f.hchange)
	f.hchange = make(chan struct{})
	f.hmu.Unlock()
}

func (f *Fleet) depFor(k registry.Key) *dep {
	if d, ok := f.deps.Load(k); ok {
		return d.(*dep)
	}
	d, _ := f.deps.LoadOrStore(k, &dep{})
	return d.(*dep)
}

func (f *Fleet) keys(k registry.Key) (state, hold, lease string) {
	p := f.s.prefix
	return p + ":state:" + string(k), p + ":hold:" + string(k), p + ":lease:" + string(k)
}

func (f *Fleet) channel() string { return f.s.prefix + ":events" }

// do runs one Redis operation behind the Redis breaker, with the command
// timeout. The breaker refuses at once while Redis is known to be down.
func (f *Fleet) do(fn func(ctx context.Context) error) error {
	tk, d := f.rb.Admit()
	if !d.Allowed {
		return errRedisOpen
	}
	ctx, cancel := context.WithTimeout(f.ctx, 2*f.s.commandTimeout)
	err := fn(ctx)
	cancel()
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		tk.Done(registry.Success)
		return nil
	case f.ctx.Err() != nil:
		tk.Done(registry.Excluded)
	default:
		tk.Done(registry.Failure)
		f.st.redisErrors.Add(1)
		f.st.lastError.Store(errClass(err))
	}
	return err
}

// ---- outbound: local transitions → Redis ----

// onTransition runs on the registry's delivery goroutine: it only updates
// memory and enqueues.
func (f *Fleet) onTransition(t registry.Transition) {
	if f.s.share > 0 {
		// Every transition starts the dependency's fleet window afresh,
		// as gobreaker's own counts do.
		f.clearWindow(t.Key)
	}
	switch t.Cause {
	case registry.CauseFleetOpen, registry.CauseFleetClose, registry.CauseFleetIsolated, registry.CauseFleetReset:
		// Applied from the fleet: never echoed. The lease (if any) is spent.
		f.dropLease(t.Key)
		return
	case registry.CauseHoldExpired:
		return // the start of half-open is not shared: the lease decides
	}
	var o outbound
	switch {
	case t.Cause == registry.CauseIsolated || t.Cause == registry.CauseReset:
		d := f.depFor(t.Key)
		d.mu.Lock()
		d.localOp = true
		d.mu.Unlock()
		if f.s.localActions {
			f.dropLease(t.Key)
			return // WithLocalOperatorActions
		}
		o = outbound{key: t.Key, kind: kindIsolate, cause: t.Cause}
		if t.Cause == registry.CauseReset {
			o.kind = kindReset
		}
	case t.To == registry.StateOpen:
		o = outbound{key: t.Key, kind: kindOpen, until: t.At.Add(t.RetryAfter), cause: t.Cause}
	case t.To == registry.StateClosed && t.Cause == registry.CauseProbeSucceeded:
		o = outbound{key: t.Key, kind: kindClose, cause: t.Cause}
	default:
		return
	}
	f.dropLease(t.Key)
	select {
	case f.out <- o:
	default:
		f.st.droppedQueue.Add(1)
		f.remember(o)
	}
}

func (f *Fleet) dropLease(k registry.Key) {
	d := f.depFor(k)
	d.mu.Lock()
	d.lease = leaseNone
	d.mu.Unlock()
}

// remember keeps a decision Redis did not take, for when it returns.
func (f *Fleet) remember(o outbound) {
	d := f.depFor(o.key)
	d.mu.Lock()
	*d.slot(o.kind) = &o
	d.mu.Unlock()
}

// slot is where an unpublished decision of kind is kept. Caller holds mu.
func (d *dep) slot(kind string) **outbound {
	if kind == kindIsolate || kind == kindReset {
		return &d.unpublishedOp
	}
	return &d.unpublished
}

// forget drops the unpublished decision of o's kind once o was published
// (or refused for good). Caller holds mu.
func (d *dep) forget(o outbound) {
	if p := d.slot(o.kind); *p != nil && (*p).kind == o.kind {
		*p = nil
	}
}

func (f *Fleet) publisher() {
	defer f.wg.Done()
	for {
		select {
		case <-f.ctx.Done():
			return
		case o := <-f.out:
			f.publish(o)
		}
	}
}

// publish writes one decision. An open's hold is sent as what remains of it.
func (f *Fleet) publish(o outbound) bool {
	holdMs := int64(0)
	if o.kind == kindOpen {
		holdMs = o.until.Sub(f.clock.Now()).Milliseconds()
		if holdMs <= 0 {
			return true // over already
		}
	}
	if !f.subscribed.Load() {
		f.st.droppedRedis.Add(1)
		f.remember(o)
		return false
	}
	state, hold, lease := f.keys(o.key)
	var gs string
	err := f.do(func(ctx context.Context) error {
		var err error
		gs, err = publishScript.Run(ctx, f.client, []string{state, hold, lease},
			o.kind, holdMs, o.cause.String(), f.s.replica, f.s.stateTTL.Milliseconds(), f.channel(), string(o.key)).Text()
		return err
	})
	if err != nil {
		f.st.publishFailed.Add(1)
		f.remember(o)
		return false
	}
	if gs == "0" {
		// Refused: the fleet's dependency is isolated (publishScript). Not
		// kept for later either: the isolation reaches this replica.
		d := f.depFor(o.key)
		d.mu.Lock()
		d.forget(o)
		d.mu.Unlock()
		return true
	}
	f.st.published.Add(1)
	if g, err := strconv.ParseUint(gs, 10, 64); err == nil {
		d := f.depFor(o.key)
		d.mu.Lock()
		d.lastGen = max(d.lastGen, g)
		d.forget(o)
		if o.kind == kindIsolate || o.kind == kindReset {
			d.localOp = false
		}
		d.mu.Unlock()
	}
	return true
}

// flushUnpublished publishes decisions kept during an outage that still
// hold locally: an isolation whose breaker is still isolated, a reset whose
// breaker is not isolated (again), then an open whose breaker is still
// open, a close whose breaker is still closed.
func (f *Fleet) flushUnpublished() {
	f.deps.Range(func(k, v any) bool {
		d := v.(*dep)
		d.mu.Lock()
		op, o := d.unpublishedOp, d.unpublished
		d.unpublishedOp, d.unpublished = nil, nil
		d.mu.Unlock()
		for _, o := range []*outbound{op, o} {
			if o == nil {
				continue
			}
			b, ok := f.reg.Lookup(o.key)
			if !ok {
				return true
			}
			st := b.Status()
			switch {
			case o.kind == kindOpen && st.State == registry.StateOpen && !st.Isolated,
				o.kind == kindClose && st.State == registry.StateClosed,
				o.kind == kindIsolate && st.Isolated,
				o.kind == kindReset && !st.Isolated:
				f.publish(*o)
			}
		}
		return true
	})
}

// ---- the probe gate ----

// AllowProbe implements registry.ProbeGate: a replica probes only while it
// holds the fleet's probe lease. It answers from memory; taking the lease
// happens on the fleet's own goroutine. Once Redis has been unavailable for
// longer than a lease, every replica probes on its own.
func (f *Fleet) AllowProbe(k registry.Key) (bool, time.Duration) {
	now := f.clock.Now()
	if !f.Healthy() {
		// Redis unavailable: the lease cannot be taken, and perhaps not
		// even released. A lease won before (by this replica or another)
		// lasts at most a lease from its last renewal, and a probe under it
		// at most a lease from its start, which was no later than Redis
		// was last seen: once Redis has been unavailable that long, no
		// probe of the fleet's can still be out, and this replica probes
		// on its own. Before, each replica probed on its own from the
		// first failed command: a Redis slow for a few command timeouts
		// as a shared hold ended (every replica asking for the lease at
		// once) let every replica probe in that hold.
		since := f.downSince.Load()
		if since == 0 {
			f.downSince.CompareAndSwap(0, now.UnixNano())
			since = f.downSince.Load()
		}
		if wait := time.Unix(0, since).Add(f.leaseFor(k)).Sub(now); wait > 0 {
			f.requestLease(k) // the attempt is the Redis breaker's probe
			return false, min(wait, f.s.commandTimeout)
		}
		return true, 0
	}
	if f.downSince.Load() != 0 {
		f.downSince.Store(0)
	}
	d := f.depFor(k)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.lease {
	case leaseMine:
		if now.Before(d.until) {
			if !d.used {
				// The probe starts now: renew the lease to a full probe
				// timeout in the background.
				d.used = true
				select {
				case f.leaseReq <- leaseOp{key: k, renew: true}:
				default:
				}
			}
			return true, 0
		}
	case leaseOther:
		if now.Before(d.until) {
			return false, d.until.Sub(now)
		}
	case leaseAcquiring:
		return false, f.s.commandTimeout
	}
	d.lease = leaseAcquiring
	select {
	case f.leaseReq <- leaseOp{key: k}:
	default:
		d.lease = leaseNone
	}
	return false, f.s.commandTimeout
}

// requestLease asks the leaser to take k's lease unless a request is out
// or the lease is known (while Redis is unavailable: the request fails at
// once, or is the Redis breaker's probe when it half-opens).
func (f *Fleet) requestLease(k registry.Key) {
	d := f.depFor(k)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lease != leaseNone && d.lease != leaseOther {
		return
	}
	d.lease = leaseAcquiring
	select {
	case f.leaseReq <- leaseOp{key: k}:
	default:
		d.lease = leaseNone
	}
}

func (f *Fleet) leaser() {
	defer f.wg.Done()
	for {
		select {
		case <-f.ctx.Done():
			return
		case op := <-f.leaseReq:
			if op.renew {
				f.renewLease(op.key)
			} else {
				f.takeLease(op.key)
			}
		}
	}
}

// leaseFor is the lease of k: its probe's timeout (the breaker's
// ProbeTimeout: ProbeLease, shortened to the call timeout, the client's call
// budget and the slowness threshold), capped by WithMaxLease. A holder that
// dies stalls the fleet's probing at most that long.
func (f *Fleet) leaseFor(k registry.Key) time.Duration {
	var l time.Duration
	if b, ok := f.reg.Lookup(k); ok {
		l = b.ProbeTimeout()
	} else {
		p := f.reg.PolicyFor(k)
		l = p.ProbeLease
		if p.CallTimeout > 0 {
			l = min(l, p.CallTimeout)
		}
	}
	if f.s.maxLease > 0 {
		l = min(l, f.s.maxLease)
	}
	return max(l, time.Millisecond)
}

// runLease runs the lease script for k, as the replica knowing known.
func (f *Fleet) runLease(k registry.Key, known uint64, lease time.Duration) (code int64, gen uint64, kind string, ms int64, err error) {
	state, hold, lkey := f.keys(k)
	var res []any
	err = f.do(func(ctx context.Context) error {
		var err error
		res, err = leaseScript.Run(ctx, f.client, []string{state, hold, lkey},
			strconv.FormatUint(known, 10), f.s.replica, lease.Milliseconds()).Slice()
		return err
	})
	if err != nil {
		return 0, 0, "", 0, err
	}
	code, gen, kind, ms, ok := leaseReply(res)
	if !ok {
		return 0, 0, "", 0, errors.New("fleet: unexpected lease reply")
	}
	return code, gen, kind, ms, nil
}

func (f *Fleet) takeLease(k registry.Key) {
	d := f.depFor(k)
	d.mu.Lock()
	known := d.lastGen
	d.mu.Unlock()
	lease := f.leaseFor(k)
	start := f.clock.Now()
	code, gen, kind, ms, err := f.runLease(k, known, lease)
	d.mu.Lock()
	if d.lease != leaseAcquiring { // a decision arrived meanwhile
		d.mu.Unlock()
		return
	}
	d.lease = leaseNone
	if err != nil {
		d.mu.Unlock()
		return
	}
	switch code {
	case 1:
		d.lease, d.until, d.wonAt, d.used = leaseMine, start.Add(lease), start, false
		d.mu.Unlock()
		f.st.leasesWon.Add(1)
		f.heartbeat(k, lease)
		return
	case -1:
		d.lease, d.until = leaseOther, start.Add(time.Duration(ms)*time.Millisecond)
		d.mu.Unlock()
		f.st.leasesLost.Add(1)
		return
	case -3:
		d.lease, d.until = leaseOther, start.Add(time.Duration(ms)*time.Millisecond)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	// -2: this replica missed a decision; apply it as if it had arrived.
	f.apply(message{kind: kind, gen: gen, holdMs: ms, dep: string(k)}, true)
}

// heartbeat schedules the renewal of an unused lease of k.
func (f *Fleet) heartbeat(k registry.Key, lease time.Duration) {
	time.AfterFunc(max(lease/3, time.Millisecond), func() {
		if f.ctx.Err() != nil {
			return
		}
		select {
		case f.leaseReq <- leaseOp{key: k, renew: true}:
		default:
		}
	})
}

// renewLease renews this replica's lease of k: to a full probe timeout when
// a probe has just started under it, or as a heartbeat while it waits for a
// call. An unused lease is released after two lease periods, so a replica
// without traffic cannot keep the fleet from probing.
func (f *Fleet) renewLease(k registry.Key) {
	d := f.depFor(k)
	lease := f.leaseFor(k)
	now := f.clock.Now()
	d.mu.Lock()
	if d.lease != leaseMine {
		d.mu.Unlock()
		return
	}
	known, used := d.lastGen, d.used
	if !used && now.Sub(d.wonAt) >= 2*lease {
		d.lease = leaseNone
		d.mu.Unlock()
		_, _, lkey := f.keys(k)
		_ = f.do(func(ctx context.Context) error {
			return releaseScript.Run(ctx, f.client, []string{lkey}, f.s.replica).Err()
		})
		return
	}
	d.mu.Unlock()
	code, _, _, _, err := f.runLease(k, known, lease)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lease != leaseMine {
		return
	}
	if err != nil || code != 1 {
		if code != 0 || !used {
			d.lease = leaseNone // lost it (or the fleet moved on)
		}
		return
	}
	d.until = now.Add(lease)
	if !d.used {
		f.heartbeat(k, lease)
	}
}

func leaseReply(res []any) (code int64, gen uint64, kind string, ms int64, ok bool) {
	if len(res) != 4 {
		return 0, 0, "", 0, false
	}
	code, ok1 := res[0].(int64)
	gs, ok2 := res[1].(string)
	kind, _ = res[2].(string)
	ms, ok3 := res[3].(int64)
	gen, err := strconv.ParseUint(gs, 10, 64)
	return code, gen, kind, ms, ok1 && ok2 && ok3 && err == nil
}

// ---- inbound: Redis → local breakers ----

// apply applies a fleet decision to the local breaker, unless it is older
// than (or the same as) one already applied or published. An open never
// shortens a longer local hold (registry.Breaker.AdoptOpen). fromResync
// marks decisions read from keys rather than received.
func (f *Fleet) apply(m message, fromResync bool) {
	k := registry.Key(m.dep)
	if !k.Valid() {
		f.st.droppedMalformed.Add(1)
		return
	}
	b, ok := f.reg.Lookup(k)
	if !ok && f.reg.Configured(k) {
		b, _ = f.reg.Get(k)
		ok = b != nil
	}
	if !ok {
		// No breaker here (yet): a key from another replica's traffic or
		// configuration is not allowed to create one.
		f.st.droppedUnknown.Add(1)
		return
	}
	d := f.depFor(k)
	d.mu.Lock()
	switch {
	case m.gen < d.lastGen:
		d.mu.Unlock()
		if !fromResync {
			// A resync reading a stored decision older than one received
			// live since is routine, not a stale message.
			f.st.droppedStale.Add(1)
		}
		return
	case m.gen == d.lastGen:
		d.mu.Unlock()
		if !fromResync {
			f.st.droppedDuplicate.Add(1)
		}
		return
	}
	d.lastGen = m.gen
	d.lease = leaseNone
	keepLocal := fromResync && d.localOp && m.kind == kindReset
	if !fromResync {
		d.localOp = false // a decision received live is newer than the action
	}
	d.mu.Unlock()
	if m.origin == f.s.replica || keepLocal {
		return // this replica's own decision, in effect already; or see dep.localOp
	}
	switch m.kind {
	case kindOpen:
		if m.holdMs > 0 {
			b.AdoptOpen(time.Duration(m.holdMs) * time.Millisecond)
		}
	case kindClose:
		b.AdoptClose()
	case kindIsolate:
		b.AdoptIsolate()
	case kindReset:
		b.AdoptReset()
	}
	if fromResync {
		f.st.resyncApplied.Add(1)
	} else {
		f.st.applied.Add(1)
	}
}

func (f *Fleet) handle(payload string) {
	if strings.HasPrefix(payload, "2|") {
		f.handleOutcomes(payload)
		return
	}
	m, ok := parseMessage(payload)
	if !ok {
		f.st.droppedMalformed.Add(1)
		return
	}
	if m.origin == f.s.replica {
		f.st.droppedOwn.Add(1)
		return
	}
	f.st.received.Add(1)
	f.apply(m, false)
}

// subscriber keeps a subscription alive: subscribe, resync, receive; on a
// lost or silent connection, back off (exponential, jittered) and start
// again.
func (f *Fleet) subscriber() {
	defer f.wg.Done()
	// Buffered: a session's request for a resync is kept until the
	// resyncer takes it, even when it is busy or not yet waiting (an
	// unbuffered send with a default case was lost then).
	resync := make(chan struct{}, 1)
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() { defer rwg.Done(); f.resyncer(resync) }()
	defer rwg.Wait()
	backoff := f.s.minBackoff
	first := true
	for f.ctx.Err() == nil {
		if f.session(resync, first) {
			backoff = f.s.minBackoff
			first = false
		} else {
			backoff = min(backoff*2, f.s.maxBackoff)
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-f.ctx.Done():
		case <-time.After(wait):
		}
	}
}

// session runs one subscription. It returns whether the subscription was
// established.
func (f *Fleet) session(resync chan<- struct{}, first bool) bool {
	ps := f.client.Subscribe(f.ctx, f.channel())
	defer ps.Close()
	// A blocked read does not watch the context: closing unblocks it.
	stop := context.AfterFunc(f.ctx, func() { _ = ps.Close() })
	defer stop()
	// The confirmation proves the connection works (and authenticates).
	msg, err := ps.ReceiveTimeout(f.ctx, f.s.dialTimeout+f.s.commandTimeout)
	if err != nil {
		f.noteDown("subscribe", err)
		return false
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		return false
	}
	f.subscribed.Store(true)
	f.healthChanged()
	defer func() { f.subscribed.Store(false); f.healthChanged() }()
	if !first {
		f.st.reconnects.Add(1)
	}
	f.s.logger.Info("adkbreaker fleet: subscribed", "replica", f.s.replica, "prefix", f.s.prefix)
	f.flushUnpublished()
	select {
	case resync <- struct{}{}:
	default:
	}
	idle := max(f.s.resync, 4*f.s.commandTimeout)
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(f.ctx, idle)
		if err != nil {
			if f.ctx.Err() != nil {
				return true
			}
			if errClass(err) == "timeout" && !pinged {
				// Silent: ask. No pong within the next interval means dead.
				if err := ps.Ping(f.ctx); err == nil {
					pinged = true
					idle = 4 * f.s.commandTimeout
					continue
				}
			}
			f.noteDown("receive", err)
			return true
		}
		pinged, idle = false, max(f.s.resync, 4*f.s.commandTimeout)
		if m, ok := msg.(*redis.Message); ok {
			f.handle(m.Payload)
		}
	}
}

func (f *Fleet) noteDown(op string, err error) {
	if f.ctx.Err() != nil {
		return // closing, not an outage
	}
	f.st.redisErrors.Add(1)
	class := errClass(err)
	f.st.lastError.Store(class)
	now := time.Now()
	f.logMu.Lock()
	quiet := class == f.lastClass && now.Sub(f.lastLog) < 10*time.Second
	if !quiet {
		f.lastClass, f.lastLog = class, now
	}
	f.logMu.Unlock()
	if quiet {
		return // at most one line per cause every 10s
	}
	f.s.logger.Warn("adkbreaker fleet: redis unavailable; breaking per replica until it returns",
		"op", op, "error", class, "replica", f.s.replica)
}

// resyncer re-reads the fleet state of every local breaker: once per
// subscription and every resync interval while subscribed.
func (f *Fleet) resyncer(now <-chan struct{}) {
	t := time.NewTicker(f.s.resync)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-now:
		case <-f.kick:
		case <-t.C:
		}
		if f.subscribed.Load() {
			f.resync()
			f.flushUnpublished()
		}
	}
}

// maxGenerationAhead is how far a replica's known generation may run ahead
// of the decision Redis stores for the dependency. Every genuine decision
// is written to the state key before it is broadcast, so a replica can be
// ahead of a resync's read only by decisions published since the read (the
// generation is the Redis server's clock in microseconds: milliseconds
// ahead). A replica further ahead took its generation from a message that
// was never stored — a forged one on the channel — and would otherwise drop
// every genuine decision as stale until Redis's clock caught up.
const maxGenerationAhead = uint64(time.Minute / time.Microsecond)

// repairGeneration brings the generation known for k back to stored, the
// generation of Redis's stored decision, when it is too far ahead of it
// (see maxGenerationAhead); the stored decision is then applied as news.
func (f *Fleet) repairGeneration(k registry.Key, stored uint64) {
	d := f.depFor(k)
	d.mu.Lock()
	repaired := d.lastGen > stored && d.lastGen-stored > maxGenerationAhead
	if repaired {
		d.lastGen = stored - 1
	}
	d.mu.Unlock()
	if repaired {
		f.st.generationRepairs.Add(1)
		f.s.logger.Warn("adkbreaker fleet: the generation known for a dependency ran far ahead of the decision Redis stores (a message that was never stored, forged on the channel?); applying the stored decision",
			"dependency", string(k), "replica", f.s.replica)
	}
}

// resync reads, in one pipeline, the last decision and remaining hold of
// every local breaker, and applies those newer than what this replica knows.
func (f *Fleet) resync() {
	keys := f.reg.Keys()
	if len(keys) == 0 {
		return
	}
	type row struct {
		state *redis.SliceCmd
		hold  *redis.DurationCmd
	}
	rows := make([]row, len(keys))
	err := f.do(func(ctx context.Context) error {
		_, err := f.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				state, hold, _ := f.keys(k)
				rows[i] = row{p.HMGet(ctx, state, "gen", "kind", "origin"), p.PTTL(ctx, hold)}
			}
			return nil
		})
		return err
	})
	if err != nil {
		return
	}
	f.st.resyncs.Add(1)
	for i, k := range keys {
		v, err := rows[i].state.Result()
		if err != nil || len(v) != 3 || v[0] == nil {
			continue
		}
		gs, _ := v[0].(string)
		kind, _ := v[1].(string)
		origin, _ := v[2].(string)
		gen, err := strconv.ParseUint(gs, 10, 64)
		if err != nil {
			f.st.droppedMalformed.Add(1)
			continue
		}
		f.repairGeneration(k, gen)
		hold, _ := rows[i].hold.Result()
		ms := max(hold.Milliseconds(), 0)
		if kind == kindOpen && ms <= 0 {
			// The hold is over and no outcome is known: only the
			// generation is news.
			d := f.depFor(k)
			d.mu.Lock()
			d.lastGen = max(d.lastGen, gen)
			d.mu.Unlock()
			continue
		}
		f.apply(message{kind: kind, gen: gen, holdMs: ms, origin: origin, dep: string(k)}, true)
	}
}

// Resync asks for an immediate resync (it does not wait for it).
func (f *Fleet) Resync() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *Fleet) logRedisHealth(t registry.Transition) {
	f.healthChanged()
	switch t.To {
	case registry.StateOpen:
		f.s.logger.Warn("adkbreaker fleet: redis breaker open; breaking per replica", "retry_after", t.RetryAfter, "replica", f.s.replica)
	case registry.StateClosed:
		f.s.logger.Info("adkbreaker fleet: redis breaker closed; sharing again", "replica", f.s.replica)
		f.Resync()
	}
}
