package fleet

// Status is this replica's fleet state for the status page
// (statuspage.WithFleet(f.Status)): whether it is sharing through Redis, the
// kind of the last Redis error (never its text), and every counter of Stats
// by a fixed snake_case name. The names are always all present:
//
//	published, publish_failed, received, applied, resync_applied,
//	leases_won, leases_lost, resyncs, reconnects, redis_errors,
//	outcomes_published, outcomes_received, fleet_rate_trips, generation_repairs,
//	dropped.{stale, duplicate, own, malformed, unknown_dependency, queue_full,
//	  redis_unavailable, publish_failed},
//	outcomes_dropped.{own, duplicate, stale, malformed, unknown_dependency,
//	  redis_unavailable, publish_failed, over_cap, sharing_off}
//
// (the reasons are those of Stats.Dropped and Stats.OutcomesDropped).
func (f *Fleet) Status() (sharing bool, lastError string, counters map[string]uint64) {
	s := f.Stats()
	counters = map[string]uint64{
		"published":      s.Published,
		"publish_failed": s.PublishFailed,
		"received":       s.Received,
		"applied":        s.Applied,
		"resync_applied": s.ResyncApplied,
		"leases_won":     s.LeasesWon,
		"leases_lost":    s.LeasesLost,
		"resyncs":        s.Resyncs,
		"reconnects":     s.Reconnects,
		"redis_errors":   s.RedisErrors,

		"outcomes_published": s.OutcomesPublished,
		"outcomes_received":  s.OutcomesReceived,
		"fleet_rate_trips":   s.FleetRateTrips,
		"generation_repairs": s.GenerationRepairs,
	}
	for reason, n := range s.Dropped {
		counters["dropped."+reason] = n
	}
	for reason, n := range s.OutcomesDropped {
		counters["outcomes_dropped."+reason] = n
	}
	return s.Healthy, s.LastError, counters
}
