package packer

// Step is one placement in the order the packer made it: pod index into the
// pods Solve considered, and the node (existing nodes first, sorted by name,
// then new claims in order) it went to.
type Step = step

// SolveTrace is solve with its placement order, for the tests.
func SolveTrace(in Input) (Result, []Step, func(Step) (pod int32, bin int)) {
	r, t := solve(in)
	return r, t, func(s Step) (int32, int) { return s.pod, s.bin }
}
