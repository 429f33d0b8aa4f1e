package statuspage

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Defaults of the options.
const (
	DefaultHistory    = 256
	DefaultRefresh    = 2 * time.Second
	DefaultMaxStreams = 64
	// DefaultWriteTimeout bounds each write to an event stream.
	DefaultWriteTimeout = 10 * time.Second
	// MinTokenLen is the shortest operator token WithActions accepts.
	MinTokenLen = 16
)

// Option configures a Handler.
type Option func(*options)

type options struct {
	history    int
	refresh    time.Duration
	maxStreams int
	writeTO    time.Duration
	token      string
	actions    bool
	logger     *slog.Logger
	title      string
	fleet      FleetStatus
	fleetSet   bool
	tools      map[registry.Key][]string
	toolsErrs  []error

	throttles    []ThrottleSource
	throttleErrs []error

	costs   *TurnCosts // cost.go
	costErr error
}

// WithHistory sets how many recent transitions are kept for the page's
// timeline and the JSON document (default DefaultHistory).
func WithHistory(n int) Option { return func(o *options) { o.history = n } }

// WithRefresh sets how often an open event stream receives a fresh document
// when nothing has changed, so counts and failure rates stay current
// (default DefaultRefresh). Transitions are pushed at once regardless.
func WithRefresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithMaxStreams bounds concurrent event-stream clients (default
// DefaultMaxStreams); further clients get 503.
func WithMaxStreams(n int) Option { return func(o *options) { o.maxStreams = n } }

// WithWriteTimeout bounds each write to an event stream (default
// DefaultWriteTimeout): a client that stops reading is disconnected then,
// freeing its slot.
func WithWriteTimeout(d time.Duration) Option { return func(o *options) { o.writeTO = d } }

// WithActions enables the operator actions (isolate, reset), authorised by
// a bearer token of at least MinTokenLen bytes. Without it the actions do
// not exist: the page shows no buttons and the routes answer 404.
func WithActions(token string) Option {
	return func(o *options) { o.actions, o.token = true, token }
}

// WithLogger sets where operator actions are logged (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTitle sets the page title (default "adkbreaker").
func WithTitle(s string) Option { return func(o *options) { o.title = s } }

// Bounds of WithTools.
const (
	maxToolsPerDependency = 256
	maxToolNameLen        = 200
)

// WithTools names the tools behind each dependency (the mapping given to
// the plugin's WithDependency, or the configuration file's tools:), so the
// page shows which tools an open breaker takes away. Every key must be a
// valid dependency key and every tool name non-empty, at most 200 bytes
// and valid UTF-8, at most 256 tools a dependency. The map is copied.
func WithTools(tools map[registry.Key][]string) Option {
	return func(o *options) {
		o.tools = make(map[registry.Key][]string, len(tools))
		o.toolsErrs = nil
		for _, k := range slices.Sorted(maps.Keys(tools)) {
			names := tools[k]
			if !k.Valid() {
				o.toolsErrs = append(o.toolsErrs, fmt.Errorf("statuspage: WithTools: invalid dependency key %q", k))
				continue
			}
			if len(names) > maxToolsPerDependency {
				o.toolsErrs = append(o.toolsErrs, fmt.Errorf("statuspage: WithTools: %q has %d tools, more than %d", k, len(names), maxToolsPerDependency))
				continue
			}
			for i, n := range names {
				if n == "" || len(n) > maxToolNameLen || !utf8.ValidString(n) {
					o.toolsErrs = append(o.toolsErrs, fmt.Errorf("statuspage: WithTools: %q: tool %d: name must be 1 to %d bytes of UTF-8", k, i, maxToolNameLen))
				}
			}
			o.tools[k] = slices.Compact(slices.Sorted(slices.Values(names)))
		}
	}
}

// Handler serves the status page. It is safe for concurrent use. Close it
// when done: it unsubscribes from the registry and ends open event streams.
type Handler struct {
	reg   *registry.Registry
	o     options
	token [sha256.Size]byte

	unsubscribe func()
	closed      chan struct{}
	closeOnce   sync.Once

	mu      sync.Mutex
	ring    history // recent transitions
	streams map[chan struct{}]struct{}

	nstreams atomic.Int64
	actions  actionCounts

	// Event streams share one rendering of the document per version:
	// version moves on at every transition and every refresh period, and
	// frame is the event last rendered (events.go).
	version atomic.Uint64
	fmu     sync.Mutex
	frame   *frame // Guarded by fmu.

	rmu     sync.Mutex
	series  map[registry.Key]*series // Guarded by rmu.
	sampled chan struct{}            // closed when the sampler has stopped
}

// New returns a Handler over reg. Invalid options are reported together.
func New(reg *registry.Registry, opts ...Option) (*Handler, error) {
	o := options{history: DefaultHistory, refresh: DefaultRefresh, maxStreams: DefaultMaxStreams, writeTO: DefaultWriteTimeout, title: "adkbreaker"}
	for _, opt := range opts {
		opt(&o)
	}
	var errs []error
	if reg == nil {
		errs = append(errs, errors.New("statuspage: registry is nil"))
	}
	if o.history < 1 || o.history > 1<<16 {
		errs = append(errs, fmt.Errorf("statuspage: history %d out of range [1, 65536]", o.history))
	}
	if o.refresh < 100*time.Millisecond || o.refresh > time.Hour {
		errs = append(errs, fmt.Errorf("statuspage: refresh %v out of range [100ms, 1h]", o.refresh))
	}
	if o.maxStreams < 1 || o.maxStreams > 1<<16 {
		errs = append(errs, fmt.Errorf("statuspage: max streams %d out of range [1, 65536]", o.maxStreams))
	}
	if o.writeTO < 100*time.Millisecond || o.writeTO > time.Hour {
		errs = append(errs, fmt.Errorf("statuspage: write timeout %v out of range [100ms, 1h]", o.writeTO))
	}
	if o.actions && len(o.token) < MinTokenLen {
		// Never echo the token.
		errs = append(errs, fmt.Errorf("statuspage: operator token must be at least %d bytes", MinTokenLen))
	}
	if o.fleetSet && o.fleet == nil {
		errs = append(errs, errFleetNil)
	}
	errs = append(errs, o.toolsErrs...)
	errs = append(errs, o.throttleErrs...)
	if o.costErr != nil {
		errs = append(errs, o.costErr)
	}
	if len(o.title) > 200 {
		errs = append(errs, errors.New("statuspage: title longer than 200 bytes"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	h := &Handler{reg: reg, o: o, closed: make(chan struct{}), streams: map[chan struct{}]struct{}{}, ring: history{limit: o.history},
		series: map[registry.Key]*series{}, sampled: make(chan struct{})}
	h.actions.refusedLog = loglimit.New(time.Minute, 1)
	if o.actions {
		h.token = sha256.Sum256([]byte(o.token))
		h.o.token = ""
	}
	h.unsubscribe = reg.Subscribe(h.observe)
	h.sample()
	go h.sampler()
	return h, nil
}

// sampler samples the registry's counters about once a second (real
// time; the series are stamped with the registry's clock) and, while event
// streams are open, moves their document on every refresh period, until
// Close.
func (h *Handler) sampler() {
	defer close(h.sampled)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	refresh := time.NewTicker(h.o.refresh)
	defer refresh.Stop()
	for {
		select {
		case <-h.closed:
			return
		case <-t.C:
			h.sample()
		case <-refresh.C:
			if h.nstreams.Load() > 0 {
				h.refreshStreams()
			}
		}
	}
}

// Close unsubscribes from the registry, ends every open event stream and
// stops sampling (and the latency sampling it switched on).
func (h *Handler) Close() error {
	h.closeOnce.Do(func() {
		h.unsubscribe()
		close(h.closed)
		<-h.sampled
		h.rmu.Lock()
		for _, s := range h.series {
			s.b.SampleLatency(0)
		}
		h.rmu.Unlock()
	})
	return nil
}

// slashRedirect returns where a request for the page without its trailing
// slash is sent: the request's own path, escaped, with the slash. Only the
// path is kept — a request line in absolute form ("GET http://host/x")
// must not turn the redirect into one to another host, nor a path starting
// "//" into a protocol-relative one. ok is false for a request with a query
// (served as is) or one whose request URI does not parse.
func slashRedirect(requestURI string) (loc string, ok bool) {
	u, err := url.ParseRequestURI(requestURI)
	if err != nil || u.RawQuery != "" || u.ForceQuery {
		return "", false
	}
	p := u.EscapedPath()
	if p == "" || strings.HasSuffix(p, "/") {
		return "", false
	}
	return "/" + strings.TrimLeft(p, "/") + "/", true
}

// observe records a transition and wakes every event stream.
func (h *Handler) observe(t registry.Transition) {
	h.mu.Lock()
	h.ring.add(t)
	h.version.Add(1)
	h.wakeStreams()
	h.mu.Unlock()
}

// refreshStreams moves the streams' document on and wakes them: the first
// to wake renders it, the others send the same bytes.
func (h *Handler) refreshStreams() {
	h.mu.Lock()
	h.version.Add(1)
	h.wakeStreams()
	h.mu.Unlock()
}

// wakeStreams wakes every event stream; h.mu is held.
func (h *Handler) wakeStreams() {
	for ch := range h.streams {
		select {
		case ch <- struct{}{}:
		default: // already woken; it reads the latest state anyway
		}
	}
}

func (h *Handler) transitions() []registry.Transition {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ring.appendTo(nil)
}

// history keeps the newest transitions, up to its capacity, in a ring:
// recording one is O(1) however long the history.
type history struct {
	buf   []registry.Transition // grows to cap, then wraps
	next  int                   // where the next transition goes once full
	limit int
}

func (r *history) add(t registry.Transition) {
	if len(r.buf) < r.limit {
		r.buf = append(r.buf, t)
		return
	}
	r.buf[r.next] = t
	r.next = (r.next + 1) % r.limit
}

// appendTo appends the transitions to dst, oldest first.
func (r *history) appendTo(dst []registry.Transition) []registry.Transition {
	dst = append(dst, r.buf[r.next:]...)
	return append(dst, r.buf[:r.next]...)
}

// ServeHTTP routes the request; see the package documentation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch p := strings.TrimSuffix(r.URL.Path, "/"); p {
	case "":
		if r.URL.Path == "" && r.RequestURI != "" && !strings.HasSuffix(r.RequestURI, "/") {
			// Mounted with StripPrefix and reached without the trailing
			// slash: the page's relative links need it.
			if loc, ok := slashRedirect(r.RequestURI); ok {
				http.Redirect(w, r, loc, http.StatusMovedPermanently)
				return
			}
		}
		if !method(w, r, http.MethodGet) {
			return
		}
		h.servePage(w, r)
	case "/status.json":
		if method(w, r, http.MethodGet) {
			h.serveJSON(w, r)
		}
	case "/events":
		if method(w, r, http.MethodGet) {
			h.serveEvents(w, r)
		}
	case "/healthz":
		if method(w, r, http.MethodGet) {
			h.serveHealth(w, r)
		}
	case "/actions/isolate", "/actions/reset":
		if !h.o.actions {
			http.NotFound(w, r)
			return
		}
		if method(w, r, http.MethodPost) {
			h.serveAction(w, r, strings.TrimPrefix(p, "/actions/"))
		}
	default:
		http.NotFound(w, r)
	}
}

func method(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", m)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// authorized compares the bearer token in constant time (over fixed-size
// digests, so the token's length does not leak either).
func (h *Handler) authorized(r *http.Request) bool {
	const prefix = "Bearer "
	v := r.Header.Get("Authorization")
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(v[len(prefix):]))
	return subtle.ConstantTimeCompare(got[:], h.token[:]) == 1
}
