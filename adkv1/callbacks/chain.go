package callbacks

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/artifact"
	"google.golang.org/adk/memory"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/agenttool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/repeatguard"
	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Chains: a sub-agent reached through an agent tool.
//
// ADK's agent tool (package agenttool) runs its agent on a runner of its
// own, created for each call, with no plugins: a sub-agent would run
// unprotected. BeforeModel therefore replaces every ADK agent tool of the
// request by an AgentTool, which runs the same sub-agent the same way on a
// runner whose only plugin is this handler's, so that the sub-agent's tools
// and model calls meet the same breakers, policies, telemetry and fleet, at
// any depth (the sub-agent's own agent tools are replaced in its model
// requests in turn).
//
// A sub-run's context carries a chainFrame naming the root invocation: the
// handler counts the sub-run's short-circuits, model calls and budget
// against the root turn (one turn, one budget, across the chain), while the
// sub-run's pending calls and its own end-of-turn mark are keyed by the
// sub-run's invocation and released by its AfterRun, as the root's are by
// the root's.

// chainKey is the context key of a sub-run's chainFrame.
type chainKey struct{}

// chainFrame is one sub-run started by an AgentTool.
type chainFrame struct {
	root string // the root invocation's ID: the accounting key of the chain
	// scope is the loop scope of the agent tool's call (loopScope): the
	// sub-run's calls count as one loop with the caller's branch, never
	// with a parallel branch's.
	scope string
	mu    sync.Mutex
	// refused is the last dependency refused in this sub-run (its own
	// short-circuits, or a nested agent tool's unavailable answer), with
	// the reason; "" when none was.
	refused registry.Key
	reason  degrade.Reason
}

// activeSubRuns counts the sub-runs running now (any handler): while it is
// zero no context carries a frame, and chainOf does not look.
var activeSubRuns atomic.Int64

// chainOf returns the accounting key of invocation inv — the root
// invocation when ctx is a sub-run's — and the sub-run's frame (nil for a
// root run).
func chainOf(ctx context.Context, inv string) (string, *chainFrame) {
	if activeSubRuns.Load() == 0 {
		return inv, nil // no sub-run anywhere: no frame to look up (the tool path's common case)
	}
	if f, _ := ctx.Value(chainKey{}).(*chainFrame); f != nil {
		return f.root, f
	}
	return inv, nil
}

// noteRefused records in the sub-run f (nil: a root run, nothing to do)
// that dep was refused.
func noteRefused(f *chainFrame, dep registry.Key, reason degrade.Reason) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.refused, f.reason = dep, reason
	f.mu.Unlock()
}

func (f *chainFrame) lastRefused() (registry.Key, degrade.Reason) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused, f.reason
}

// adkAgentToolType is the dynamic type of ADK's agent tools.
var adkAgentToolType = reflect.TypeOf(agenttool.New(nil, nil))

// adkAgentToolFields reads the agent and the SkipSummarization flag of one
// of ADK's agent tools, whose fields are unexported. The layout is checked
// once: when it is not the expected one (another ADK release), ok is false
// and the tool is left as it is.
func adkAgentToolFields(t tool.Tool) (a agent.Agent, skip bool, ok bool) {
	if !agentToolLayoutOK || t == nil || reflect.TypeOf(t) != adkAgentToolType {
		return nil, false, false
	}
	v := reflect.ValueOf(t).Elem()
	af, sf := v.FieldByIndex(agentFieldIndex), v.FieldByIndex(skipFieldIndex)
	a, _ = reflect.NewAt(af.Type(), unsafe.Pointer(af.UnsafeAddr())).Elem().Interface().(agent.Agent)
	skip = *(*bool)(unsafe.Pointer(sf.UnsafeAddr()))
	return a, skip, a != nil
}

var agentFieldIndex, skipFieldIndex []int

var agentToolLayoutOK = func() bool {
	if adkAgentToolType == nil || adkAgentToolType.Kind() != reflect.Pointer || adkAgentToolType.Elem().Kind() != reflect.Struct {
		return false
	}
	st := adkAgentToolType.Elem()
	af, ok1 := st.FieldByName("agent")
	sf, ok2 := st.FieldByName("skipSummarization")
	if !ok1 || !ok2 || af.Type != reflect.TypeFor[agent.Agent]() || sf.Type.Kind() != reflect.Bool {
		return false
	}
	agentFieldIndex, skipFieldIndex = af.Index, sf.Index
	return true
}()

// hasSchema reports whether a is an LLM agent with an input or an output
// schema. ADK's agent tool validates arguments and results against them
// with ADK-internal code; the plugin leaves such agent tools as they are
// (see docs/design.md).
func hasSchema(a agent.Agent) bool {
	return schemaOf(a, "InputSchema") != nil || schemaOf(a, "OutputSchema") != nil
}

// schemaOf returns the exported schema field name of an LLM agent (ADK's
// llmagent keeps its configuration in an exported embedded struct), or nil.
func schemaOf(a agent.Agent, name string) *genai.Schema {
	v := reflect.ValueOf(a)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName(name)
	if !f.IsValid() || !f.CanInterface() {
		return nil
	}
	s, _ := f.Interface().(*genai.Schema)
	return s
}

// AgentTool is an agent tool whose sub-agent runs under the handler's
// protection. It behaves like ADK's agenttool: the same declaration (the
// agent's name and description, a "request" string parameter), the same
// input (the request as the user message), the session state copied
// without ADK's internal keys, SkipSummarization, the last non-thought text
// of the sub-agent as {"result": text} ({} when there is none), and an
// error for an error event of the sub-agent. The differences: the
// sub-agent's runner has the handler's plugin, its accounting is the root
// turn's, and when a dependency was refused in the sub-run the tool answers
// with the unavailable payload (package degrade) for that dependency, under
// the agent tool's name, in place of the sub-agent's text.
//
// The plugin puts AgentTools in place of ADK's agent tools by itself (see
// Config.NoAgentToolGuard); Handler.AgentTool builds one for agents the
// plugin cannot reach.
type AgentTool struct {
	inner tool.Tool // ADK's agent tool: declaration and request processing; nil when built by Handler.AgentTool
	agent agent.Agent
	skip  bool
	h     *Handler

	builders sync.Map                // registry.Key → *degrade.Builder
	repeat   atomic.Pointer[binding] // the repeated-call guard's view of this tool (no breaker)
}

var _ runnableTool = (*AgentTool)(nil)

// repeatBinding is the binding the repeated-call guard counts the agent
// tool's own calls by: its name and repeat limit, no dependency (the
// sub-run's calls meet their breakers inside).
func (a *AgentTool) repeatBinding() *binding {
	if b := a.repeat.Load(); b != nil {
		return b
	}
	r := a.h.res
	b := &binding{tool: a.Name()}
	b.repeat = repeatLimitOf(r.repeatDefault, r.repeatTools, 0, b.tool)
	// Shadow mode: an agent tool is no dependency of its own, but the
	// policy its name would have (the registry's default, or its own)
	// says whether the plugin may act on what the model reads.
	b.shadow = a.h.reg.PolicyFor(registry.Key(b.tool)).Shadow
	if b.repeat > 0 {
		b.toolHash = repeatguard.ToolHash(b.tool)
	}
	a.repeat.Store(b)
	return b
}

// AgentTool returns an agent tool for a (as agenttool.New(a, cfg) builds
// it) whose sub-agent runs under h's protection, with its accounting in the
// calling turn: the one-line opt-in where the plugin cannot replace the
// agent tool itself (a toolset that hides it, an agent that does not run
// the handler's BeforeModel). Agents with an input or output schema are
// run as ADK runs them, but under h's protection too; their arguments and
// results are not validated against the schema.
func (h *Handler) AgentTool(a agent.Agent, cfg *agenttool.Config) tool.Tool {
	t := &AgentTool{agent: a, h: h}
	if cfg != nil {
		t.skip = cfg.SkipSummarization
	}
	return t
}

// agentToolFor returns the AgentTool standing in for t, one of ADK's agent
// tools, or nil when t is none or is left as it is. Replacements are cached
// per agent tool (up to maxAgentTools of them).
func (h *Handler) agentToolFor(t tool.Tool) *AgentTool {
	if reflect.TypeOf(t) != adkAgentToolType {
		return nil
	}
	if v, ok := h.agentTools.Load(t); ok {
		return v.(*AgentTool)
	}
	a, skip, ok := adkAgentToolFields(t)
	if !ok || hasSchema(a) {
		return nil
	}
	at := &AgentTool{inner: t, agent: a, skip: skip, h: h}
	if h.nAgentTools.Load() < maxAgentTools {
		if v, loaded := h.agentTools.LoadOrStore(t, at); loaded {
			return v.(*AgentTool)
		}
		h.nAgentTools.Add(1)
	}
	return at
}

// mapped reports whether a mapping names the tool name (exactly or by
// pattern). An AgentTool is a dependency of its own only then: its
// sub-agent's tools and model calls are the chain's dependencies, and a
// breaker around the whole sub-run would trip on the sub-agent's own
// slowness and hide its dependencies' breakers from the root.
func (r *resolver) mapped(name string) bool {
	if _, ok := r.exact[name]; ok {
		return true
	}
	for _, p := range r.patterns {
		if ok, _ := path.Match(p.glob, name); ok {
			return true
		}
	}
	return false
}

// maxAgentTools bounds the cache of AgentTools: agent tools are normally
// built once, with their agents.
const maxAgentTools = 1024

// Name returns the agent's name.
func (t *AgentTool) Name() string { return t.agent.Name() }

// Description returns the agent's description.
func (t *AgentTool) Description() string { return t.agent.Description() }

// IsLongRunning returns false, as ADK's agent tool does.
func (t *AgentTool) IsLongRunning() bool { return false }

// Unwrap returns ADK's agent tool this one stands in for, or nil.
func (t *AgentTool) Unwrap() tool.Tool { return t.inner }

// DisplayResultOnSkipSummarization delegates to ADK's agent tool, where it
// has the method.
func (t *AgentTool) DisplayResultOnSkipSummarization() bool {
	if t.inner == nil {
		return displayOnSkip // built by Handler.AgentTool: as ADK's agent tool answers
	}
	d, ok := t.inner.(interface{ DisplayResultOnSkipSummarization() bool })
	return ok && d.DisplayResultOnSkipSummarization()
}

// DefersResponse delegates to ADK's agent tool, where it has the method
// (ADK v2 asks it of the tool a call ran; see GuardedTool.DefersResponse).
func (t *AgentTool) DefersResponse() bool {
	d, ok := t.inner.(interface{ DefersResponse() bool })
	return ok && d.DefersResponse()
}

// Declaration returns ADK's agent tool's declaration.
func (t *AgentTool) Declaration() *genai.FunctionDeclaration {
	if d, ok := t.inner.(interface {
		Declaration() *genai.FunctionDeclaration
	}); ok {
		return d.Declaration()
	}
	decl := &genai.FunctionDeclaration{Name: t.Name(), Description: t.Description()}
	if in := schemaOf(t.agent, "InputSchema"); in != nil {
		decl.Parameters = in
		return decl
	}
	decl.Parameters = &genai.Schema{
		Type:       "OBJECT",
		Properties: map[string]*genai.Schema{"request": {Type: "STRING"}},
		Required:   []string{"request"},
	}
	return decl
}

// ProcessRequest declares the tool to the model.
func (t *AgentTool) ProcessRequest(_ agent.ToolContext, req *model.LLMRequest) error {
	return packTool(req, t)
}

// subPlugin is the plugin of a sub-run's runner: the handler's callbacks,
// as plugin.FromHandler assembles them (both use PluginConfig).
func (h *Handler) subPlugin() (*adkplugin.Plugin, error) {
	h.subOnce.Do(func() {
		h.sub, h.subErr = adkplugin.New(h.PluginConfig("adkbreaker"))
	})
	return h.sub, h.subErr
}

// PluginConfig is the ADK plugin configuration that runs h: every callback
// the handler needs, under name. plugin.FromHandler builds the plugin users
// register from it, and a sub-run behind an agent tool gets the same.
func (h *Handler) PluginConfig(name string) adkplugin.Config {
	return adkplugin.Config{
		Name:                name,
		BeforeToolCallback:  h.BeforeTool,
		AfterToolCallback:   h.AfterTool,
		OnToolErrorCallback: h.OnToolError,
		BeforeModelCallback: h.BeforeModel,
		BeforeRunCallback:   h.BeforeRun,
		AfterRunCallback:    h.AfterRun,
		AfterModelCallback:  h.AfterModel, // repeat.go: counts the calls the model lists
		OnEventCallback:     h.OnEvent,    // turnend.go: an ended turn ends a LoopAgent

		// tokens.go: a model call that ended in a stall after its first chunk
		OnModelErrorCallback: h.OnModelError,
	}
}

// Run runs the sub-agent as ADK's agent tool does, on a runner with the
// handler's plugin, in a sub-run whose accounting is the calling turn's.
func (t *AgentTool) Run(ctx agent.ToolContext, args any) (map[string]any, error) {
	margs, ok := args.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("agentTool expects map[string]any arguments, got %T", args)
	}
	if t.skip {
		if actions := ctx.Actions(); actions != nil {
			actions.SkipSummarization = true
		}
	}
	name := t.agent.Name()
	var content *genai.Content
	if schemaOf(t.agent, "InputSchema") != nil {
		// Built by Handler.AgentTool: the arguments as JSON (not validated
		// against the schema).
		b, err := json.Marshal(margs)
		if err != nil {
			return nil, fmt.Errorf("error serializing tool arguments for agent %s: %w", name, err)
		}
		content = genai.NewContentFromText(string(b), genai.RoleUser)
	} else {
		input, ok := margs["request"]
		if !ok {
			return nil, fmt.Errorf("missing required argument 'request' for agent %s", name)
		}
		text, ok := input.(string)
		if !ok {
			text = fmt.Sprint(input)
		}
		content = genai.NewContentFromText(text, genai.RoleUser)
	}
	res, err := t.run(ctx, margs, name, content)
	if err != nil {
		// Every error from the sub-run reaches the caller's model as text
		// (ADK passes err.Error() on): only its sanitised form is passed
		// on, whatever path it took (an error event, an error the sub-run
		// returned, a session or output error).
		return nil, sanitisedError(err)
	}
	return res, nil
}

// subRunError is an error of a sub-run, its text sanitised (redact.Text):
// Error is what the caller's model reads; Unwrap keeps the original for
// errors.Is and errors.As in the caller's code.
type subRunError struct {
	msg string
	err error
}

func (e *subRunError) Error() string { return e.msg }
func (e *subRunError) Unwrap() error { return e.err }

// maxSubRunErrorBytes bounds the text of a sub-run's error.
const maxSubRunErrorBytes = 512

func sanitisedError(err error) error {
	return &subRunError{msg: redact.Text(err.Error(), maxSubRunErrorBytes), err: err}
}

// run runs the sub-agent on content (Run's body; its errors are sanitised
// by Run).
func (t *AgentTool) run(ctx agent.ToolContext, margs map[string]any, name string, content *genai.Content) (map[string]any, error) {
	p, err := t.h.subPlugin()
	if err != nil {
		return nil, fmt.Errorf("failed to create runner")
	}
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{
		AppName:         name,
		Agent:           t.agent,
		SessionService:  svc,
		ArtifactService: artifact.InMemoryService(),
		MemoryService:   memory.InMemoryService(),
		PluginConfig:    runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}},
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create runner")
	}
	state := make(map[string]any)
	for k, v := range ctx.State().All() {
		if !strings.HasPrefix(k, "_adk") { // ADK's internal state stays with the caller
			state[k] = v
		}
	}
	root, cf := chainOf(ctx, ctx.InvocationID())
	f := &chainFrame{root: root, scope: loopScope(ctx, cf)}
	sctx := context.WithValue(ctx, chainKey{}, f)
	activeSubRuns.Add(1) // before the sub-run's first callback, after its last
	defer activeSubRuns.Add(-1)
	sub, err := svc.Create(sctx, &session.CreateRequest{AppName: name, UserID: ctx.UserID(), State: state})
	if err != nil {
		return nil, fmt.Errorf("failed to create session for sub-agent %s: %w", name, err)
	}
	var last *session.Event
	for ev, err := range r.Run(sctx, sub.Session.UserID(), sub.Session.ID(), content, agent.RunConfig{StreamingMode: agent.StreamingModeSSE}) {
		if err != nil {
			return nil, fmt.Errorf("error during execution of sub-agent %s: %w", name, err)
		}
		if ev.ErrorCode != "" || ev.ErrorMessage != "" {
			// ADK's agent tool fails the same way; the code and message come
			// from the sub-agent's model or tools (upstream text), and the
			// model reads this error: only their sanitised form is passed on
			// (here, and again by Run).
			return nil, fmt.Errorf("error from sub-agent %q (code: %q, message: %q)", name,
				redact.Text(ev.ErrorCode, 64), redact.Text(ev.ErrorMessage, 256))
		}
		if ev.LLMResponse.Content != nil {
			last = ev
		}
	}
	if dep, reason := f.lastRefused(); dep != "" {
		return t.unavailable(ctx, root, dep, reason), nil
	}
	if last == nil {
		return map[string]any{}, nil
	}
	var parts []string
	for _, part := range last.LLMResponse.Content.Parts {
		if answerPart(part) {
			parts = append(parts, part.Text)
		}
	}
	if len(parts) == 0 {
		return map[string]any{}, nil
	}
	text := strings.Join(parts, "\n")
	if schemaOf(t.agent, "OutputSchema") != nil {
		// Built by Handler.AgentTool: the answer as a JSON object (not
		// validated against the schema).
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			return nil, fmt.Errorf("output validation failed for sub-agent %s: %w", name, err)
		}
		return out, nil
	}
	return map[string]any{"result": text}, nil
}

// unavailable is the agent tool's answer when dep was refused in its
// sub-run: dep's unavailable payload under the agent tool's name, with the
// root turn's count of dep's short-circuits. The refusal was counted once,
// in the root turn, where it happened (at any depth): passing it up the
// chain counts nothing more, so one refusal four agent tools deep spends
// one short-circuit, not four. The caller's own sub-run, if any, learns
// that dep was refused.
func (t *AgentTool) unavailable(ctx agent.ToolContext, root string, dep registry.Key, reason degrade.Reason) map[string]any {
	h := t.h
	// The refusal was counted where it happened, in the root turn (the
	// sub-run's short-circuit, however deep): passing it on to the caller
	// is not another one.
	n, total := max(1, h.ledger.Count(root, string(dep))), h.ledger.Total(root)
	_, caller := chainOf(ctx, "")
	noteRefused(caller, dep, reason)
	var ra time.Duration
	if br, ok := h.reg.Lookup(dep); ok {
		ra = br.RetryAfter()
	}
	if total >= h.turnLimit {
		ctx.Actions().Escalate = true // as shortCircuit does: a LoopAgent stops
	}
	return t.builder(dep).Build(reason, ra, n, nil)
}

func (t *AgentTool) builder(dep registry.Key) *degrade.Builder {
	if b, ok := t.builders.Load(dep); ok {
		return b.(*degrade.Builder)
	}
	b, _ := t.builders.LoadOrStore(dep, degrade.NewBuilder(string(dep), t.Name(), t.h.scLimit, degrade.Extras{}))
	return b.(*degrade.Builder)
}

// agentToolCache is the Handler's cache of AgentTools.
type agentToolCache struct {
	agentTools  sync.Map // tool.Tool (ADK's agent tool) → *AgentTool
	nAgentTools atomic.Int64
	subOnce     sync.Once
	sub         *adkplugin.Plugin
	subErr      error
}
