// Package shed holds the rate-limit arithmetic of model endpoints, which
// names no ADK type: the client-side adaptive throttle (Throttle) and the
// test that tells an endpoint's exhaustion from a partial rate-limit storm
// (Exhaustion). The failover package of each ADK line builds one of each
// per endpoint; docs/failover.md explains both.
package shed
