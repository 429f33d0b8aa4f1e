package failover

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/internal/shed"
	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Endpoint is one model endpoint of a chain: a model.LLM and the identity of
// the breaker that guards it.
type Endpoint struct {
	// LLM calls the endpoint. Required. It receives a clone of the request
	// with Model set to ModelName; it may mutate that clone.
	LLM model.LLM
	// Key is the breaker identity: model name plus backend and location or
	// base URL, so that "the model is down" in one region does not trip
	// another. If empty, EndpointKey(ModelName, <LLM's backend>, "").
	// Endpoints built from configuration use config.ModelEndpoint.Identity.
	Key registry.Key
	// ModelName is the model name sent to the endpoint (LLMRequest.Model).
	// If empty, LLM.Name().
	ModelName string
	// Timeout bounds one call: the wait for a unary answer, or for the first
	// chunk of a stream. When it expires the call counts as a failure of the
	// endpoint and the chain moves on. If 0, none of ours (the caller's
	// deadline still applies, and is never counted against the endpoint).
	//
	// With a Timeout, the call runs on a goroutine of its own, so the
	// Timeout bounds the caller even when the endpoint ignores its context:
	// at the deadline the Model stops waiting (the call is abandoned, counted
	// in MetricAbandoned and Model.Abandoned), fails over, and drops
	// whatever the abandoned call yields later; its goroutine ends when the
	// endpoint's call returns.
	Timeout time.Duration
	// MaxAbandoned caps this endpoint's abandoned calls still running: while
	// that many are, the endpoint is skipped (reason timeout) instead of
	// called, so an endpoint that hangs without honouring its context cannot
	// pile up goroutines. If 0, DefaultMaxAbandoned; at most 65536.
	MaxAbandoned int
	// Throttle, if set, turns on client-side adaptive throttling of this
	// endpoint (see Throttle): under a partial rate-limit storm a share of
	// calls proportional to what the endpoint refuses goes straight to the
	// next endpoint. Off by default. Not on the last endpoint of a chain,
	// which has nowhere to send shed calls.
	Throttle *Throttle
	// FirstOutputTimeout bounds the wait for the endpoint's first content
	// part (a thought part counts; response headers, SSE keep-alives and
	// chunks without content do not), or for its unary answer. When it
	// passes, the call is a stall: a failure of the endpoint (reason
	// stall), and the chain moves on. If 0, DefaultFirstOutputTimeout;
	// negative: off.
	FirstOutputTimeout time.Duration
	// IdleTimeout bounds the wait between two content parts of a stream.
	// When it passes, the call ends with a *StallError saying how much was
	// streamed, and counts as a failure of the endpoint (reason stall). If
	// 0, DefaultIdleTimeout; negative: off.
	IdleTimeout time.Duration
}

// EndpointKey returns the breaker key of an endpoint, in the format of
// config.ModelEndpoint.Identity: "model:<model>@<backend>/<location or base URL>".
// A base URL is reduced to scheme://host[:port][/path]
// (config.SafeBaseURL): a key names the endpoint in errors, logs and metric
// attributes, so it never carries user info or a query.
func EndpointKey(modelName, backend, where string) registry.Key {
	if strings.Contains(where, "://") {
		where = config.SafeBaseURL(where)
	}
	return registry.Key("model:" + modelName + "@" + backend + "/" + where)
}

// keyProblem says why an endpoint key must not be used, without repeating
// it, or returns "". A key appears in failover.Error messages (which an
// agent-as-tool passes to another model), logs and metric attributes.
func keyProblem(k registry.Key) string {
	s := string(k)
	if i := strings.Index(s, "://"); i >= 0 {
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		if u, err := url.Parse(s[start:]); err != nil || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return "carries a URL with user info, a query or a fragment (not shown); build keys with EndpointKey, which keeps scheme, host and path only"
		}
	}
	if redact.Sensitive(s) {
		return "looks like it holds a credential (not shown); name endpoints by model, backend and host only"
	}
	return ""
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// Model is a model.LLM that calls an ordered chain of endpoints, each behind
// its own breaker in a shared registry, and fails over to the next endpoint
// when one is open or fails before answering. It also implements
// callbacks.ModelGuard, so the adkbreaker plugin can end a turn readably when
// every endpoint is unavailable (plugin.WithModelGuard).
//
// A Model is safe for concurrent use.
type Model struct {
	name     string
	reg      *registry.Registry
	clock    registry.Clock
	eps      []endpoint
	log      *slog.Logger
	logs     *loglimit.Limiter
	classify Classifier
	quotaLoc *time.Location
	onEvent  func(context.Context, Event)
	// failovers counts hops when WithMeterProvider is set; nil otherwise.
	failovers metric.Int64Counter
	// abandonedCalls counts abandoned calls (WithMeterProvider); nil otherwise.
	abandonedCalls metric.Int64Counter
	// throttleShed counts shed calls (WithMeterProvider and a Throttle);
	// nil otherwise. throttleReg unregisters the probability gauge.
	throttleShed metric.Int64Counter
	throttleReg  metric.Registration
	answer       bool
	noMeta       bool

	// stalls counts stalls (WithMeterProvider); nil otherwise.
	stalls metric.Int64Counter
	// afterFunc starts stall timers, timeoutAfter the endpoints' Timeout
	// timers (time.AfterFunc; tests replace them).
	afterFunc, timeoutAfter afterFunc

	pending atomic.Int64
	unsub   func()
	once    sync.Once
}

type endpoint struct {
	Endpoint
	idx      int
	br       *registry.Breaker
	keyAny   any // boxed once: response metadata values are shared
	modelAny any

	// hintReason labels the endpoint's breaker while a server's retry hint
	// holds it open (Decision.Cause is registry.CauseRetryHint): the verdict
	// reason that carried the hint (rate_limited, server_error). It is only
	// a label: the hold itself is the breaker's, so Registry.Reset ends it at
	// once.
	hintReason atomic.Pointer[Reason]
	// abandoned counts abandoned calls still running.
	abandoned atomic.Int64
	// thr is the endpoint's adaptive throttle; nil when off.
	thr *shed.Throttle
	// probeDue is when the endpoint's in-flight half-open probe must have
	// answered (registry clock, Unix nanoseconds; 0: none known).
	probeDue atomic.Int64
	// exh tells exhaustion from a partial rate-limit storm; nil when the
	// breaker's policy opens on every hinted failure (TripOnRetryHint).
	exh *shed.Exhaustion
	// cappedHint is set once a server's retry hint above the policy's
	// MaxRetryHint was logged (once per endpoint).
	cappedHint atomic.Bool
}

var (
	_ model.LLM            = (*Model)(nil)
	_ callbacks.ModelGuard = (*Model)(nil)
	_ googleLLM            = (*Model)(nil)
	_ registry.RetryHinter = (*Error)(nil)
)

// googleLLM is ADK's internal googlellm.GoogleLLM interface (matched by
// method set).
type googleLLM interface {
	GetGoogleLLMVariant() genai.Backend
}

// Option configures New and FromConfig. Options apply in order; later ones win.
type Option interface{ apply(*settings) }

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

type settings struct {
	log       *slog.Logger
	interval  time.Duration
	classify  Classifier
	quotaLoc  *time.Location
	onEvent   func(context.Context, Event)
	answer    bool
	noMeta    bool
	transport transportFactory
	meter     metric.MeterProvider
	random    func() float64
	errs      []error
}

// DefaultLogInterval is how often one kind of failover line is logged: one
// line per (from, to, reason) per interval, with a count of the suppressed.
const DefaultLogInterval = 10 * time.Second

// WithLogger sets the logger for failover lines. Default slog.Default(),
// resolved in New.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(s *settings) {
		if l == nil {
			s.errs = append(s.errs, errors.New("logger: must not be nil"))
			return
		}
		s.log = l
	})
}

// WithLogInterval sets how often one kind of failover line (same from, to
// and reason) is logged. If 0, DefaultLogInterval. A negative interval logs
// every failover.
func WithLogInterval(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.interval = d })
}

// WithClassifier overrides the classification of endpoint errors. c is
// consulted first; when it returns ok=false, Classify decides. The caller's
// cancellation and the endpoint's Timeout are decided before c is asked.
func WithClassifier(c Classifier) Option {
	return optionFunc(func(s *settings) {
		if c == nil {
			s.errs = append(s.errs, errors.New("classifier: must not be nil"))
			return
		}
		s.classify = c
	})
}

// WithDailyQuotaReset sets the time zone whose midnight resets daily quotas:
// an endpoint whose per-day quota is exhausted is held until then (capped by
// its policy's MaxRetryHint). Default UTC. The Gemini API documents Pacific
// time for its per-day limits: pass time.LoadLocation("America/Los_Angeles")
// where tzdata is available.
func WithDailyQuotaReset(loc *time.Location) Option {
	return optionFunc(func(s *settings) {
		if loc == nil {
			s.errs = append(s.errs, errors.New("daily quota reset: location must not be nil"))
			return
		}
		s.quotaLoc = loc
	})
}

// WithOnFailover registers fn to receive every failover hop, synchronously on
// the calling goroutine (after the log line, which is rate-limited; fn is
// not). fn must be fast and must not block; telemetry counters belong here.
func WithOnFailover(fn func(ctx context.Context, ev Event)) Option {
	return optionFunc(func(s *settings) {
		if fn == nil {
			s.errs = append(s.errs, errors.New("on failover: must not be nil"))
			return
		}
		s.onEvent = fn
	})
}

// WithAnswerWhenUnavailable makes GenerateContent answer with a final model
// response the user can read ("The assistant is temporarily unavailable…")
// when no endpoint could answer, instead of yielding an error. This is the
// default; the option remains so that existing code keeps compiling, and
// undoes an earlier WithErrorWhenUnavailable.
//
// The adkbreaker plugin ends a turn the same way from BeforeModel when every
// breaker is already open; the readable answer covers what the plugin cannot
// see: the first turn, when the endpoints are still closed and each fails in
// turn, agents used as tools (ADK runs no plugin inside them), and chains
// whose last endpoint failed.
func WithAnswerWhenUnavailable() Option {
	return optionFunc(func(s *settings) { s.answer = true })
}

// WithErrorWhenUnavailable makes GenerateContent yield an *Error when no
// endpoint could answer, instead of the default readable answer: ADK then
// ends the turn with that error. Use it when the caller handles the error
// itself, for instance an agent used as a tool whose calling agent should
// count the failure against this agent's breaker (Error.RetryAfterHint).
func WithErrorWhenUnavailable() Option {
	return optionFunc(func(s *settings) { s.answer = false })
}

// WithoutResponseMetadata stops GenerateContent from writing the endpoint
// and failover keys into LLMResponse.CustomMetadata (two allocations per
// response). Span attributes and log lines are unaffected.
func WithoutResponseMetadata() Option {
	return optionFunc(func(s *settings) { s.noMeta = true })
}

// New returns a failover Model named name (its Name(), which ADK uses as
// the generate_content span name and as LLMRequest.Model in callbacks).
// Endpoints are tried in order; each gets the breaker for its Key from reg,
// so the plugin, snapshots and telemetry see the same breakers.
//
// The breakers use reg's policy for their keys. Model endpoints want a
// conservative policy (see DefaultPolicy): create reg with
// registry.WithPolicy(key, failover.DefaultPolicy()) for each endpoint, or
// with PolicyOptions. New logs a warning for an endpoint that falls back to
// reg's default policy and trips more easily than DefaultPolicy.
//
// Invalid arguments return one error listing every problem.
func New(name string, reg *registry.Registry, endpoints []Endpoint, opts ...Option) (*Model, error) {
	s := settings{interval: DefaultLogInterval, quotaLoc: time.UTC, answer: true}
	for _, o := range opts {
		if o == nil {
			s.errs = append(s.errs, errors.New("nil option"))
			continue
		}
		o.apply(&s)
	}
	errs := s.errs
	if strings.TrimSpace(name) == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	if reg == nil {
		errs = append(errs, errors.New("registry: must not be nil"))
	}
	if len(endpoints) == 0 {
		errs = append(errs, errors.New("endpoints: a chain needs at least one endpoint"))
	}
	m := &Model{
		name: name, reg: reg, log: s.log, classify: s.classify, quotaLoc: s.quotaLoc,
		onEvent: s.onEvent, answer: s.answer, noMeta: s.noMeta,
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	if s.meter != nil {
		c, err := newFailoverCounter(s.meter)
		if err != nil {
			errs = append(errs, err)
		}
		m.failovers = c
		a, err := newAbandonedCounter(s.meter)
		if err != nil {
			errs = append(errs, fmt.Errorf("meter provider: %w", err))
		}
		m.abandonedCalls = a
		if m.stalls, err = newStallCounter(s.meter); err != nil {
			errs = append(errs, err)
		}
	}
	m.afterFunc, m.timeoutAfter = realAfterFunc, realAfterFunc
	m.eps = make([]endpoint, len(endpoints))
	seen := map[registry.Key]int{}
	for i, e := range endpoints {
		p := fmt.Sprintf("endpoints[%d]", i)
		if e.LLM == nil {
			errs = append(errs, fmt.Errorf("%s.llm: required", p))
		}
		if e.ModelName == "" && e.LLM != nil {
			e.ModelName = e.LLM.Name()
		}
		if strings.TrimSpace(e.ModelName) == "" {
			errs = append(errs, fmt.Errorf("%s.model_name: required (the LLM's Name() is empty)", p))
		}
		if e.Key == "" && e.ModelName != "" {
			e.Key = EndpointKey(e.ModelName, backendName(e.LLM), "")
		}
		if e.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s.timeout: must be ≥ 0, got %s", p, e.Timeout))
		}
		if e.MaxAbandoned < 0 || e.MaxAbandoned > maxMaxAbandoned {
			errs = append(errs, fmt.Errorf("%s.max_abandoned: must be in [0, %d], got %d", p, maxMaxAbandoned, e.MaxAbandoned))
		}
		if e.MaxAbandoned == 0 {
			e.MaxAbandoned = DefaultMaxAbandoned
		}
		var thr *shed.Throttle
		if e.Throttle != nil {
			errs = append(errs, e.Throttle.validate(p+".throttle")...)
			if i == len(endpoints)-1 {
				errs = append(errs, fmt.Errorf("%s.throttle: %w", p, errThrottleLast))
			}
			t := *e.Throttle // the Model's own copy
			e.Throttle = &t
			thr = newThrottle(t, s.random)
		}
		if e.Key != "" {
			if msg := keyProblem(e.Key); msg != "" {
				errs = append(errs, fmt.Errorf("%s.key: %s", p, msg))
			} else if !e.Key.Valid() {
				errs = append(errs, fmt.Errorf("%s.key: %q is not a valid registry key (1–%d printable bytes)", p, e.Key, registry.MaxKeyLen))
			} else if j, dup := seen[e.Key]; dup {
				errs = append(errs, fmt.Errorf("%s.key: duplicate of endpoints[%d] (%s)", p, j, e.Key))
			} else {
				seen[e.Key] = i
			}
		}
		m.eps[i] = endpoint{Endpoint: e, idx: i, keyAny: string(e.Key), modelAny: e.ModelName, thr: thr}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	for i := range m.eps {
		ep := &m.eps[i]
		br, err := reg.Get(ep.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoints[%d]: %w", i, err))
			continue
		}
		ep.br = br
		if pol := br.Policy(); !pol.TripsOnRetryHint() {
			ep.exh = shed.NewExhaustion(pol.Window, pol.RetryHintFailures)
		}
		// The same layering rule as a tool's call_timeout: the window and
		// the probe lease must outlive a call that runs to its Timeout.
		errs = append(errs, br.Policy().CheckCallTimeout(fmt.Sprintf("endpoints[%d].timeout", i), ep.Timeout)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	m.clock = reg.Clock()
	if s.meter != nil {
		if err := m.throttleInstruments(s.meter); err != nil {
			return nil, fmt.Errorf("failover: meter provider: %w", err)
		}
	}
	m.logs = newLimiter(s.interval)
	m.checkPolicies()
	return m, nil
}

// MustNew is New that panics on error, for package-level variables and samples.
func MustNew(name string, reg *registry.Registry, endpoints []Endpoint, opts ...Option) *Model {
	m, err := New(name, reg, endpoints, opts...)
	if err != nil {
		panic(err)
	}
	return m
}

func (m *Model) checkPolicies() {
	safe := DefaultPolicy()
	for i := range m.eps {
		ep := &m.eps[i]
		p := ep.br.Policy()
		if m.reg.Configured(ep.Key) {
			continue // the user chose this key's policy
		}
		if p.ConsecutiveFailures < safe.ConsecutiveFailures || (!p.DisableFailureRate && p.MinCalls < safe.MinCalls) || p.TripsOnRetryHint() {
			m.log.Warn("adkbreaker: model endpoint uses the registry's default breaker policy, which trips more easily than failover.DefaultPolicy(); a breaker that trips easily silently demotes every user to the fallback model",
				slog.String("model", m.name), slog.String("endpoint", string(ep.Key)),
				slog.Int("consecutive_failures", p.ConsecutiveFailures), slog.Int("min_calls", p.MinCalls),
				slog.Bool("trip_on_retry_hint", p.TripsOnRetryHint()),
				slog.String("fix", "registry.WithPolicy(key, failover.DefaultPolicy()) or failover.PolicyOptions"))
		}
	}
}

// Close releases the Model's resources: the throttle gauge's callback
// (WithMeterProvider with a Throttle). Hint holds are the breakers' own, so
// an operator's Registry.Reset ends them at once.
func (m *Model) Close() {
	m.once.Do(func() {
		if m.unsub != nil {
			m.unsub()
		}
		if m.throttleReg != nil {
			_ = m.throttleReg.Unregister()
		}
	})
}

// Name returns the configured name.
func (m *Model) Name() string { return m.name }

// Registry returns the registry holding the endpoints' breakers.
func (m *Model) Registry() *registry.Registry { return m.reg }

// Endpoints returns the chain, in order, as configured (keys and model names
// filled in).
func (m *Model) Endpoints() []Endpoint {
	out := make([]Endpoint, len(m.eps))
	for i := range m.eps {
		out[i] = m.eps[i].Endpoint
	}
	return out
}

// Keys returns the endpoints' breaker keys, in chain order (for
// LogTransitions, PolicyOptions, dashboards).
func (m *Model) Keys() []registry.Key {
	out := make([]registry.Key, len(m.eps))
	for i := range m.eps {
		out[i] = m.eps[i].Key
	}
	return out
}

// GetGoogleLLMVariant reports the backend (Gemini API or Vertex AI) of the
// endpoint the next call would try first: the first whose breaker admits
// calls now, or the primary when none does. ADK asks this before calling the
// model (output-schema handling, file uploads, telemetry), so it cannot know
// which endpoint will answer; mixing backends in one chain makes that
// answer a prediction.
func (m *Model) GetGoogleLLMVariant() genai.Backend {
	for i := range m.eps {
		if m.eps[i].wait(m.clock) == 0 {
			return variant(m.eps[i].LLM)
		}
	}
	return variant(m.eps[0].LLM)
}

func variant(l model.LLM) genai.Backend {
	if g, ok := l.(googleLLM); ok {
		return g.GetGoogleLLMVariant()
	}
	return genai.BackendUnspecified
}

func backendName(l model.LLM) string {
	switch variant(l) {
	case genai.BackendGeminiAPI:
		return "gemini_api"
	case genai.BackendVertexAI:
		return "vertex_ai"
	default:
		return "unspecified"
	}
}

// ModelUnavailable implements callbacks.ModelGuard: for the model named name
// (this Model's Name()), it reports whether no endpoint can be tried now
// (every breaker refuses, or the endpoint is held after a server's retry
// hint or an exhausted daily quota), and when the first one can.
func (m *Model) ModelUnavailable(name string) (bool, time.Duration) {
	if name != m.name {
		return false, 0
	}
	first := time.Duration(-1)
	for i := range m.eps {
		w := m.eps[i].wait(m.clock)
		if w <= 0 {
			return false, 0
		}
		if first < 0 || w < first {
			first = w
		}
	}
	return true, first
}

// Pending returns how many admitted endpoint calls await their outcome. It
// is zero whenever no GenerateContent iteration is in progress, however the
// iterations ended (answer, error, consumer break, panic); tests and health
// checks use it.
func (m *Model) Pending() int { return int(m.pending.Load()) }

// EndpointStatus is a point-in-time view of one endpoint.
type EndpointStatus struct {
	Key     registry.Key
	Model   string
	Breaker registry.Status
	// Hold is what remains of a hold set from a server's retry hint or an
	// exhausted daily quota (zero for none), and HoldReason why. Both are
	// read from the breaker (Breaker.Status().Cause): there is no second
	// copy, so an operator's Reset ends them at once.
	Hold       time.Duration
	HoldReason Reason
	// Throttle is the endpoint's adaptive throttle; nil when it has none.
	Throttle *ThrottleStatus
}

// Status returns the status of every endpoint, in chain order.
func (m *Model) Status() []EndpointStatus {
	out := make([]EndpointStatus, len(m.eps))
	for i := range m.eps {
		ep := &m.eps[i]
		st := ep.br.Status()
		out[i] = EndpointStatus{Key: ep.Key, Model: ep.ModelName, Breaker: st}
		if r := ep.holdReason(st.Cause); r != "" && st.State == registry.StateOpen {
			out[i].Hold, out[i].HoldReason = st.RetryAfter, r
		}
		if ep.thr != nil {
			out[i].Throttle = &ThrottleStatus{RejectProbability: ep.thr.Probability(m.clock.Now()), Rejections: ep.thr.Shed()}
		}
	}
	return out
}

// ThrottleOf reads the adaptive throttle of the endpoint with the given
// key: the probability that a call arriving now is sent straight to the
// next endpoint and the calls shed since the Model was built, as in
// Status; ok is false for a key that is not one of the Model's endpoints
// or whose endpoint has no Throttle. Its shape is statuspage's
// ThrottleSource, so statuspage.WithThrottles(m.ThrottleOf) shows the
// throttles on the status page without either package importing the other.
func (m *Model) ThrottleOf(key registry.Key) (rejectProbability float64, rejections uint64, ok bool) {
	for i := range m.eps {
		if ep := &m.eps[i]; ep.Key == key && ep.thr != nil {
			return ep.thr.Probability(m.clock.Now()), ep.thr.Shed(), true
		}
	}
	return 0, 0, false
}

// wait is how long until ep may be called: its breaker's RetryAfter (a
// hint or quota hold is the breaker's own open hold); zero when it may be
// called now.
func (ep *endpoint) wait(clk registry.Clock) time.Duration {
	if ep.br.Policy().Shadow {
		return 0 // a breaker in shadow mode refuses nothing: never a reason to skip the model
	}
	return ep.probeWait(clk, ep.br.RetryAfter()) // a probe in flight: its own deadline (probe.go)
}

// holdReason names a hold a server asked for, from the cause of the
// breaker's current open; "" for a hold the thresholds set.
func (ep *endpoint) holdReason(c registry.Cause) Reason {
	switch c {
	case registry.CauseQuotaExhausted:
		return ReasonQuotaExhausted
	case registry.CauseRetryHint:
		if r := ep.hintReason.Load(); r != nil {
			return *r
		}
		return ReasonRateLimited
	}
	return ""
}

// refusalReason is why a refused endpoint is skipped.
func (ep *endpoint) refusalReason(c registry.Cause) Reason {
	if r := ep.holdReason(c); r != "" {
		return r
	}
	return ReasonCircuitOpen
}

// GenerateContent calls the chain. See the package documentation for when
// it fails over; in short: endpoints whose breaker refuses (or that are held
// after a retry hint) are skipped; an endpoint that fails with a 5xx, a 429,
// a transport error or our Timeout before yielding anything is left for the
// next; once a response has been yielded the call stays on that endpoint,
// and a later error is yielded as it is.
func (m *Model) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.generate(ctx, req, stream, yield)
	}
}
