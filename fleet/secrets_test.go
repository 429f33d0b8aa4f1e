package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/internal/redistest"
	"github.com/adkbreaker/adkbreaker/registry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestCredentialsNeverLeak: a password-protected Redis, the password given
// through the environment (as the file does it). With the wrong password
// the fleet stays per-replica; neither the logs, the construction errors,
// the stats nor the metrics carry either password.
func TestCredentialsNeverLeak(t *testing.T) {
	const good, wrong = "s3cr3t-Pa55w0rd-0123456789", "wr0ng-Pa55w0rd-9876543210"
	srv := redistest.New(t, redistest.Options{Password: good})
	var logs syncBuf
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	t.Setenv("TEST_REDIS_PASSWORD", wrong)
	reg := registry.MustNew()
	f, err := fleet.FromConfig(reg, &config.Fleet{Address: srv.Addr(), PasswordEnv: "TEST_REDIS_PASSWORD"},
		fleet.WithLogger(logger), fleet.WithMeterProvider(mp), fleet.WithReconnectBackoff(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if err := f.WaitHealthy(ctx); err == nil {
		t.Fatal("healthy with a wrong password")
	}
	cancel()
	f.Close()

	t.Setenv("TEST_REDIS_PASSWORD", good)
	reg2 := registry.MustNew()
	f2, err := fleet.FromConfig(reg2, &config.Fleet{Address: srv.Addr(), PasswordEnv: "TEST_REDIS_PASSWORD"},
		fleet.WithLogger(logger), fleet.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f2.WaitHealthy(ctx); err != nil {
		t.Fatalf("not healthy with the right password: %v", err)
	}

	// Construction errors never echo a password-bearing address.
	_, err = fleet.New(reg, fleet.WithAddress("redis://admin:"+good+"@"+srv.Addr()))
	errText := fmt.Sprint(err)
	t.Setenv("TEST_REDIS_PASSWORD", "")
	_, err2 := fleet.FromConfig(reg, &config.Fleet{Address: srv.Addr(), PasswordEnv: "TEST_REDIS_PASSWORD"})
	errText += fmt.Sprint(err2)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	everything := logs.String() + errText + fmt.Sprintf("%+v %+v %+v", f.Stats(), f2.Stats(), rm)
	for _, secret := range []string{good, wrong} {
		for i := 0; i+8 <= len(secret); i++ {
			if piece := secret[i : i+8]; strings.Contains(everything, piece) {
				t.Fatalf("%q of a password leaked:\n%s", piece, everything)
			}
		}
	}
	if !strings.Contains(logs.String(), "error=auth") {
		t.Errorf("the wrong password was not logged as an auth error:\n%s", logs.String())
	}
	if err == nil || err2 == nil {
		t.Fatalf("errors: %v / %v", err, err2)
	}
	// The metrics docs/telemetry.md promises are there.
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
		}
	}
	for _, name := range []string{fleet.MetricMessages, fleet.MetricDropped, fleet.MetricLeases, fleet.MetricRedisUp, fleet.MetricRedisErrors, fleet.MetricRedisReconnects,
		fleet.MetricOutcomes, fleet.MetricOutcomesDropped, fleet.MetricRateTrips} {
		if !seen[name] {
			t.Errorf("metric %s not recorded", name)
		}
	}
	if s := f.Stats(); s.RedisErrors == 0 || s.LastError != "auth" {
		t.Errorf("wrong password: stats %+v", s)
	}
}
