package registry_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/sony/gobreaker/v2"
)

// BenchmarkAdmitDone measures a call through the registry (Admit + Done)
// against gobreaker's bare TwoStep (Allow + done), closed and open, serial
// and parallel. Run with:
//
//	go test -run '^$' -bench AdmitDone -benchmem ./registry/
func BenchmarkAdmitDone(b *testing.B) {
	// A policy that never trips on the benchmark's successes.
	closedPol := registry.Policy{ConsecutiveFailures: 1 << 30, DisableFailureRate: true}
	// Trips on the first failure and holds for an hour.
	openPol := registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Hour, MaxOpenFor: time.Hour, NoJitter: true}

	newReg := func(b *testing.B, pol registry.Policy) *registry.Breaker {
		r, err := registry.New(registry.WithDefaultPolicy(pol)) // system clock
		if err != nil {
			b.Fatal(err)
		}
		br, err := r.Get("svc")
		if err != nil {
			b.Fatal(err)
		}
		return br
	}
	newGB := func(tripped bool) *gobreaker.TwoStepCircuitBreaker[struct{}] {
		cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
			Interval: time.Minute, BucketPeriod: 6 * time.Second, Timeout: time.Hour, // as the registry sets it up
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
		})
		if tripped {
			done, _ := cb.Allow()
			done(errors.New("fail"))
		}
		return cb
	}
	openReg := func(b *testing.B) *registry.Breaker {
		br := newReg(b, openPol)
		tk, _ := br.Admit()
		tk.Done(registry.Failure)
		if br.State() != registry.StateOpen {
			b.Fatal("not open")
		}
		return br
	}

	b.Run("closed", func(b *testing.B) {
		b.Run("registry", func(b *testing.B) {
			br := newReg(b, closedPol)
			b.ReportAllocs()
			for b.Loop() {
				tk, d := br.Admit()
				if !d.Allowed {
					b.Fatal("refused")
				}
				tk.Done(registry.Success)
			}
		})
		b.Run("gobreaker", func(b *testing.B) {
			cb := newGB(false)
			b.ReportAllocs()
			for b.Loop() {
				done, err := cb.Allow()
				if err != nil {
					b.Fatal(err)
				}
				done(nil)
			}
		})
	})
	b.Run("open", func(b *testing.B) {
		b.Run("registry", func(b *testing.B) {
			br := openReg(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, d := br.Admit(); d.Allowed {
					b.Fatal("admitted")
				}
			}
		})
		b.Run("gobreaker", func(b *testing.B) {
			cb := newGB(true)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cb.Allow(); err == nil {
					b.Fatal("admitted")
				}
			}
		})
	})
	b.Run("closed-parallel", func(b *testing.B) {
		b.Run("registry", func(b *testing.B) {
			br := newReg(b, closedPol)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tk, _ := br.Admit()
					tk.Done(registry.Success)
				}
			})
		})
		b.Run("gobreaker", func(b *testing.B) {
			cb := newGB(false)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					done, _ := cb.Allow()
					done(nil)
				}
			})
		})
	})
	b.Run("open-parallel", func(b *testing.B) {
		b.Run("registry", func(b *testing.B) {
			br := openReg(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					br.Admit()
				}
			})
		})
		b.Run("gobreaker", func(b *testing.B) {
			cb := newGB(true)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = cb.Allow()
				}
			})
		})
	})
	// Each goroutine works its own dependency key, looked up per call as
	// the plugin does: no contention on one breaker's locks.
	b.Run("distinct-keys-parallel", func(b *testing.B) {
		r, err := registry.New(registry.WithDefaultPolicy(closedPol))
		if err != nil {
			b.Fatal(err)
		}
		var next atomic.Int32
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			k := registry.Key(fmt.Sprintf("dep-%d", next.Add(1)))
			if _, err := r.Get(k); err != nil {
				b.Error(err)
				return
			}
			for pb.Next() {
				br, _ := r.Get(k)
				tk, _ := br.Admit()
				tk.Done(registry.Success)
			}
		})
	})
}
