package fleet_test

import (
	"io"
	"log/slog"
	"slices"
	"time"
)

func newDiscardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func sortDurations(ds []time.Duration) { slices.Sort(ds) }
