// Package browsertest starts a real headless Chromium for tests (through
// chromedp) and saves screenshots for the docs. It is test support only.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// RequireTool returns the path of the first of names found on PATH. When
// none is, it fails the test under CI=true (CI installs the tools) and skips
// it elsewhere.
func RequireTool(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true (apt-get install %s)", names[0], pkg)
	}
	t.Skipf("%s not installed (apt-get install %s); CI installs it", names[0], pkg)
	return ""
}

// New starts a headless Chromium and returns its context, valid for the
// rest of the test (at most timeout).
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Chromium; not in -short")
	}
	bin := RequireTool(t, "chromium", "chromium", "chromium-browser", "google-chrome")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 720), chromedp.Flag("headless", "new"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	// The first call starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// Screenshot saves a full-page screenshot named name. With
// UPDATE_SCREENSHOTS=1 it goes to docsImg (the images the docs show), else
// into the test's temporary directory.
func Screenshot(t testing.TB, ctx context.Context, docsImg, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		dir = docsImg
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
