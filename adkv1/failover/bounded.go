package failover

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/adk/model"
)

// DefaultMaxAbandoned is Endpoint.MaxAbandoned's default.
const DefaultMaxAbandoned = 16

// maxMaxAbandoned bounds Endpoint.MaxAbandoned.
const maxMaxAbandoned = 1 << 16

// MetricAbandoned is the counter of endpoint calls the Model stopped waiting
// for (recorded with WithMeterProvider): the endpoint's Timeout (or the
// caller's cancellation) passed while a call that ignores its context was
// still running. Attributes: model and endpoint.
const MetricAbandoned = "adkbreaker.model.abandoned_calls"

// pumped is one (response, error) pair an endpoint yielded.
type pumped struct {
	resp *model.LLMResponse
	err  error
}

// boundedRun is one endpoint call running on its own goroutine, so that the
// caller can stop waiting for it at the endpoint's Timeout even when the
// endpoint ignores its context. Items cross over in lockstep: the endpoint's
// yield returns what the caller's handling of the item returned, so the
// endpoint sees the same iterator protocol as a direct call; everything
// about the call's state stays on the caller's goroutine.
type boundedRun struct {
	items    chan pumped
	ack      chan bool
	quit     chan struct{} // closed when the caller stops listening
	quitOnce sync.Once
	done     chan struct{} // closed when the endpoint's call has returned
	// state: 0 running, 1 abandoned by the caller, 2 finished first.
	state    atomic.Int32
	panicked bool // written before done is closed
	panicVal any
}

func (r *boundedRun) stop() { r.quitOnce.Do(func() { close(r.quit) }) }

// runBounded calls ep on a goroutine and hands its items to cl.item on the
// caller's goroutine. It returns when the call returned, or when the
// caller's wait must end first: our Timeout before the first item, or the
// caller's cancellation. The call is then abandoned: its outcome is judged
// from the context's cause now, whatever it yields later is dropped, and its
// goroutine ends when the endpoint's call returns. Abandoned calls still
// running are counted per endpoint (MaxAbandoned).
func (m *Model) runBounded(cl *call, ep *endpoint, stream bool) {
	r := &boundedRun{items: make(chan pumped), ack: make(chan bool), quit: make(chan struct{}), done: make(chan struct{})}
	go r.run(ep, &cl.ctx, &cl.req, stream)
	defer r.stop()
	for {
		select {
		case it := <-r.items:
			ok := cl.item(it.resp, it.err)
			r.ack <- ok // the endpoint's goroutine waits for it
			if !ok {
				// The endpoint was told to stop; one that goes on yielding
				// gets false at once.
				r.stop()
				<-r.done
				r.repanic()
				return
			}
		case <-r.done:
			r.repanic()
			return
		case <-cl.actx.Done():
			select {
			case <-r.done: // finished meanwhile: take what it said
				continue
			default:
			}
			if r.state.CompareAndSwap(0, 1) {
				ep.abandoned.Add(1)
				m.countAbandoned(cl.caller, ep)
			}
			cl.item(nil, context.Cause(cl.actx))
			return
		}
	}
}

func (r *boundedRun) repanic() {
	if r.panicked {
		panic(r.panicVal)
	}
}

// run is the endpoint's goroutine.
func (r *boundedRun) run(ep *endpoint, ctx context.Context, req *model.LLMRequest, stream bool) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked, r.panicVal = true, v
		}
		if !r.state.CompareAndSwap(0, 2) {
			ep.abandoned.Add(-1) // abandoned: its result was dropped
		}
		close(r.done)
	}()
	ep.LLM.GenerateContent(ctx, req, stream)(func(resp *model.LLMResponse, err error) bool {
		select {
		case r.items <- pumped{resp, err}:
		case <-r.quit:
			return false
		}
		select {
		case ok := <-r.ack:
			return ok
		case <-r.quit:
			return false
		}
	})
}

// Abandoned returns how many endpoint calls the Model stopped waiting for
// are still running (calls that ignore their context, past their
// endpoint's Timeout). It returns to zero as they end.
func (m *Model) Abandoned() int {
	n := int64(0)
	for i := range m.eps {
		n += m.eps[i].abandoned.Load()
	}
	return int(n)
}

func newAbandonedCounter(mp metric.MeterProvider) (metric.Int64Counter, error) {
	return mp.Meter(ScopeName).Int64Counter(MetricAbandoned,
		metric.WithUnit("{call}"),
		metric.WithDescription("Model endpoint calls abandoned at the endpoint's timeout because they ignored their context."))
}

func (m *Model) countAbandoned(ctx context.Context, ep *endpoint) {
	if m.abandonedCalls == nil {
		return
	}
	m.abandonedCalls.Add(ctx, 1, metric.WithAttributes(
		attribute.String("model", m.name), attribute.String("endpoint", string(ep.Key))))
}
