package mcpguard

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/retrybudget"
)

// ksUniform returns the Kolmogorov–Smirnov statistic of samples against
// U[0, ceil).
func ksUniform(samples []time.Duration, ceil time.Duration) float64 {
	xs := slices.Clone(samples)
	slices.Sort(xs)
	n := float64(len(xs))
	var d float64
	for i, x := range xs {
		f := float64(x) / float64(ceil)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

// ksCritical is the critical value of the one-sample KS statistic at
// significance 0.01 (p > 0.01 passes), asymptotic: 1.628/√n.
func ksCritical(n int) float64 { return 1.628 / math.Sqrt(float64(n)) }

// TestBackoffFullJitterKS (R1): 10,000 delays per retry n from a seeded
// source pass a KS test against U[0, min(cap, base·2ⁿ)); a plain
// exponential backoff with "equal jitter" fails it (the test has power).
func TestBackoffFullJitterKS(t *testing.T) {
	const N = 10000
	base, cap := 100*time.Millisecond, 2*time.Second
	r := rand.New(rand.NewPCG(42, 1))
	for n := range 7 {
		ceil := min(cap, base<<n)
		full := make([]time.Duration, N)
		equal := make([]time.Duration, N)
		for i := range N {
			full[i] = retrybudget.Backoff(base, cap, n, r.Float64())
			if full[i] < 0 || full[i] >= ceil {
				t.Fatalf("retry %d: delay %s outside [0, %s)", n, full[i], ceil)
			}
			equal[i] = ceil/2 + retrybudget.Backoff(base, cap, n, r.Float64())/2
		}
		if d := ksUniform(full, ceil); d > ksCritical(N) {
			t.Errorf("retry %d: KS D=%.4f > %.4f: not uniform on [0, %s)", n, d, ksCritical(N), ceil)
		} else {
			t.Logf("retry %d: ceil %s, KS D=%.4f (critical %.4f)", n, ceil, d, ksCritical(N))
		}
		if d := ksUniform(equal, ceil); d <= ksCritical(N) {
			t.Errorf("retry %d: equal jitter passed the KS test (D=%.4f): the test has no power", n, d)
		}
	}
}

func TestBackoffOverflow(t *testing.T) {
	for _, n := range []int{40, 62, 63, 64, 1000} {
		if d := retrybudget.Backoff(time.Second, time.Minute, n, 0.999); d >= time.Minute || d < 0 {
			t.Errorf("retry %d: %s", n, d)
		}
	}
}

// TestRetryBudgetWindow (R2): with every operation failing, retries stay
// within min + ratio·operations per window.
func TestRetryBudgetWindow(t *testing.T) {
	r := Retry{}.WithDefaults()
	b := retrybudget.New(r.BudgetRatio, r.BudgetMin, r.BudgetWindow)
	now := time.Unix(1000, 0)
	retries := 0
	for i := range 1000 {
		b.Operation(now.Add(time.Duration(i) * time.Millisecond))
		for range 2 {
			if b.TryRetry(now.Add(time.Duration(i) * time.Millisecond)) {
				retries++
			}
		}
	}
	if limit := 3 + 0.2*1000; float64(retries) > limit || float64(retries) < limit-2 {
		t.Errorf("retries = %d, want about %.0f", retries, limit)
	}
	// A new window: the minimum is available again.
	later := now.Add(time.Minute)
	for i := range DefaultBudgetMin {
		if !b.TryRetry(later) {
			t.Fatalf("retry %d refused in a fresh window", i)
		}
	}
	if b.TryRetry(later) {
		t.Error("retry beyond the minimum allowed with no operations in the window")
	}
}
