package redact_test

import (
	"strconv"
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

// BenchmarkTextDeepEscapes: an escape nested as deep as the input allows,
// each layer in another scheme than the one inside it (so that every layer
// needs one more decoding), at two sizes: the time grows with the length,
// not with its square.
func BenchmarkTextDeepEscapes(b *testing.B) {
	for _, size := range []int{4 << 10, 32 << 10} {
		s := "&#61;"
		for len(s) < size {
			if s[0] == '&' {
				s = "%26" + s[1:]
			} else {
				s = "&#37;" + s[1:]
			}
		}
		in := "password" + s + "hunter2xyz"
		b.Run(strconv.Itoa(size>>10)+"K", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				redact.Text(in, 64<<10)
			}
		})
	}
}
