package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// The status-condition and termination metrics follow those Karpenter's
// status controllers publish for NodeClaims, Nodes, NodePools and
// EC2NodeClasses: per kind (operator_<kind>_status_condition_*,
// operator_<kind>_termination_*), and, for NodeClaims, NodePools and
// EC2NodeClasses, also under the deprecated names without the kind
// (operator_status_condition_*, operator_termination_*) labeled by group and
// kind.

// statusObject is an object with status conditions, as the metrics need it.
type statusObject struct {
	namespace, name string
	// extra are the values of the kind's extra labels, in order.
	extra      []string
	conditions []statusCondition
	deleted    time.Time
	finalizers []string
}

type statusCondition struct {
	typ, status, reason, message string
	since                        time.Time
}

// statusEvent is an event Karpenter's status controllers record on an
// object: a condition's transition (the reason is the condition's type) or
// a finalizer's removal (Finalized).
type statusEvent struct {
	reason, note string
}

// ReasonFinalized is the reason of the event recorded when a finalizer is
// removed from an object with status metrics, Karpenter's.
const ReasonFinalized = "Finalized"

type objectKey struct{ namespace, name string }

// statusKind publishes the metrics of one kind.
type statusKind struct {
	kind, group, lower string
	// extraLabels are the object labels copied onto the metrics, by key;
	// the metric label is the key with "/", "." and "-" replaced by "_".
	extraLabels []string
	deprecated  *deprecatedStatus
	// objects lists the kind's objects of a snapshot, for the gauges; of
	// reads one object an informer delivers, and says whether it is of
	// the kind.
	objects func(state.Snapshot) []statusObject
	of      func(client.Object) (statusObject, bool)
	// clusterState says the kind's metrics are among those
	// --disable-cluster-state-observability turns off (Karpenter's status
	// controllers of NodeClaims, Nodes and NodePools; that of
	// EC2NodeClasses stays).
	clusterState bool

	count, current, terminating *prometheus.Desc
	transitions                 *prometheus.CounterVec
	transitionSeconds           *prometheus.HistogramVec
	terminationDuration         *prometheus.HistogramVec

	mu sync.Mutex
	// observed are the conditions of each object as last observed, and
	// deleting the objects observed being deleted.
	observed   map[objectKey]map[string]statusCondition
	deleting   map[objectKey]statusObject
	finalizers map[objectKey][]string
}

// deprecatedStatus are the metrics under the names without the kind.
type deprecatedStatus struct {
	count, current, terminating *prometheus.Desc
	transitions                 *prometheus.CounterVec
	transitionSeconds           *prometheus.HistogramVec
	terminationDuration         *prometheus.HistogramVec
}

func promLabel(key string) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
}

func newDeprecatedStatus() *deprecatedStatus {
	gk := []string{"group", "kind"}
	obj := append([]string{"namespace", "name"}, gk...)
	return &deprecatedStatus{
		count:       prometheus.NewDesc("operator_status_condition_count", "The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0", append(obj, "type", "status", "reason"), nil),
		current:     prometheus.NewDesc("operator_status_condition_current_status_seconds", "The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes", append(obj, "type", "status", "reason"), nil),
		terminating: prometheus.NewDesc("operator_termination_current_time_seconds", "The current amount of time in seconds that an object has been in terminating state.", obj, nil),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "operator_status_condition_transitions_total", Help: "The count of transitions of a given object, type and status."},
			append(gk, "type", "status", "reason")),
		transitionSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "operator_status_condition_transition_seconds", Help: "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes", Buckets: prometheus.DefBuckets},
			append(gk, "type", "status")),
		terminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "operator_termination_duration_seconds", Help: "The amount of time taken by an object to terminate completely.", Buckets: prometheus.DefBuckets},
			append(gk, "namespace", "name")),
	}
}

// statusBuckets are the buckets of the per-kind duration histograms of
// NodeClaims, Nodes and NodePools, Karpenter's: 0.5s to 8192s, doubling.
// EC2NodeClasses and the deprecated histograms use Prometheus's defaults,
// as in Karpenter.
var statusBuckets = prometheus.ExponentialBuckets(0.5, 2, 15)

func newStatusKind(kind, group string, extraLabels []string, dep *deprecatedStatus, buckets []float64, clusterState bool,
	objects func(state.Snapshot) []statusObject, of func(client.Object) (statusObject, bool)) *statusKind {
	lower := strings.ToLower(kind)
	extra := make([]string, len(extraLabels))
	for i, k := range extraLabels {
		extra[i] = promLabel(k)
	}
	obj := append([]string{"namespace", "name"}, extra...)
	cond := append(append([]string{}, obj...), "type", "status", "reason")
	prefix := "operator_" + lower + "_"
	return &statusKind{
		kind: kind, group: group, lower: lower, extraLabels: extraLabels, deprecated: dep, objects: objects, of: of, clusterState: clusterState,
		count:       prometheus.NewDesc(prefix+"status_condition_count", "The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0", cond, nil),
		current:     prometheus.NewDesc(prefix+"status_condition_current_status_seconds", "The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes", cond, nil),
		terminating: prometheus.NewDesc(prefix+"termination_current_time_seconds", "The current amount of time in seconds that an object has been in terminating state.", obj, nil),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "status_condition_transitions_total", Help: "The count of transitions of a given object, type and status."},
			append(append([]string{}, extra...), "type", "status", "reason")),
		transitionSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + "status_condition_transition_seconds", Help: "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes", Buckets: buckets},
			append(append([]string{}, extra...), "type", "status")),
		terminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + "termination_duration_seconds", Help: "The amount of time taken by an object to terminate completely.", Buckets: buckets},
			extra),
		observed:   map[objectKey]map[string]statusCondition{},
		deleting:   map[objectKey]statusObject{},
		finalizers: map[objectKey][]string{},
	}
}

func (s *statusKind) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.transitions, s.transitionSeconds, s.terminationDuration}
}

func (d *deprecatedStatus) collectors() []prometheus.Collector {
	return []prometheus.Collector{d.transitions, d.transitionSeconds, d.terminationDuration}
}

func (s *statusKind) describe(ch chan<- *prometheus.Desc) {
	ch <- s.count
	ch <- s.current
	ch <- s.terminating
}

// collect publishes the gauges of the objects in snap: their conditions and,
// for those being deleted, how long they have been.
func (s *statusKind) collect(ch chan<- prometheus.Metric, snap state.Snapshot, now time.Time) {
	for _, o := range s.objects(snap) {
		obj := append([]string{o.namespace, o.name}, o.extra...)
		for _, c := range o.conditions {
			labels := append(append([]string{}, obj...), c.typ, c.status, c.reason)
			ch <- prometheus.MustNewConstMetric(s.count, prometheus.GaugeValue, 1, labels...)
			ch <- prometheus.MustNewConstMetric(s.current, prometheus.GaugeValue, now.Sub(c.since).Seconds(), labels...)
			if s.deprecated != nil {
				dep := []string{o.namespace, o.name, s.group, s.kind, c.typ, c.status, c.reason}
				ch <- prometheus.MustNewConstMetric(s.deprecated.count, prometheus.GaugeValue, 1, dep...)
				ch <- prometheus.MustNewConstMetric(s.deprecated.current, prometheus.GaugeValue, now.Sub(c.since).Seconds(), dep...)
			}
		}
		if !o.deleted.IsZero() {
			ch <- prometheus.MustNewConstMetric(s.terminating, prometheus.GaugeValue, now.Sub(o.deleted).Seconds(), obj...)
			if s.deprecated != nil {
				ch <- prometheus.MustNewConstMetric(s.deprecated.terminating, prometheus.GaugeValue, now.Sub(o.deleted).Seconds(), o.namespace, o.name, s.group, s.kind)
			}
		}
	}
}

// observe compares o with the object as last observed, when it changes:
// each condition whose status is new counts a transition, and one that had
// another status before observes how long it had it (the time between the
// two transition times), as Karpenter's status controllers do when they
// reconcile the object. It returns the events those controllers record:
// one per condition that changed from a status observed before, and one
// per finalizer removed since.
func (s *statusKind) observe(o statusObject) []statusEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := objectKey{o.namespace, o.name}
	var evs []statusEvent
	if before, ok := s.finalizers[k]; ok {
		for _, f := range before {
			if !slices.Contains(o.finalizers, f) {
				evs = append(evs, statusEvent{reason: ReasonFinalized, note: "Finalized " + f})
			}
		}
	}
	s.finalizers[k] = slices.Clone(o.finalizers)
	seen := s.observed[k]
	current := make(map[string]statusCondition, len(o.conditions))
	for _, c := range o.conditions {
		current[c.typ] = c
		before, ok := seen[c.typ]
		if ok && before.status == c.status {
			continue
		}
		s.transitions.WithLabelValues(append(append([]string{}, o.extra...), c.typ, c.status, c.reason)...).Inc()
		if s.deprecated != nil {
			s.deprecated.transitions.WithLabelValues(s.group, s.kind, c.typ, c.status, c.reason).Inc()
		}
		if !ok {
			continue
		}
		took := c.since.Sub(before.since).Seconds()
		s.transitionSeconds.WithLabelValues(append(append([]string{}, o.extra...), before.typ, before.status)...).Observe(took)
		if s.deprecated != nil {
			s.deprecated.transitionSeconds.WithLabelValues(s.group, s.kind, before.typ, before.status).Observe(took)
		}
		note := fmt.Sprintf("Status condition transitioned, Type: %s, Status: %s -> %s, Reason: %s", c.typ, before.status, c.status, c.reason)
		if c.message != "" {
			note += ", Message: " + c.message
		}
		evs = append(evs, statusEvent{reason: c.typ, note: note})
	}
	s.observed[k] = current
	if !o.deleted.IsZero() {
		s.deleting[k] = o
	}
	return evs
}

// gone observes the end of o's termination at now: the time from its
// deletion request, when it was observed being deleted (or its last state
// says it was).
func (s *statusKind) gone(o statusObject, now time.Time) []statusEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := objectKey{o.namespace, o.name}
	var evs []statusEvent
	for _, f := range s.finalizers[k] {
		evs = append(evs, statusEvent{reason: ReasonFinalized, note: "Finalized " + f})
	}
	delete(s.finalizers, k)
	delete(s.observed, k)
	if d, ok := s.deleting[k]; ok {
		o = d
		delete(s.deleting, k)
	}
	if o.deleted.IsZero() {
		return evs
	}
	took := now.Sub(o.deleted).Seconds()
	s.terminationDuration.WithLabelValues(o.extra...).Observe(took)
	if s.deprecated != nil {
		s.deprecated.terminationDuration.WithLabelValues(s.group, s.kind, o.namespace, o.name).Observe(took)
	}
	return evs
}

func metaConditions(conds []metav1.Condition) []statusCondition {
	out := make([]statusCondition, 0, len(conds))
	for _, c := range conds {
		out = append(out, statusCondition{typ: c.Type, status: string(c.Status), reason: c.Reason, message: c.Message, since: c.LastTransitionTime.Time})
	}
	return out
}

func deletedAt(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func labelValues(labels map[string]string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = labels[k]
	}
	return out
}

// statusKinds returns the kinds whose status conditions are published.
func statusKinds() ([]*statusKind, *deprecatedStatus) {
	dep := newDeprecatedStatus()
	claimLabels := []string{wellknown.LabelEC2NodeClass, wellknown.LabelNodePool}
	nodeLabels := []string{wellknown.LabelEC2NodeClass, wellknown.LabelNodePool, wellknown.LabelInitialized}
	claim := func(nc *karpv1.NodeClaim) statusObject {
		return statusObject{name: nc.Name, extra: labelValues(nc.Labels, claimLabels),
			conditions: metaConditions(nc.Status.Conditions), deleted: deletedAt(nc.DeletionTimestamp), finalizers: nc.Finalizers}
	}
	node := func(n *corev1.Node) statusObject {
		return statusObject{name: n.Name, extra: labelValues(n.Labels, nodeLabels),
			conditions: nodeConditions(n.Status.Conditions), deleted: deletedAt(n.DeletionTimestamp), finalizers: n.Finalizers}
	}
	pool := func(np *karpv1.NodePool) statusObject {
		return statusObject{name: np.Name, conditions: metaConditions(np.Status.Conditions), deleted: deletedAt(np.DeletionTimestamp), finalizers: np.Finalizers}
	}
	class := func(nc *awsv1.EC2NodeClass) statusObject {
		return statusObject{name: nc.Name, conditions: metaConditions(nc.Status.Conditions), deleted: deletedAt(nc.DeletionTimestamp), finalizers: nc.Finalizers}
	}
	return []*statusKind{
		newStatusKind("NodeClaim", "karpenter.sh", claimLabels, dep, statusBuckets, true, func(snap state.Snapshot) []statusObject {
			var out []statusObject
			for _, n := range snap.Nodes {
				if nc := n.NodeClaim; nc != nil {
					out = append(out, claim(nc))
				}
			}
			return out
		}, ofKind(claim)),
		newStatusKind("Node", "", nodeLabels, nil, statusBuckets, true, func(snap state.Snapshot) []statusObject {
			var out []statusObject
			for _, n := range snap.Nodes {
				if n.Node != nil {
					out = append(out, node(n.Node))
				}
			}
			return out
		}, ofKind(node)),
		newStatusKind("NodePool", "karpenter.sh", nil, dep, statusBuckets, true, func(snap state.Snapshot) []statusObject {
			out := make([]statusObject, 0, len(snap.NodePools))
			for _, np := range snap.NodePools {
				out = append(out, pool(np))
			}
			return out
		}, ofKind(pool)),
		newStatusKind("EC2NodeClass", "karpenter.k8s.aws", nil, dep, prometheus.DefBuckets, false, func(snap state.Snapshot) []statusObject {
			out := make([]statusObject, 0, len(snap.NodeClasses))
			for _, nc := range snap.NodeClasses {
				out = append(out, class(nc))
			}
			return out
		}, ofKind(class)),
	}, dep
}

// ofKind adapts a reader of objects of type T to any object.
func ofKind[T client.Object](read func(T) statusObject) func(client.Object) (statusObject, bool) {
	return func(o client.Object) (statusObject, bool) {
		t, ok := o.(T)
		if !ok {
			return statusObject{}, false
		}
		return read(t), true
	}
}

func nodeConditions(conds []corev1.NodeCondition) []statusCondition {
	out := make([]statusCondition, 0, len(conds))
	for _, c := range conds {
		out = append(out, statusCondition{typ: string(c.Type), status: string(c.Status), reason: c.Reason, message: c.Message, since: c.LastTransitionTime.Time})
	}
	return out
}
