package incident

import (
	"fmt"
	"math"
	"strings"
)

// Chart draws calls reaching the dependency per 10 s, one line per variant,
// on a logarithmic axis (so that a handful of probes is visible next to
// hundreds of retries), with the outage shaded. Hand-written SVG.
func Chart(mode string, results []*Result) string {
	const (
		w, h                     = 960.0, 440.0
		left, right, top, bottom = 70.0, 210.0, 50.0, 60.0
		pw, ph                   = w - left - right, h - top - bottom
	)
	maxV := 1
	for _, r := range results {
		for _, v := range r.Dep.perBucket {
			maxV = max(maxV, v)
		}
	}
	yMax := math.Pow(10, math.Ceil(math.Log10(float64(maxV+1))))
	x := func(minutes float64) float64 { return left + pw*minutes/Simulated.Minutes() }
	y := func(v float64) float64 { return top + ph*(1-math.Log10(1+v)/math.Log10(1+yMax)) }
	colours := []string{"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd"}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="13">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="24" font-size="16" font-weight="bold">Calls reaching %s per 10 s — mode %s (%s)</text>`+"\n", left, Dependency, mode, modeWords(mode))
	// The outage.
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#999" fill-opacity="0.18"/>`+"\n",
		x(OutageFrom.Minutes()), top, x(OutageTo.Minutes())-x(OutageFrom.Minutes()), ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555" text-anchor="middle">dependency down</text>`+"\n",
		(x(OutageFrom.Minutes())+x(OutageTo.Minutes()))/2, top+16)
	// Axes, grid and ticks.
	for m := 0; m <= int(Simulated.Minutes()); m++ {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/>`+"\n", x(float64(m)), top+ph, x(float64(m)), top+ph+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(float64(m)), top+ph+20, m)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">simulated minutes</text>`+"\n", left+pw/2, h-12)
	for v := 0.0; v <= yMax; v = max(1, v*10) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(v), left+pw, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%.0f</text>`+"\n", left-8, y(v), v)
	}
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">calls per 10 s (log scale)</text>`+"\n", top+ph/2)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/>`+"\n", left, top, left, top+ph)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/>`+"\n", left, top+ph, left+pw, top+ph)
	// One step line per variant; the second of each pair (retryandreflect
	// after none, the defaults after the incident's settings) is dashed and drawn
	// on top, so that identical lines both show.
	for i, r := range results {
		var pts []string
		for k, v := range r.Dep.perBucket {
			x0, x1 := x(float64(k)*bucket.Minutes()), x(float64(k+1)*bucket.Minutes())
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x0, y(float64(v)), x1, y(float64(v))))
		}
		dash := dashOf(i)
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", colours[i%len(colours)], dash, strings.Join(pts, " "))
	}
	// Legend.
	for i, r := range results {
		ly := top + 10 + float64(i)*40
		dash := dashOf(i)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", left+pw+15, ly, left+pw+40, ly, colours[i%len(colours)], dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", left+pw+48, ly, r.Variant)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" dominant-baseline="middle" fill="#555" font-size="11">%d calls while down</text>`+"\n", left+pw+48, ly+16, r.Dep.DeadCalls)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// dashOf is the dash pattern of the i-th variant: every second one dashed.
func dashOf(i int) string {
	if i%2 == 1 {
		return ` stroke-dasharray="7 5"`
	}
	return ""
}
