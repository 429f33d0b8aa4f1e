package fleet

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

type counters struct {
	published, publishFailed                   atomic.Uint64
	received, applied, resyncApplied           atomic.Uint64
	droppedStale, droppedDuplicate, droppedOwn atomic.Uint64
	droppedMalformed, droppedUnknown           atomic.Uint64
	droppedQueue, droppedRedis                 atomic.Uint64
	leasesWon, leasesLost                      atomic.Uint64
	resyncs, reconnects, redisErrors           atomic.Uint64
	lastError                                  atomic.Value // string: an errClass

	outPublished, outReceived, outPublishFailed         atomic.Uint64
	outDroppedOwn, outDroppedDuplicate, outDroppedStale atomic.Uint64
	outDroppedMalformed, outDroppedUnknown              atomic.Uint64
	outDroppedRedis, outDroppedCap, outDroppedOff       atomic.Uint64
	fleetRateTrips                                      atomic.Uint64
	generationRepairs                                   atomic.Uint64
}

// Stats are the fleet's counters since New.
type Stats struct {
	// Published: local decisions (opens and closes) written to Redis.
	Published uint64
	// PublishFailed: decisions Redis did not take (kept, and published when
	// Redis returns if they still hold).
	PublishFailed uint64
	// Received: decisions of other replicas received on the channel.
	Received uint64
	// Applied: received decisions applied to a local breaker;
	// ResyncApplied: decisions read back from keys and applied.
	Applied, ResyncApplied uint64
	// Dropped counts messages and decisions not applied or not sent, by
	// reason: stale (a message older than one applied; a resync reading an
	// older stored decision is not counted), duplicate, own (this replica's
	// echo), malformed, unknown_dependency (no local breaker),
	// queue_full and redis_unavailable (not published), publish_failed (Redis
	// did not take it; the same count as PublishFailed).
	Dropped map[string]uint64
	// LeasesWon and LeasesLost count fleet probe leases this replica took,
	// or found held by another replica.
	LeasesWon, LeasesLost uint64
	// Resyncs counts completed reads of current holds; Reconnects counts
	// subscriptions after the first; RedisErrors counts failed operations.
	Resyncs, Reconnects, RedisErrors uint64
	// LastError is the kind of the last Redis error ("timeout", "refused",
	// "auth", "disconnected", …; never its text), or "".
	LastError string
	// Healthy: subscribed, and the breaker around Redis is closed.
	Healthy bool

	// OutcomesPublished: outcome messages this replica wrote to the channel
	// (at most one per share interval, for every dependency whose counts
	// changed); OutcomesReceived: other replicas' outcome messages counted
	// into this replica's fleet windows.
	OutcomesPublished, OutcomesReceived uint64
	// OutcomesDropped counts outcome messages not sent or not counted, by
	// reason: own (this replica's echo), duplicate, stale (an older
	// sequence than one counted from the same replica), malformed,
	// redis_unavailable (not subscribed), publish_failed (Redis refused or
	// timed out: the counts are lost, never retried), sharing_off (received
	// while this replica does not share outcomes); and dependencies left
	// out of a message: over_cap (more than MaxOutcomeKeys changed in one
	// interval), unknown_dependency (no local breaker).
	OutcomesDropped map[string]uint64
	// FleetRateTrips counts local breakers this replica opened because the
	// fleet's failure rate met the policy's gate (cause fleet_rate).
	FleetRateTrips uint64
	// GenerationRepairs counts dependencies whose known generation a resync
	// found more than a minute ahead of the decision Redis stores: it came
	// from a message that was never stored (forged on the channel), and
	// would have made this replica drop genuine decisions as stale. The
	// stored decision was applied instead.
	GenerationRepairs uint64
}

// Stats returns a snapshot of the counters.
func (f *Fleet) Stats() Stats {
	c := &f.st
	s := Stats{
		Published: c.published.Load(), PublishFailed: c.publishFailed.Load(),
		Received: c.received.Load(), Applied: c.applied.Load(), ResyncApplied: c.resyncApplied.Load(),
		Dropped: map[string]uint64{
			"stale": c.droppedStale.Load(), "duplicate": c.droppedDuplicate.Load(), "own": c.droppedOwn.Load(),
			"malformed": c.droppedMalformed.Load(), "unknown_dependency": c.droppedUnknown.Load(),
			"queue_full": c.droppedQueue.Load(), "redis_unavailable": c.droppedRedis.Load(),
			"publish_failed": c.publishFailed.Load(),
		},
		LeasesWon: c.leasesWon.Load(), LeasesLost: c.leasesLost.Load(),
		Resyncs: c.resyncs.Load(), Reconnects: c.reconnects.Load(), RedisErrors: c.redisErrors.Load(),
		Healthy: f.Healthy(),

		OutcomesPublished: c.outPublished.Load(), OutcomesReceived: c.outReceived.Load(),
		OutcomesDropped: map[string]uint64{
			"own": c.outDroppedOwn.Load(), "duplicate": c.outDroppedDuplicate.Load(), "stale": c.outDroppedStale.Load(),
			"malformed": c.outDroppedMalformed.Load(), "unknown_dependency": c.outDroppedUnknown.Load(),
			"redis_unavailable": c.outDroppedRedis.Load(), "publish_failed": c.outPublishFailed.Load(),
			"over_cap": c.outDroppedCap.Load(), "sharing_off": c.outDroppedOff.Load(),
		},
		FleetRateTrips: c.fleetRateTrips.Load(), GenerationRepairs: c.generationRepairs.Load(),
	}
	s.LastError, _ = c.lastError.Load().(string)
	return s
}

// Metric names (docs/telemetry.md).
const (
	MetricMessages        = "adkbreaker.fleet.messages"
	MetricDropped         = "adkbreaker.fleet.messages.dropped"
	MetricLeases          = "adkbreaker.fleet.probe_leases"
	MetricRedisUp         = "adkbreaker.fleet.redis.up"
	MetricRedisErrors     = "adkbreaker.fleet.redis.errors"
	MetricRedisReconnects = "adkbreaker.fleet.redis.reconnects"
	MetricOutcomes        = "adkbreaker.fleet.outcomes"
	MetricOutcomesDropped = "adkbreaker.fleet.outcomes.dropped"
	MetricRateTrips       = "adkbreaker.fleet.rate_trips"
	MetricGenRepairs      = "adkbreaker.fleet.generation_repairs"
)

func (f *Fleet) registerMetrics(mp metric.MeterProvider) error {
	m := mp.Meter("github.com/adkbreaker/adkbreaker/fleet")
	msgs, err1 := m.Int64ObservableCounter(MetricMessages, metric.WithDescription("Fleet decisions published to and received from other replicas."), metric.WithUnit("{message}"))
	dropped, err2 := m.Int64ObservableCounter(MetricDropped, metric.WithDescription("Fleet decisions not applied or not sent, by reason."), metric.WithUnit("{message}"))
	leases, err3 := m.Int64ObservableCounter(MetricLeases, metric.WithDescription("Fleet probe leases won or lost by this replica."), metric.WithUnit("{lease}"))
	up, err4 := m.Int64ObservableGauge(MetricRedisUp, metric.WithDescription("1 while the fleet is sharing through Redis, 0 while it breaks per replica."))
	errs, err5 := m.Int64ObservableCounter(MetricRedisErrors, metric.WithDescription("Failed Redis operations (by kind only; never error text)."), metric.WithUnit("{error}"))
	recon, err6 := m.Int64ObservableCounter(MetricRedisReconnects, metric.WithDescription("Re-subscriptions after a lost Redis connection."), metric.WithUnit("{reconnect}"))
	outs, err7 := m.Int64ObservableCounter(MetricOutcomes, metric.WithDescription("Outcome-count messages published to and received from other replicas."), metric.WithUnit("{message}"))
	outDropped, err8 := m.Int64ObservableCounter(MetricOutcomesDropped, metric.WithDescription("Outcome-count messages (or their dependencies) not sent or not counted, by reason."), metric.WithUnit("{message}"))
	rateTrips, err9 := m.Int64ObservableCounter(MetricRateTrips, metric.WithDescription("Local breakers opened because the fleet's failure rate met the policy's gate (cause fleet_rate)."), metric.WithUnit("{trip}"))
	repairs, err10 := m.Int64ObservableCounter(MetricGenRepairs, metric.WithDescription("Dependencies whose known fleet generation a resync found far ahead of Redis's stored decision (a forged message on the channel), brought back."), metric.WithUnit("{repair}"))
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8, err9, err10} {
		if err != nil {
			return err
		}
	}
	attr := func(k, v string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := f.Stats()
		o.ObserveInt64(msgs, int64(s.Published), attr("direction", "published"))
		o.ObserveInt64(msgs, int64(s.Received), attr("direction", "received"))
		for reason, n := range s.Dropped {
			o.ObserveInt64(dropped, int64(n), attr("reason", reason))
		}
		o.ObserveInt64(leases, int64(s.LeasesWon), attr("result", "won"))
		o.ObserveInt64(leases, int64(s.LeasesLost), attr("result", "lost"))
		v := int64(0)
		if s.Healthy {
			v = 1
		}
		o.ObserveInt64(up, v)
		o.ObserveInt64(errs, int64(s.RedisErrors))
		o.ObserveInt64(recon, int64(s.Reconnects))
		o.ObserveInt64(outs, int64(s.OutcomesPublished), attr("direction", "published"))
		o.ObserveInt64(outs, int64(s.OutcomesReceived), attr("direction", "received"))
		for reason, n := range s.OutcomesDropped {
			o.ObserveInt64(outDropped, int64(n), attr("reason", reason))
		}
		o.ObserveInt64(rateTrips, int64(s.FleetRateTrips))
		o.ObserveInt64(repairs, int64(s.GenerationRepairs))
		return nil
	}, msgs, dropped, leases, up, errs, recon, outs, outDropped, rateTrips, repairs)
	return err
}
