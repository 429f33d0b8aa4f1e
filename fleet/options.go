package fleet

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
)

// Defaults of the options.
const (
	DefaultPrefix         = "adkbreaker"
	DefaultDialTimeout    = 500 * time.Millisecond
	DefaultCommandTimeout = 100 * time.Millisecond
	DefaultResyncInterval = 5 * time.Second
	DefaultMinBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultStateTTL       = 24 * time.Hour
	// DefaultShareInterval is how often a replica shares its outcome
	// counts with the fleet (WithShareInterval).
	DefaultShareInterval = 50 * time.Millisecond
	// MaxShareInterval is the longest share interval accepted.
	MaxShareInterval = time.Minute
	// DefaultQueue bounds the transitions waiting to be published.
	DefaultQueue = 1024
)

// Option configures New.
type Option interface{ apply(*settings) }

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

type settings struct {
	addr           string
	username       string
	password       string
	db             int
	tls            *tls.Config
	prefix         string
	replica        string
	dialTimeout    time.Duration
	commandTimeout time.Duration
	resync         time.Duration
	minBackoff     time.Duration
	maxBackoff     time.Duration
	maxLease       time.Duration
	stateTTL       time.Duration
	queue          int
	share          time.Duration // 0: outcome sharing off
	shareSet       bool
	localActions   bool // operator Isolate/Reset stay on this replica
	logger         *slog.Logger
	meter          metric.MeterProvider
	hooks          []redis.Hook
	errs           []error
}

// WithAddress sets the Redis server as host:port. Required. A URL or an
// address carrying credentials is refused: pass them with WithCredentials.
func WithAddress(addr string) Option {
	return optionFunc(func(s *settings) { s.addr = addr })
}

// WithCredentials sets the Redis ACL user (empty for the default user) and
// password. They are sent to Redis only, and never appear in logs, errors
// or metrics.
func WithCredentials(username, password string) Option {
	return optionFunc(func(s *settings) { s.username, s.password = username, password })
}

// WithDB selects the Redis logical database. If 0, database 0.
func WithDB(n int) Option {
	return optionFunc(func(s *settings) { s.db = n })
}

// WithTLS connects with TLS using c (nil: plain TCP, the default).
func WithTLS(c *tls.Config) Option {
	return optionFunc(func(s *settings) { s.tls = c })
}

// WithPrefix namespaces every key and the channel: keys are
// "<prefix>:state:<dependency>", "<prefix>:hold:<dependency>",
// "<prefix>:lease:<dependency>", the channel is "<prefix>:events". Replicas
// share state only with replicas using the same prefix. If empty,
// DefaultPrefix.
func WithPrefix(p string) Option {
	return optionFunc(func(s *settings) { s.prefix = p })
}

// WithReplicaID names this replica in messages and probe leases (1–64
// printable bytes, no '|'). If empty, a random ID. IDs must be unique in
// the fleet: a replica ignores messages carrying its own ID.
func WithReplicaID(id string) Option {
	return optionFunc(func(s *settings) { s.replica = id })
}

// WithTimeouts sets the dial timeout and the per-command timeout (read and
// write). If 0, DefaultDialTimeout and DefaultCommandTimeout. No tool call
// ever waits for either: Redis is only used off the admission path.
func WithTimeouts(dial, command time.Duration) Option {
	return optionFunc(func(s *settings) { s.dialTimeout, s.commandTimeout = dial, command })
}

// WithResyncInterval sets how often current holds are re-read from Redis,
// which repairs lost pub/sub messages and teaches breakers created after a
// trip. If 0, DefaultResyncInterval.
func WithResyncInterval(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.resync = d })
}

// WithReconnectBackoff sets the bounds of the exponential, jittered backoff
// between reconnection attempts. If 0, DefaultMinBackoff and
// DefaultMaxBackoff.
func WithReconnectBackoff(lo, hi time.Duration) Option {
	return optionFunc(func(s *settings) { s.minBackoff, s.maxBackoff = lo, hi })
}

// WithMaxLease caps the fleet probe lease. The lease of a dependency is its
// breaker's probe timeout (registry.Breaker.ProbeTimeout: the policy's
// ProbeLease, shortened to its CallTimeout, a call budget and the slowness
// threshold), capped by this. If 0, the probe timeout alone.
func WithMaxLease(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.maxLease = d })
}

// WithStateTTL sets how long a dependency's last fleet decision (its
// generation) is kept in Redis after it was written. If 0, DefaultStateTTL.
func WithStateTTL(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.stateTTL = d })
}

// WithQueue bounds the local transitions waiting to be published; past it,
// transitions are dropped and counted. If 0, DefaultQueue.
func WithQueue(n int) Option {
	return optionFunc(func(s *settings) { s.queue = n })
}

// WithShareInterval sets how often this replica publishes the outcome
// counts of its breakers (one message for every dependency whose counts
// changed), so that the fleet's failure rate can open a breaker before any
// one replica has seen enough calls alone (docs/fleet.md, "Outcome
// sharing"). Shorter intervals trip sooner and publish more messages; at
// least 1ms, at most MaxShareInterval. 0 turns outcome sharing off, like
// WithoutOutcomeSharing. If not given, DefaultShareInterval.
func WithShareInterval(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.share, s.shareSet = d, true })
}

// WithoutOutcomeSharing turns outcome sharing off: each replica's failure
// window is its own (trips and probes are still shared).
func WithoutOutcomeSharing() Option {
	return optionFunc(func(s *settings) { s.share, s.shareSet = 0, true })
}

// WithLocalOperatorActions keeps operator actions (Registry.Isolate and
// Registry.Reset, and the status page's buttons) on the replica where they
// were taken. By default an operator who isolates or resets a dependency on
// one replica does so for the whole fleet.
func WithLocalOperatorActions() Option {
	return optionFunc(func(s *settings) { s.localActions = true })
}

// WithLogger sets the logger for connection state changes (one line per
// change, never a credential or a Redis error text). If nil, slog.Default().
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(s *settings) { s.logger = l })
}

// WithMeterProvider records the fleet's metrics (docs/telemetry.md) with mp.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(s *settings) { s.meter = mp })
}

// WithRedisHook adds a go-redis hook to the fleet's client, to instrument
// it (tracing, command counts). Hooks see commands, never a tool call: the
// fleet sends none on the admission path.
func WithRedisHook(h redis.Hook) Option {
	return optionFunc(func(s *settings) {
		if h == nil {
			s.errs = append(s.errs, errors.New("redis hook: must not be nil"))
			return
		}
		s.hooks = append(s.hooks, h)
	})
}

func (s *settings) validate() error {
	errs := s.errs
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case s.addr == "":
		bad("address: required (host:port)")
	case strings.Contains(s.addr, "://") || strings.Contains(s.addr, "@"):
		// Do not echo it: it may carry a password.
		bad("address: want host:port, got a URL or user info (%d bytes); pass credentials with WithCredentials or password_env", len(s.addr))
	case !strings.Contains(s.addr, ":"):
		bad("address: want host:port, got %q", s.addr)
	}
	if s.db < 0 {
		bad("db: must be ≥ 0, got %d", s.db)
	}
	if len(s.prefix) > 64 || strings.ContainsAny(s.prefix, " \t\r\n{}") || !printable(s.prefix) {
		bad("prefix: want at most 64 printable bytes without spaces or braces, got %q", s.prefix)
	}
	if len(s.replica) > maxReplicaID || strings.Contains(s.replica, "|") || !printable(s.replica) || strings.Contains(s.replica, " ") {
		bad("replica id: want 1–64 printable bytes without spaces or '|', got %q", s.replica)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial timeout", s.dialTimeout}, {"command timeout", s.commandTimeout}, {"resync interval", s.resync},
		{"min backoff", s.minBackoff}, {"max backoff", s.maxBackoff}, {"max lease", s.maxLease}, {"state ttl", s.stateTTL}} {
		if d.v < 0 {
			bad("%s: must be ≥ 0, got %s", d.name, d.v)
		}
	}
	if s.maxLease > 0 && s.maxLease < time.Millisecond {
		bad("max lease: must be at least 1ms, got %s", s.maxLease)
	}
	if s.minBackoff > 0 && s.maxBackoff > 0 && s.minBackoff > s.maxBackoff {
		bad("reconnect backoff: min %s is above max %s", s.minBackoff, s.maxBackoff)
	}
	if s.queue < 0 {
		bad("queue: must be ≥ 0, got %d", s.queue)
	}
	if s.share < 0 || (s.share > 0 && s.share < time.Millisecond) || s.share > MaxShareInterval {
		bad("share interval: want 0 (off) or 1ms to %s, got %s", MaxShareInterval, s.share)
	}
	return errors.Join(errs...)
}

func (s *settings) defaults() {
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.dialTimeout == 0 {
		s.dialTimeout = DefaultDialTimeout
	}
	if s.commandTimeout == 0 {
		s.commandTimeout = DefaultCommandTimeout
	}
	if s.resync == 0 {
		s.resync = DefaultResyncInterval
	}
	if s.minBackoff == 0 {
		s.minBackoff = min(DefaultMinBackoff, max(s.maxBackoff, 1))
	}
	if s.maxBackoff == 0 {
		s.maxBackoff = max(DefaultMaxBackoff, s.minBackoff)
	}
	if s.stateTTL == 0 {
		s.stateTTL = DefaultStateTTL
	}
	if s.queue == 0 {
		s.queue = DefaultQueue
	}
	if !s.shareSet {
		s.share = DefaultShareInterval
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
