package statuspage

import (
	"math"
	"math/bits"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Rates are computed from the registry's own counters, sampled by the
// Handler about once a second (and on every document) and kept per
// dependency in fixed-size rings: RatePoints intervals of RateInterval,
// ten minutes in all. Memory per dependency is fixed, whatever the traffic.
const (
	// RateInterval is the length of one point of the rate series.
	RateInterval = 10 * time.Second
	// RatePoints is how many points a series holds, the current interval
	// included.
	RatePoints = 60
	// RecentRefusals is how many refusal entries a dependency keeps.
	RecentRefusals = 8
	// latencyTarget is about how many calls a second are measured for the
	// p99 latency; busier dependencies are sampled (registry.SampleLatency).
	latencyTarget = 100
	sampleEvery   = time.Second
)

// counters are one read of a breaker's cumulative counters.
type counters struct {
	reported [3]uint64 // by registry.Outcome
	refused  [registry.NumRefusals]uint64
	hist     registry.LatencyHistogram
}

func readCounters(b *registry.Breaker) counters {
	return counters{reported: b.Reported(), refused: b.Refusals(), hist: b.Latencies()}
}

// ratePoint is one closed interval.
type ratePoint struct {
	calls, failPct, p99ms, shortCircuits, rejections float64
	hasFail, hasP99                                  bool
}

// refusalEvent is a change in a refusal counter between two samples.
type refusalEvent struct {
	at     time.Time
	reason registry.Refusal
	cause  registry.Cause
	count  uint64
}

// series is one dependency's sampled history. Guarded by Handler.rmu.
type series struct {
	b      *registry.Breaker
	bucket int64 // the current interval (unix time / RateInterval)
	first  int64 // the first interval sampled
	base   counters
	baseAt time.Time
	last   counters // at the latest sample, for refusal deltas
	lastAt time.Time
	// tuneAt and tuneCalls are when the latency sampling was last tuned and
	// the calls reported then.
	tuneAt    time.Time
	tuneCalls uint64
	points    [RatePoints - 1]ratePoint // closed intervals; points[bucket % len]
	refs      [RecentRefusals]refusalEvent
	nrefs     int // refusal events recorded, ever (refs is a ring)
}

func bucketOf(t time.Time) int64 { return t.UnixNano() / int64(RateInterval) }

// sample reads every breaker's counters into its series. It is cheap: a
// few dozen atomic loads per dependency.
func (h *Handler) sample() {
	now := h.reg.Clock().Now()
	h.rmu.Lock()
	defer h.rmu.Unlock()
	select {
	case <-h.closed:
		return // closed: latency sampling stays off
	default:
	}
	for key, b := range h.reg.All() {
		s := h.series[key]
		cur := readCounters(b)
		if s == nil {
			b.SampleLatency(1)
			cur = readCounters(b)
			bk := bucketOf(now)
			s = &series{b: b, bucket: bk, first: bk, base: cur, baseAt: now, last: cur, lastAt: now, tuneAt: now, tuneCalls: total(cur.reported)}
			h.series[key] = s
			continue
		}
		if now.Before(s.lastAt) {
			continue // the clock stepped back: wait for it
		}
		h.noteRefusals(s, b, cur, now)
		if bk := bucketOf(now); bk > s.bucket {
			s.close(cur, now, bk)
		}
		// Tune the latency sampling to about latencyTarget calls a second
		// (documents sample too, so samples may come closer than that).
		if dt := now.Sub(s.tuneAt).Seconds(); dt >= 1 {
			n := total(cur.reported)
			b.SampleLatency(samplingFor(float64(n-min(s.tuneCalls, n)) / dt))
			s.tuneAt, s.tuneCalls = now, n
		}
		s.last, s.lastAt = cur, now
	}
}

// noteRefusals records the refusal counters that moved since the last
// sample, with the cause the breaker gives now.
func (h *Handler) noteRefusals(s *series, b *registry.Breaker, cur counters, now time.Time) {
	var cause registry.Cause
	read := false
	for r := registry.RefusedOpen; int(r) < registry.NumRefusals; r++ {
		d := cur.refused[r] - min(s.last.refused[r], cur.refused[r])
		if d == 0 {
			continue
		}
		if !read {
			cause, read = b.Status().Cause, true
		}
		c := cause
		if r == registry.RefusedSaturated {
			c = 0 // a full bulkhead is no open breaker's doing
		}
		// Samples come often (documents sample too): a change like the
		// latest one, within an interval of it, adds to it.
		if s.nrefs > 0 {
			if e := &s.refs[(s.nrefs-1)%RecentRefusals]; e.reason == r && e.cause == c && now.Sub(e.at) < RateInterval {
				e.at, e.count = now, e.count+d
				continue
			}
		}
		s.refs[s.nrefs%RecentRefusals] = refusalEvent{at: now, reason: r, cause: c, count: d}
		s.nrefs++
	}
}

// close ends the current interval at now, in interval bk: its counts since
// base, spread evenly over every interval the samples missed.
func (s *series) close(cur counters, now time.Time, bk int64) {
	p := rateOf(s.base, cur, now.Sub(s.baseAt))
	from := max(s.bucket, bk-int64(len(s.points)))
	for i := from; i < bk; i++ {
		s.points[i%int64(len(s.points))] = p
	}
	s.bucket, s.base, s.baseAt = bk, cur, now
}

// rateOf is the rates between two reads of the counters, over d.
func rateOf(a, c counters, d time.Duration) ratePoint {
	secs := max(d.Seconds(), 1) // a fresh interval is not a burst
	var p ratePoint
	ok := c.reported[registry.Success] - min(a.reported[registry.Success], c.reported[registry.Success])
	fail := c.reported[registry.Failure] - min(a.reported[registry.Failure], c.reported[registry.Failure])
	calls := total(c.reported) - min(total(a.reported), total(c.reported))
	p.calls = round3(float64(calls) / secs)
	if ok+fail > 0 {
		p.failPct, p.hasFail = round3(100*float64(fail)/float64(ok+fail)), true
	}
	var sc, rej uint64
	for r := registry.RefusedOpen; int(r) < registry.NumRefusals; r++ {
		n := c.refused[r] - min(a.refused[r], c.refused[r])
		if r == registry.RefusedSaturated {
			rej += n
		} else {
			sc += n
		}
	}
	p.shortCircuits, p.rejections = round3(float64(sc)/secs), round3(float64(rej)/secs)
	if hd := c.hist.Sub(a.hist); hd.Total() > 0 {
		p.p99ms, p.hasP99 = round3(float64(hd.Quantile(0.99))/float64(time.Millisecond)), true
	}
	return p
}

func total(r [3]uint64) uint64 { return r[0] + r[1] + r[2] }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// samplingFor is the latency sampling (registry.SampleLatency) that
// measures about latencyTarget of rate calls a second.
func samplingFor(rate float64) uint32 {
	if rate <= latencyTarget {
		return 1
	}
	n := uint32(math.Ceil(min(rate/latencyTarget, 1<<20)))
	return 1 << bits.Len32(n-1)
}

// Rates are a dependency's rate series over the last ten minutes, one point
// per RateInterval, oldest first, starting with the first interval the page
// saw the dependency in (so a young dependency has a short series). The
// last point is the current interval so far. Failure percentages and
// latencies are null where no call ended in the interval.
type Rates struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	// Start is when the first point's interval began.
	Start time.Time `json:"start"`
	// CallsPerSecond counts calls that ran (every reported outcome).
	CallsPerSecond []float64 `json:"calls_per_second"`
	// FailurePercent is failures among successes and failures.
	FailurePercent []*float64 `json:"failure_percent"`
	// P99LatencyMs is the 99th percentile of sampled call latency, to the
	// upper bound of its histogram bucket (within a factor of 1.5).
	P99LatencyMs []*float64 `json:"p99_latency_ms"`
	// ShortCircuitsPerSecond counts calls refused because the breaker was
	// open, half-open and busy, or isolated.
	ShortCircuitsPerSecond []float64 `json:"short_circuits_per_second"`
	// RejectionsPerSecond counts calls the bulkhead (MaxConcurrent)
	// refused.
	RejectionsPerSecond []float64 `json:"rejections_per_second"`
}

// Refusal is a change of one refusal counter seen by the page's samples;
// changes of the same reason and cause within RateInterval of each other
// are added up, At being the latest.
type Refusal struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"` // circuit_open, half_open_busy, isolated, saturated
	// Cause is what opened the breaker at the time ("" for saturated).
	Cause string `json:"cause,omitempty"`
	Count uint64 `json:"count"`
}

// ratesOf builds the document's view of s at now. Caller holds rmu.
func (s *series) rates(now time.Time) (Rates, []Refusal) {
	first := max(s.first, s.bucket-int64(len(s.points)))
	n := int(s.bucket-first) + 1
	r := Rates{
		IntervalSeconds: RateInterval.Seconds(), Start: time.Unix(0, first*int64(RateInterval)).UTC(),
		CallsPerSecond: make([]float64, 0, n), FailurePercent: make([]*float64, 0, n), P99LatencyMs: make([]*float64, 0, n),
		ShortCircuitsPerSecond: make([]float64, 0, n), RejectionsPerSecond: make([]float64, 0, n),
	}
	add := func(p ratePoint) {
		r.CallsPerSecond = append(r.CallsPerSecond, p.calls)
		r.ShortCircuitsPerSecond = append(r.ShortCircuitsPerSecond, p.shortCircuits)
		r.RejectionsPerSecond = append(r.RejectionsPerSecond, p.rejections)
		var f, l *float64
		if p.hasFail {
			f = &p.failPct
		}
		if p.hasP99 {
			l = &p.p99ms
		}
		r.FailurePercent = append(r.FailurePercent, f)
		r.P99LatencyMs = append(r.P99LatencyMs, l)
	}
	for i := first; i < s.bucket; i++ {
		add(s.points[i%int64(len(s.points))])
	}
	add(rateOf(s.base, s.last, s.lastAt.Sub(s.baseAt)))

	var refs []Refusal
	for i := max(0, s.nrefs-RecentRefusals); i < s.nrefs; i++ {
		e := s.refs[i%RecentRefusals]
		x := Refusal{At: e.at.UTC(), Reason: e.reason.String(), Count: e.count}
		if e.cause != 0 {
			x.Cause = e.cause.String()
		}
		refs = append(refs, x)
	}
	return r, refs
}
