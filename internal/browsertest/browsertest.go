// Package browsertest starts a real headless Chromium for tests (through
// chromedp) and saves screenshots for the docs. It is test support only.
package browsertest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// RequireTool returns the path of the first of names found on PATH. When
// none is, it fails the test under CI=true (CI installs the tools) and skips
// it elsewhere, saying so on one line (see Skip).
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
	Skip(t, fmt.Sprintf("%s not installed (apt-get install %s); CI installs it", names[0], pkg))
	return ""
}

// Skip skips the test for why, and says so on one line where a person sees
// it: a passing package's output, t.Skip's message included, is hidden by
// a non-verbose `go test ./...`, so a test skipped for a missing tool would
// leave no trace. The line goes to the terminal (/dev/tty) when there is
// one, else to standard error (shown by `go test` in a package directory,
// with -v, and in CI logs):
//
//	adkbreaker: skipped TestBrowser (statuspage): chromium not installed (apt-get install chromium); CI installs it
func Skip(t testing.TB, why string) {
	t.Helper()
	pkg := ""
	if wd, err := os.Getwd(); err == nil {
		pkg = filepath.Base(wd)
	}
	w, closeW := skipOut()
	fmt.Fprintf(w, "adkbreaker: skipped %s (%s): %s\n", t.Name(), pkg, why)
	closeW()
	t.Skip(why)
}

// skipOut is where Skip writes its line; tests replace it.
var skipOut = func() (io.Writer, func()) {
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return tty, func() { _ = tty.Close() }
	}
	return os.Stderr, func() {}
}

// New starts a headless Chromium and returns its context, valid for the
// rest of the test (at most timeout).
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Chromium; not in -short") // asked for: no line
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
