package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/internal/adkctx"
	"github.com/adkbreaker/adkbreaker/internal/retrybudget"
	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// server is one guarded MCP server.
type server struct {
	g *Guard
	// secrets are the server's header values (FromConfig), removed from
	// any text a log line or span carries.
	secrets []string
	cfg     Server // defaults applied
	br      *registry.Breaker
	conn    *conn
	rb      *retrybudget.Budget
	allow   map[string]bool // nil: every tool
	idem    map[string]bool
	h       health
	// callsFailing is set while the server's last counted tools/call failed:
	// a discovery then proves only that the server is reachable, and is
	// reported excluded, so that it neither closes a breaker that calls
	// opened (resetting its backoff) nor resets the count of failing calls.
	callsFailing atomic.Bool
	tel          *serverTel // trace.go; nil until New has set it up
	// handlers times the user's own handlers (Server.Client).
	handlers handlerClock

	mu       sync.Mutex
	cache    []*Tool   // Guarded by mu: the last good tool list (nil: none yet).
	cachedAt time.Time // Guarded by mu.
	stale    bool      // Guarded by mu: tools/list_changed arrived.
	// changes counts tools/list_changed notifications, so that one arriving
	// while a discovery runs (its list may predate the change) leaves the
	// list stale. Guarded by mu.
	changes     uint64
	discovering chan struct{} // Guarded by mu: closed when the discovery in flight ends.
	discErr     error         // Guarded by mu: result of the last discovery.
}

func newServer(g *Guard, cfg Server, br *registry.Breaker) *server {
	br.SetSelfAdmitting()                 // Tool.Run consults Registry.Admitted
	br.SetCallBudget(cfg.OperationBudget) // every operation ends within it: a probe that has not answered by then has failed
	s := &server{g: g, cfg: cfg, br: br, rb: retrybudget.New(cfg.Retry.BudgetRatio, cfg.Retry.BudgetMin, cfg.Retry.BudgetWindow)}
	if len(cfg.Tools) > 0 {
		s.allow = make(map[string]bool, len(cfg.Tools))
		for _, t := range cfg.Tools {
			s.allow[t] = true
		}
	}
	s.idem = make(map[string]bool, len(cfg.IdempotentTools))
	for _, t := range cfg.IdempotentTools {
		s.idem[t] = true
	}
	s.conn = &conn{s: s, owned: cfg.Session == nil}
	if cfg.Session != nil {
		s.conn.sess = cfg.Session
	}
	s.conn.client = mcp.NewClient(&mcp.Implementation{Name: "adkbreaker-mcpguard", Version: "v1"}, s.clientOptions(cfg.Client))
	if len(cfg.Roots) > 0 {
		addRoots(s.conn.client, cfg.Roots) // roots_adkv*.go
	}
	s.h.server, s.h.required = cfg.Name, cfg.Required
	return s
}

// clientOptions returns the options of the guard's client for the server:
// a copy of the user's (nil: none), with the guard's tools/list_changed
// handler first and the user's waiting handlers (elicitation, sampling)
// timed (see handlerClock).
func (s *server) clientOptions(user *mcp.ClientOptions) *mcp.ClientOptions {
	var o mcp.ClientOptions
	if user != nil {
		o = *user
	}
	userChanged := o.ToolListChangedHandler
	o.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		s.mu.Lock()
		s.stale = true
		s.changes++
		s.mu.Unlock()
		if userChanged != nil {
			userChanged(ctx, req)
		}
	}
	if h := o.ElicitationHandler; h != nil {
		o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			defer s.handlers.enter()()
			return h(ctx, req)
		}
	}
	timeSampling(&o, s.handlers.enter) // roots_adkv*.go
	return &o
}

// handlerClock tells whether the user's own handlers (which may wait on a
// person) ran during a leg: active counts those running, epoch changes at
// every entry and exit.
type handlerClock struct {
	active atomic.Int32
	epoch  atomic.Uint64
}

func (c *handlerClock) enter() (exit func()) {
	c.active.Add(1)
	c.epoch.Add(1)
	return func() {
		c.active.Add(-1)
		c.epoch.Add(1)
	}
}

// mark returns a token for since.
func (c *handlerClock) mark() uint64 { return c.epoch.Load() }

// since reports whether a handler ran at any time since mark was taken.
func (c *handlerClock) since(mark uint64) bool {
	return c.active.Load() > 0 || c.epoch.Load() != mark
}

// tools returns the server's tools: the cached list while it is fresh, else
// a new discovery (shared with concurrent callers). When discovery fails the
// last good list is served, unless NoLastGood.
//
// The caller's operation budget starts now, whether it runs the discovery or
// joins one in flight. A joiner waits no longer than its own context and
// budget allow, and takes the shared result only when it says something about
// the server: when the discovery ended for its own caller's reasons
// (cancelled, or bounded by that caller's budget or run deadline), the joiner
// tries for itself with what is left of its own budget.
func (s *server) tools(ctx context.Context) ([]*Tool, error) {
	start := time.Now()
	for {
		s.mu.Lock()
		if s.cache != nil && !s.stale && s.g.clock.Now().Sub(s.cachedAt) < s.cfg.ToolsTTL {
			t := s.cache
			s.mu.Unlock()
			if e := s.breakerDown(); e != nil {
				// The list is fresh, but the server's breaker is not
				// closed: its tools are offered from a cached list and
				// may fail, which the model is told (or, with NoLastGood,
				// they are left out).
				return s.lastGood(e)
			}
			return t, nil
		}
		ch := s.discovering
		if ch == nil {
			break // s.mu still held
		}
		s.mu.Unlock()
		// Join the discovery in flight, no longer than our own budget.
		t := time.NewTimer(time.Until(start.Add(s.cfg.OperationBudget)))
		select {
		case <-ch:
			t.Stop()
			s.mu.Lock()
			err := s.discErr
			cache := s.cache
			s.mu.Unlock()
			if err == nil && cache != nil {
				return cache, nil
			}
			if ctx.Err() != nil {
				return s.lastGood(ctx.Err())
			}
			if e, ok := err.(*Error); ok && e.callerBound() {
				continue // not the server's answer: try ourselves
			}
			return s.lastGood(err)
		case <-ctx.Done():
			t.Stop()
			return s.lastGood(ctx.Err())
		case <-t.C:
			return s.lastGood(fmt.Errorf("mcpguard: server %s: discovery in flight did not finish within the budget", quote(s.cfg.Name)))
		}
	}
	ch := make(chan struct{})
	s.discovering = ch
	changes := s.changes
	s.mu.Unlock()

	ts, err := s.discover(ctx, start)

	s.mu.Lock()
	s.discovering = nil
	s.discErr = err
	if err == nil {
		// A list_changed that came while listing may postdate the list.
		s.cache, s.cachedAt, s.stale = ts, s.g.clock.Now(), s.changes != changes
	}
	s.mu.Unlock()
	close(ch)
	if err != nil {
		return s.lastGood(err)
	}
	return ts, nil
}

// breakerDown returns an *UnavailableError while the server's breaker is
// open or isolated (not while closed or half-open: a half-open breaker
// admits a probe, which the offered tools may be), nil otherwise. It
// admits nothing.
func (s *server) breakerDown() *UnavailableError {
	st := s.br.State()
	if st != registry.StateOpen {
		return nil
	}
	ra, why := s.br.RetryAfter(), registry.RefusedOpen
	if ra == registry.UntilReset {
		why = registry.RefusedIsolated
	}
	return &UnavailableError{Server: s.cfg.Name, State: st, Refusal: why, RetryAfter: ra}
}

// lastGood serves the last good list after a failed discovery, if allowed.
func (s *server) lastGood(err error) ([]*Tool, error) {
	if s.cfg.NoLastGood {
		return nil, err
	}
	s.mu.Lock()
	c := s.cache
	s.mu.Unlock()
	if c == nil {
		return nil, err
	}
	return c, err
}

// discover asks the server's breaker, then connects if needed and reads
// every tools/list page, retrying within one operation budget, which started
// at start (when the caller asked for the tools).
func (s *server) discover(ctx context.Context, start time.Time) ([]*Tool, error) {
	o := s.newOpAt(ctx, BoundaryListTools, "", start)
	tk, d := s.br.Admit()
	o.begin(d.State)
	if !d.Allowed {
		e := &UnavailableError{Server: s.cfg.Name, State: d.State, Refusal: d.Reason, RetryAfter: d.RetryAfter}
		s.h.unavailable(BoundaryListTools, s.g.clock.Now())
		s.g.log.Debug("mcpguard: discovery refused by breaker", "server", s.cfg.Name, "state", d.State.String(), "retry_after", d.RetryAfter)
		o.end(ClassUnavailable, nil, e)
		return nil, e
	}
	s.rb.Operation(s.g.clock.Now())
	var last *Error
	for {
		o.attempts++
		sess, gc, e := s.conn.session(o)
		var tools []*Tool
		if e == nil {
			tools, e = s.listTraced(o, sess, gc)
		}
		if e == nil {
			out := registry.Success
			if s.callsFailing.Load() {
				out = registry.Excluded // reachable, but only a call may say its calls work
			}
			tk.Done(out)
			s.h.record(o, ClassOK, "", "", len(tools))
			o.end(ClassOK, nil, nil)
			return tools, nil
		}
		last = e
		if e.brokeConnection() {
			s.conn.drop(sess)
		}
		if !s.retry(o, e, true) {
			break
		}
	}
	tk.DoneWithRetryAfter(last.BreakerOutcome(), last.RetryAfter)
	s.fail(o, last)
	return nil, last
}

// list reads every page of tools/list within DiscoveryTimeout (all pages
// together) and the operation's budget.
func (s *server) list(o *op, sess *mcp.ClientSession, gc *guardConn) ([]*Tool, *Error) {
	end := time.Now().Add(s.cfg.DiscoveryTimeout)
	var (
		cursor  string
		out     []*Tool
		names   = map[string]bool{}
		dropped = map[string]int{}
		pages   int
	)
	for {
		l, e := o.leg(BoundaryListTools, end, LimitDiscoveryTimeout)
		if e != nil {
			return nil, e
		}
		res, err := sess.ListTools(l.ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			e := o.failure(l, err, gc)
			l.cancel()
			return nil, e
		}
		l.cancel()
		pages++
		capped := false
		for _, mt := range res.Tools {
			if len(out) >= s.cfg.MaxTools {
				dropped["max_tools"]++
				capped = true
				continue
			}
			t, why := s.newTool(mt)
			if t == nil {
				if why != "" {
					dropped[why]++
				}
				continue
			}
			if names[t.name] {
				dropped["duplicate"]++
				continue
			}
			names[t.name] = true
			out = append(out, t)
		}
		if res.NextCursor == "" || capped {
			break
		}
		if pages >= s.cfg.MaxPages {
			dropped["max_pages"]++
			break
		}
		if res.NextCursor == cursor {
			e := o.err(BoundaryListTools, fmt.Errorf("tools/list returned the same cursor twice"))
			e.Class, e.Reason, e.Granted = ClassProtocol, ReasonMalformed, o.granted
			e.payload = printable(cursor, maxLogPayload)
			return nil, e
		}
		cursor = res.NextCursor
	}
	if len(dropped) > 0 {
		attrs := []any{"server", s.cfg.Name, "admitted", len(out), "pages", pages}
		keys := make([]string, 0, len(dropped))
		for k := range dropped {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			attrs = append(attrs, "dropped_"+k, dropped[k])
		}
		s.g.log.Warn("mcpguard: tools left out", attrs...)
	}
	return out, nil
}

// newTool admits one listed tool, or says why not ("" for the allowlist).
func (s *server) newTool(mt *mcp.Tool) (*Tool, string) {
	if mt == nil || !validToolName(mt.Name) {
		return nil, "invalid_name"
	}
	if s.allow != nil && !s.allow[mt.Name] {
		return nil, ""
	}
	name := s.cfg.ToolPrefix + mt.Name
	if !validDeclaredName(name) {
		return nil, "invalid_declared_name"
	}
	desc := untrusted(mt.Description, maxDescriptionBytes)
	var in any = map[string]any{"type": "object"}
	if mt.InputSchema != nil {
		b, err := json.Marshal(mt.InputSchema)
		if err != nil || len(b) > maxSchemaBytes {
			return nil, "input_schema"
		}
		in = mt.InputSchema
	}
	t := &Tool{srv: s, name: name, remote: mt.Name, desc: desc}
	t.idempotent = s.idem[mt.Name] || (s.cfg.Trusted && mt.Annotations != nil && mt.Annotations.IdempotentHint)
	t.decl = &genai.FunctionDeclaration{Name: name, Description: desc, ParametersJsonSchema: in}
	if mt.OutputSchema != nil {
		rs, err := resolveSchema(mt.OutputSchema)
		if err != nil {
			return nil, "output_schema"
		}
		t.out = rs
		t.decl.ResponseJsonSchema = mt.OutputSchema
	}
	return t, ""
}

const (
	maxDescriptionBytes = 1024
	maxSchemaBytes      = 64 << 10
)

// call runs one tools/call operation: connect if needed, then the call,
// retrying only what is safe to repeat, all within one budget.
func (s *server) call(ctx context.Context, t *Tool, args any) (map[string]any, error) {
	o := s.newOp(ctx, BoundaryCallTool, t.remote)
	o.beginCall()
	s.rb.Operation(s.g.clock.Now())
	params := &mcp.CallToolParams{Name: t.remote, Arguments: args}
	keyed := false
	if tc, ok := adkctx.Tool(ctx); ok && s.g.idemKey != nil {
		if k := s.g.idemKey(tc, t, args); validIdempotencyKey(k) {
			params.Meta, keyed = mcp.Meta{MetaIdempotencyKey: k}, true // the same key on every attempt
		}
	}
	var last *Error
	for {
		o.attempts++
		sess, gc, e := s.conn.session(o)
		sent := false
		if e == nil {
			l, le := o.leg(BoundaryCallTool, time.Now().Add(s.cfg.CallTimeout), LimitCallTimeout)
			if le != nil {
				e = le
			} else {
				o.startLeg()
				mark := s.handlers.mark()
				res, err := sess.CallTool(l.ctx, params)
				if err == nil {
					l.cancel()
					out, pe := t.convert(o, res, gc)
					if pe != nil {
						s.callsFailing.Store(true)
						o.endLeg(pe.Class)
						s.fail(o, pe)
						return nil, pe
					}
					s.callsFailing.Store(false)
					class := ClassOK
					if res.IsError {
						class = ClassRefused
					}
					o.endLeg(class)
					s.h.record(o, class, "", "", -1)
					o.end(class, nil, nil)
					return out, nil
				}
				e = o.failure(l, err, gc)
				if e.Class == ClassTimeout && s.handlers.since(mark) {
					// The time ran out while the user's own handler (a
					// person answering an elicitation) had the call: not
					// the server's slowness.
					e.Class, e.Reason = ClassCancelled, ReasonClientHandler
				}
				o.endLeg(e.Class)
				l.cancel()
				sent = !notSent(err, l.hint, gc)
			}
		}
		last = e
		if e.brokeConnection() {
			s.conn.drop(sess)
		}
		// A request that may have reached the server is repeated only for
		// tools the operator declared idempotent, or calls carrying an
		// idempotency key; the handshake always may be.
		if !s.retry(o, e, !sent || t.idempotent || keyed) {
			break
		}
	}
	if last.BreakerOutcome() == registry.Failure {
		s.callsFailing.Store(true)
	}
	s.fail(o, last)
	return nil, last
}

// retry decides whether to try again after e and waits the backoff. safe
// says the operation may be repeated at all.
func (s *server) retry(o *op, e *Error, safe bool) bool {
	if !safe || !e.retryable() {
		return false
	}
	if e.Reason == ReasonSessionMissing && !o.renewed {
		// The server answered that our session is gone (it restarted, or
		// expired it): starting a new session is the protocol's next step,
		// not a retry of a failure. It is made at once, once per operation,
		// whatever an outage spent of the retry budget or of MaxAttempts, so
		// that the first operation after a restart is not failed (and, as a
		// half-open probe, does not double the breaker's hold) for want of a
		// budget the outage used up.
		o.renewed = true
		return o.parent.Err() == nil
	}
	if o.attempts >= s.cfg.Retry.MaxAttempts {
		return false
	}
	delay := e.RetryAfter
	if delay <= 0 {
		delay = retrybudget.Backoff(s.cfg.Retry.Base, s.cfg.Retry.Cap, o.retries, s.g.rand())
	}
	// A delay the server asked for is waited out exactly or not at all.
	if !o.fits(delay) {
		return false
	}
	if !s.rb.TryRetry(s.g.clock.Now()) {
		s.g.log.Debug("mcpguard: retry budget spent", "server", s.cfg.Name, "operation", string(o.operation))
		return false
	}
	o.retries++
	s.h.retried()
	o.retried(e, delay)
	if s.g.onBackoff != nil {
		s.g.onBackoff(s.cfg.Name, o.retries-1, delay)
	}
	return o.wait(delay)
}

// fail records a failed operation and writes its one log line.
func (s *server) fail(o *op, e *Error) {
	e.Elapsed = time.Since(o.start)
	e.Attempts = max(o.attempts, 1)
	s.h.record(o, e.Class, e.Boundary, e.Limit, -1)
	o.end(e.Class, e, nil)
	switch e.Class {
	case ClassRefused:
		return // an answer, not a failure
	case ClassCancelled, ClassUnavailable:
		s.g.log.Debug("mcpguard: operation ended", s.logAttrs(o, e)...)
		return
	}
	s.g.log.Warn("mcpguard: operation failed", s.logAttrs(o, e)...)
}

func (s *server) logAttrs(o *op, e *Error) []any {
	attrs := []any{
		"server", s.cfg.Name, "operation", string(o.operation), "boundary", string(e.Boundary),
		"limit", string(e.Limit), "class", string(e.Class), "reason", string(e.Reason),
		"attempts", e.Attempts, "elapsed", e.Elapsed, "granted", e.Granted, "budget", e.Budget,
	}
	if e.Tool != "" {
		attrs = append(attrs, "tool", e.Tool)
	}
	if o.inv != "" { // runid.go; read when the op began (the span replaces o.parent)
		attrs = append(attrs, "invocation_id", o.inv)
	}
	if e.RetryAfter > 0 {
		attrs = append(attrs, "retry_after", e.RetryAfter)
	}
	if e.Cause != nil {
		// As on spans: the server's credentials scrubbed from the whole
		// text before it is cut (a cut value would no longer match), then
		// redact.Text, since a cause can quote a URL with its key.
		attrs = append(attrs, "cause", redact.Text(scrub(e.Cause.Error(), s.secrets), maxLogPayload))
	}
	if e.payload != "" {
		attrs = append(attrs, "payload", redact.Text(scrub(e.payload, s.secrets), maxLogPayload))
	}
	return attrs
}
