package degrade

import (
	"strconv"
	"strings"
	"time"
)

// The annotation is annotationPrefix, the retry in whole seconds,
// annotationSuffix. StripAnnotation recognises exactly this shape.
const (
	annotationPrefix = "[UNAVAILABLE: temporarily unavailable, retry in about "
	annotationSuffix = "s. Do not call this tool now.] "
	// isolatedAnnotation marks a tool whose dependency an operator isolated.
	isolatedAnnotation = "[UNAVAILABLE: taken offline until an operator restores it. Do not call this tool now.] "
)

// Annotate returns a tool description prefixed with a note that the tool is
// temporarily unavailable, for declarations sent to the model while the
// tool's dependency is short-circuited, so the model knows before it tries.
// For example, with retryAfter 27s:
//
//	[UNAVAILABLE: temporarily unavailable, retry in about 27s. Do not call this tool now.] Searches the web.
//
// The retry is reported through RetryAfterSeconds. Annotate is idempotent in
// shape: an annotation already at the start of description is replaced,
// never stacked.
//
// With UntilReset (an isolated dependency) the note names no time:
//
//	[UNAVAILABLE: taken offline until an operator restores it. Do not call this tool now.] Searches the web.
func Annotate(description string, retryAfter time.Duration) string {
	description = StripAnnotation(description)
	if retryAfter == UntilReset {
		return isolatedAnnotation + description
	}
	var b strings.Builder
	b.Grow(len(annotationPrefix) + 4 + len(annotationSuffix) + len(description))
	b.WriteString(annotationPrefix)
	b.WriteString(strconv.Itoa(RetryAfterSeconds(retryAfter)))
	b.WriteString(annotationSuffix)
	b.WriteString(description)
	return b.String()
}

// StripAnnotation returns description without the annotations Annotate put
// at its start. A description that does not start with one is returned
// unchanged.
func StripAnnotation(description string) string {
	for {
		if rest, ok := strings.CutPrefix(description, isolatedAnnotation); ok {
			description = rest
			continue
		}
		rest, ok := strings.CutPrefix(description, annotationPrefix)
		if !ok {
			return description
		}
		n := 0
		for n < len(rest) && n < 4 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 0 {
			return description
		}
		rest, ok = strings.CutPrefix(rest[n:], annotationSuffix)
		if !ok {
			return description
		}
		description = rest
	}
}
