package incident

import (
	"container/heap"
	"sync"
	"time"
)

// Sim is a discrete-event virtual clock. It is the registry's Clock (the
// breaker's holds, leases and retry_after read it) and the only way the
// simulated activities — turns, the traffic source, the dependency's
// latency — wait.
//
// Every activity is counted while it runs; when none runs, the driver moves
// the clock to the earliest pending wake-up and wakes that one activity.
// Only one activity therefore runs at a time, so a run is deterministic and
// takes as much real time as the code it executes, not the minutes it
// simulates. The rule that makes it exact: an activity blocks only in
// Sleep (ADK's own goroutines — the function-call goroutine a turn's flow
// waits for — belong to the turn that started them, which runs one tool
// call at a time).
type Sim struct {
	mu     sync.Mutex
	idle   *sync.Cond // signalled when active may have dropped to 0
	now    time.Time  // guarded by mu
	active int        // guarded by mu: activities running (not sleeping)
	timers wakeups    // guarded by mu
	seq    uint64     // guarded by mu: FIFO among equal wake-up times
}

// epoch is the simulation's start: 14:00:00 on the incident's day, so that
// timestamps read like the postmortem's minute-by-minute account.
var epoch = time.Date(2026, 3, 12, 14, 0, 0, 0, time.UTC)

func NewSim() *Sim {
	s := &Sim{now: epoch}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Now returns the virtual time.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Since returns the virtual time elapsed since the start.
func (s *Sim) Since() time.Duration { return s.Now().Sub(epoch) }

// Go starts an activity.
func (s *Sim) Go(f func()) {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	go func() {
		defer s.done()
		f()
	}()
}

func (s *Sim) done() {
	s.mu.Lock()
	s.active--
	s.idle.Signal()
	s.mu.Unlock()
}

// Sleep blocks the calling activity for d of virtual time.
func (s *Sim) Sleep(d time.Duration) {
	w := &wakeup{ch: make(chan struct{})}
	s.mu.Lock()
	w.at, w.seq = s.now.Add(max(d, 0)), s.seq
	s.seq++
	heap.Push(&s.timers, w)
	s.active--
	s.idle.Signal()
	s.mu.Unlock()
	<-w.ch
}

// Run drives the clock until no activity runs or sleeps.
func (s *Sim) Run() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.active > 0 {
			s.idle.Wait()
		}
		if s.timers.Len() == 0 {
			return
		}
		w := heap.Pop(&s.timers).(*wakeup)
		s.now = w.at
		s.active++ // the woken activity runs
		close(w.ch)
	}
}

type wakeup struct {
	at  time.Time
	seq uint64
	ch  chan struct{}
}

// wakeups is a min-heap by (at, seq).
type wakeups []*wakeup

func (h wakeups) Len() int { return len(h) }
func (h wakeups) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h wakeups) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeups) Push(x any)   { *h = append(*h, x.(*wakeup)) }
func (h *wakeups) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
