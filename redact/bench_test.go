package redact_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/redact"
)

// BenchmarkText: what a span or payload usually carries (a short plain
// value, a sentence, an upstream error with a URL and a key), and a
// kilobyte of prose.
func BenchmarkText(b *testing.B) {
	for name, s := range map[string]string{
		"word":     "acme",
		"sentence": "look up the invoice of acme corporation for november",
		"error":    `Post "https://api.example.com/v1/charge?api_key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q": dial tcp 10.0.0.7:443: connect: connection refused`,
		"prose-1K": strings.Repeat("The quarterly report shows revenue grew in every region. ", 18),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				redact.Text(s, 4096)
			}
		})
	}
}
