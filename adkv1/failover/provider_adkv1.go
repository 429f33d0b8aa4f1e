package failover

// providerVerdict classifies errors of model providers other than Gemini
// that the ADK line ships. ADK v1 ships only Gemini (genai.APIError,
// handled by Classify itself).
func providerVerdict(error) (Verdict, bool) { return Verdict{}, false }
