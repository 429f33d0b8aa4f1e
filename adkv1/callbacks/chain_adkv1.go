package callbacks

import "google.golang.org/genai"

// answerPart reports whether part belongs to a sub-agent's answer, as ADK's
// agent tool reads it: text, and not a thought (ADK v1).
func answerPart(part *genai.Part) bool { return part != nil && part.Text != "" && !part.Thought }

// displayOnSkip is what ADK's agent tool's DisplayResultOnSkipSummarization
// returns (ADK v1: the sub-agent's result is shown when summarization is
// skipped).
const displayOnSkip = true
