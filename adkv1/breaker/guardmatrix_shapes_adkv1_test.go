package breaker_test

// extraShapes are the guard matrix's shapes only this ADK line has: none on
// ADK v1 (ADK v2's are in guardmatrix_shapes_adkv2_test.go).
func extraShapes() []matrixShape { return nil }

// extraEndlessLoops are the loops only this ADK line has that never leave
// on their own (TestEndedTurnReadsAreBounded): none on ADK v1.
func extraEndlessLoops() []endlessLoop { return nil }
