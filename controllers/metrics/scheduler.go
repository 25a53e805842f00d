package metrics

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// scheduling is what the scheduler metrics remember between a scheduling
// run's start and the scrape, and the provisioning times of pods.
type scheduling struct {
	mu sync.Mutex
	// next numbers the scheduling runs (scheduling_id).
	next uint64
	// running are the scheduling runs in progress.
	running map[runKey]run
	// pods are the provisioning times of pending pods, by pod.
	pods map[types.NamespacedName]podTimes
}

type runKey struct{ controller, id string }

type run struct {
	started time.Time
	pods    int
}

// podTimes are when stevedore first saw a pod pending, first decided on it
// and first found a place for it.
type podTimes struct {
	seen, decided, schedulable time.Time
}

// Controller names of the scheduler metrics.
const (
	ControllerProvisioner = "provisioner"
	ControllerDisruption  = "disruption"
)

// StartScheduling records the start of a scheduling simulation of pods for
// controller and returns the function that records its end. The duration
// is wall time: it measures the work, not the (possibly simulated) clock.
func (m *Metrics) StartScheduling(controller string, pods int) (done func()) {
	if m == nil {
		return func() {}
	}
	s := &m.scheduling
	start := time.Now()
	s.mu.Lock()
	s.next++
	k := runKey{controller, strconv.FormatUint(s.next, 10)}
	s.running[k] = run{started: start, pods: pods}
	s.mu.Unlock()
	return func() {
		m.lifecycle.schedulingDuration.WithLabelValues(controller).Observe(time.Since(start).Seconds())
		s.mu.Lock()
		delete(s.running, k)
		s.mu.Unlock()
	}
}

// SchedulingResult publishes how many pods the last simulation of
// controller could not schedule and how many it ignored.
func (m *Metrics) SchedulingResult(controller string, unschedulable, ignored int) {
	if m == nil {
		return
	}
	m.lifecycle.unschedulablePods.WithLabelValues(controller).Set(float64(unschedulable))
	if controller == ControllerProvisioner {
		m.lifecycle.ignoredPods.WithLabelValues().Set(float64(ignored))
	}
}

// PodsSeen records that the provisioner saw the pods pending at now; only
// the first sighting counts.
func (m *Metrics) PodsSeen(pods []types.NamespacedName, now time.Time) {
	if m == nil {
		return
	}
	s := &m.scheduling
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range pods {
		t := s.pods[k]
		if t.seen.IsZero() {
			t.seen = now
			s.pods[k] = t
		}
	}
}

// PodsDecided records the provisioner's decision on pods at now: placed
// (on a node or a new NodeClaim) or not. The first decision on a pod
// observes karpenter_pods_scheduling_decision_duration_seconds.
func (m *Metrics) PodsDecided(placed, unplaced []types.NamespacedName, now time.Time) {
	if m == nil {
		return
	}
	s := &m.scheduling
	s.mu.Lock()
	defer s.mu.Unlock()
	decide := func(k types.NamespacedName, schedulable bool) {
		t := s.pods[k]
		if t.seen.IsZero() {
			t.seen = now
		}
		if t.decided.IsZero() {
			t.decided = now
			m.lifecycle.podSchedulingDecision.WithLabelValues().Observe(now.Sub(t.seen).Seconds())
		}
		if schedulable && t.schedulable.IsZero() {
			t.schedulable = now
		}
		s.pods[k] = t
	}
	for _, k := range placed {
		decide(k, true)
	}
	for _, k := range unplaced {
		decide(k, false)
	}
}
