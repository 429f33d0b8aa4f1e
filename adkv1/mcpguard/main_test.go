package mcpguard_test

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain silences the default logger: tests that check log lines pass
// their own with WithLogger.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
