package packer

import corev1 "k8s.io/api/core/v1"

// Step is one placement: pod index into the pods Solve considered, and the
// node (existing nodes first, sorted by name, then new claims in order) it
// went to. SolveTrace lists them in the order kube-scheduler binds the pods
// (see Input.Pods), in which the plan holds.
type Step = step

// SolveTrace is solve with its placement order, for the tests.
func SolveTrace(in Input) (Result, []Step, func(Step) (pod int32, bin int)) {
	r, t := solve(in)
	return r, t, func(s Step) (int32, int) { return s.pod, s.bin }
}

// FeasibleWithoutShortcut is Feasible building the whole view of the
// cluster for every pod, as it did before pods whose verdict needs no
// topology were judged node by node.
func FeasibleWithoutShortcut(pod *corev1.Pod, nodes []Node, i int, namespaceLabels map[string]map[string]string) error {
	fullFeasibility = true
	defer func() { fullFeasibility = false }()
	return Feasible(pod, nodes, i, namespaceLabels)
}

// SolveChecks is Solve with the number of times it checked whether a node
// or claim takes a pod.
func SolveChecks(in Input) (Result, int) {
	r, _, checks := solveCounted(in)
	return r, checks
}

// SetCacheBounds sets how many terms a Cache numbers, and how many label
// values beyond twice its nodes, before it numbers them anew; the returned
// function restores the bounds.
func SetCacheBounds(terms, slack int) func() {
	t, v := maxTermIDs, slackValues
	maxTermIDs, slackValues = terms, slack
	return func() { maxTermIDs, slackValues = t, v }
}

// CacheValues is how many label values c numbers, over every key.
func CacheValues(c *Cache) int {
	n := 0
	for _, names := range c.names {
		n += len(names)
	}
	return n
}

// SignaturesKept is how many pod signatures c remembers.
func SignaturesKept(c *Cache) int { return len(c.sigs.cur) + len(c.sigs.prev) }
