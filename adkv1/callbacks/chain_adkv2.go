//go:build ignore

package callbacks

import "google.golang.org/genai"

// answerPart reports whether part belongs to a sub-agent's answer, as ADK's
// agent tool reads it: text, thoughts included (ADK v2).
func answerPart(part *genai.Part) bool { return part != nil && part.Text != "" }

// displayOnSkip is what a DisplayResultOnSkipSummarization of ADK's agent
// tool would return: ADK v2's agent tool has no such method.
const displayOnSkip = false
