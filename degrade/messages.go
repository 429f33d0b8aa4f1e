package degrade

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxMessageBytes bounds the length in bytes of FinalMessage and
// CapabilityNotice.
const MaxMessageBytes = 500

// Unavailable names a dependency that could not be used, for FinalMessage.
type Unavailable struct {
	// Dependency is the configured dependency name. It goes through SafeName
	// rules; an empty or fully stripped name is left out of the message.
	Dependency string
	// RetryAfter is when the dependency may be tried again. Zero or negative
	// means as soon as possible (reported as about 1 second).
	RetryAfter time.Duration
}

// FinalMessage returns the text of a final response written for the end
// user, for when an invocation stops because its short-circuit budget is
// spent. It says that the request could not be fully completed because the
// named dependencies are temporarily unavailable, and when to try again:
// the largest RetryAfter among items — when every named dependency may be
// back, so a retry can complete the whole request — in words ("about 30
// seconds", "about 2 minutes").
//
// Names are sanitised, de-duplicated and sorted; when they do not all fit
// in MaxMessageBytes, the rest are counted ("and 3 other services"). With no
// usable name, the message speaks of "a service it depends on".
func FinalMessage(items []Unavailable) string {
	names, when := unavailableNames(items)
	const lead = "Sorry, I couldn't fully complete your request because "
	switch len(names) {
	case 0:
		return lead + "a service it depends on is temporarily unavailable. " + when
	case 1:
		return lead + names[0] + " is temporarily unavailable. " + when
	}
	return fitList(names, MaxMessageBytes, func(list string) string {
		return lead + list + " are temporarily unavailable. " + when
	}, "other service", "other services")
}

// TurnBudgetMessage returns the text of a final response written for the
// end user, for when an invocation stops because it used up its turn budget
// (a number of model calls or a length of time). items are the
// dependencies that were unavailable during the turn, as for FinalMessage;
// the message names them and says when to try again, for example:
//
//	Sorry, I couldn't complete your request within the steps and time allowed for one answer: billing-api was temporarily unavailable. Please try again in about 30 seconds.
//
// With no items it says only that the limit was reached.
func TurnBudgetMessage(items []Unavailable) string {
	const lead = "Sorry, I couldn't complete your request within the steps and time allowed for one answer"
	if len(items) == 0 {
		return lead + ". Please try again, perhaps with a simpler request."
	}
	names, when := unavailableNames(items)
	switch len(names) {
	case 0:
		return lead + ": a service it depends on was temporarily unavailable. " + when
	case 1:
		return lead + ": " + names[0] + " was temporarily unavailable. " + when
	}
	return fitList(names, MaxMessageBytes, func(list string) string {
		return lead + ": " + list + " were temporarily unavailable. " + when
	}, "other service", "other services")
}

// unavailableNames returns the sanitised, sorted, de-duplicated names of
// items and the sentence saying when to try again (the largest RetryAfter).
func unavailableNames(items []Unavailable) (names []string, when string) {
	names = make([]string, 0, len(items))
	var wait time.Duration
	for i, it := range items {
		if n := cleanName(it.Dependency); n != "" {
			names = append(names, n)
		}
		if i == 0 || it.RetryAfter > wait {
			wait = it.RetryAfter
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	when = "Please try again in a little while."
	switch {
	case wait == UntilReset:
		when = "It is not known when it will be back."
		if len(names) > 1 {
			when = "It is not known when all of them will be back."
		}
	case len(items) > 0:
		when = "Please try again in " + humanSeconds(RetryAfterSeconds(wait)) + "."
	}
	return names, when
}

// ModelUnavailableMessage returns the text of a final response written for
// the end user, for when the model itself is unavailable, for example:
//
//	The assistant is temporarily unavailable. Please try again in about 30 seconds.
//
// The retry is reported through RetryAfterSeconds and put in words.
//
// With UntilReset (every endpoint isolated) it names no time.
func ModelUnavailableMessage(retryAfter time.Duration) string {
	if retryAfter == UntilReset {
		return "The assistant is unavailable until its service is restored. It is not known when that will be."
	}
	return "The assistant is temporarily unavailable. Please try again in " +
		humanSeconds(RetryAfterSeconds(retryAfter)) + "."
}

// CapabilityNotice returns a note for the model that the listed capabilities
// (for example MCP servers) are temporarily unavailable, so their tools are
// not offered in this turn. Names are sanitised, de-duplicated and sorted,
// and the note is at most MaxMessageBytes. With no usable name it returns "".
func CapabilityNotice(missing []string) string {
	return capabilityNotice(missing, "Their tools are not offered in this turn, so do not try to call them.")
}

// DegradedCapabilityNotice is CapabilityNotice for capabilities that are
// temporarily unavailable although their tools are still offered (served
// from the last tool list that could be read): their calls may answer with
// status unavailable. With no usable name it returns "".
func DegradedCapabilityNotice(degraded []string) string {
	return capabilityNotice(degraded, "Their tools are still listed, but calls to them may return status "+
		"unavailable; if one does, do not call it again in this turn.")
}

func capabilityNotice(missing []string, what string) string {
	names := make([]string, 0, len(missing))
	for _, m := range missing {
		if n := cleanName(m); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return fitList(names, MaxMessageBytes, func(list string) string {
		return "Temporarily unavailable: " + list + ". " + what + " Continue with the tools you have, " +
			"and tell the user if part of the request cannot be done."
	}, "more", "more")
}

// fitList renders format with as many of names as fit in limit bytes,
// counting the rest as "N other" or "N others" (other for one, others for
// more). names must be sanitised, so that each is at most MaxNameBytes.
func fitList(names []string, limit int, format func(list string) string, other, others string) string {
	for shown := len(names); ; shown-- {
		list := names[:shown]
		if hidden := len(names) - shown; hidden > 0 {
			word := others
			if hidden == 1 {
				word = other
			}
			list = append(slices.Clip(list), strconv.Itoa(hidden)+" "+word)
		}
		if s := format(joinAnd(list)); len(s) <= limit || shown == 0 {
			return truncateUTF8(s, limit)
		}
	}
}

// joinAnd joins items as an English list: "a", "a and b", "a, b, and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " and " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + ", and " + items[len(items)-1]
}

// humanSeconds puts a retry in seconds into words: "about 1 second",
// "about 45 seconds", "about 2 minutes" (rounded up), "about 1 hour".
func humanSeconds(s int) string {
	switch {
	case s <= 1:
		return "about 1 second"
	case s < 60:
		return "about " + strconv.Itoa(s) + " seconds"
	}
	m := (s + 59) / 60
	switch {
	case m == 1:
		return "about 1 minute"
	case m < 60:
		return "about " + strconv.Itoa(m) + " minutes"
	}
	return "about 1 hour"
}
