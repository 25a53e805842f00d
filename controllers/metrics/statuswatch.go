package metrics

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// ObserveStatus observes the status conditions of obj (a NodeClaim, Node,
// NodePool or EC2NodeClass) as they are now: the transitions since it was
// last observed feed operator_<kind>_status_condition_transitions_total and
// _transition_seconds (and their deprecated forms) at once, so that no
// transition between two scrapes is missed. Objects of other kinds are
// ignored.
func (m *Metrics) ObserveStatus(obj client.Object) {
	m.observeStatus(obj)
}

// observeStatus is ObserveStatus, returning the events to record on obj.
func (m *Metrics) observeStatus(obj client.Object) []statusEvent {
	if m == nil {
		return nil
	}
	for _, s := range m.statusKindsObserved() {
		if o, ok := s.of(obj); ok {
			return s.observe(o)
		}
	}
	return nil
}

// ObserveStatusGone observes that obj is gone: its termination, when it was
// being deleted, feeds operator_<kind>_termination_duration_seconds (and
// its deprecated form), and its conditions are forgotten.
func (m *Metrics) ObserveStatusGone(obj client.Object) {
	m.observeStatusGone(obj)
}

func (m *Metrics) observeStatusGone(obj client.Object) []statusEvent {
	if m == nil {
		return nil
	}
	now := m.now()
	for _, s := range m.statusKindsObserved() {
		if o, ok := s.of(obj); ok {
			return s.gone(o, now)
		}
	}
	return nil
}

// statusKindsObserved are the kinds whose status metrics are on.
func (m *Metrics) statusKindsObserved() []*statusKind {
	c := m.state
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.clusterStateOff {
		return c.status
	}
	var out []*statusKind
	for _, s := range c.status {
		if !s.clusterState {
			out = append(out, s)
		}
	}
	return out
}

// now is the time of the clock WatchState set.
func (m *Metrics) now() time.Time {
	c := m.state
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts == nil {
		return clock.RealClock{}.Now()
	}
	return c.opts.Clock.Now()
}

// WatchStatus makes the status metrics follow every change of the
// NodeClaims, Nodes, NodePools and EC2NodeClasses mgr's cache sees, on the
// elected leader only, as Karpenter's status controllers run: when elected
// it observes every object the cache holds, then each change as the
// informers deliver it. It records on the object, with rec when not nil,
// the events those controllers record: the transition of a condition
// (reason: the condition's type) and the removal of a finalizer (reason
// Finalized).
func (m *Metrics) WatchStatus(mgr manager.Manager, rec events.EventRecorder) error {
	if m == nil {
		return nil
	}
	w := &statusWatch{m: m, reader: mgr.GetCache(), rec: rec}
	for _, obj := range statusObjects() {
		inf, err := mgr.GetCache().GetInformer(context.Background(), obj)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(w); err != nil {
			return fmt.Errorf("event handler for %T: %w", obj, err)
		}
	}
	return mgr.Add(w)
}

// statusObjects are empty objects of the kinds with status metrics.
func statusObjects() []client.Object {
	return []client.Object{&karpv1.NodeClaim{}, &corev1.Node{}, &karpv1.NodePool{}, &awsv1.EC2NodeClass{}}
}

// statusWatch passes the informers' events to the metrics once its
// runnable has started on the leader.
type statusWatch struct {
	m      *Metrics
	reader client.Reader
	rec    events.EventRecorder
	active atomic.Bool
}

// record records evs on obj.
func (w *statusWatch) record(obj client.Object, evs []statusEvent) {
	if w.rec == nil {
		return
	}
	for _, e := range evs {
		action := "StatusTransition"
		if e.reason == ReasonFinalized {
			action = "Finalize"
		}
		w.rec.Eventf(obj, nil, corev1.EventTypeNormal, e.reason, action, "%s", e.note)
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (w *statusWatch) NeedLeaderElection() bool { return true }

// Start observes every object of the cache, then lets the event handlers
// observe the changes until ctx ends. Observing an object twice counts
// nothing twice, so events racing with the listing do no harm.
func (w *statusWatch) Start(ctx context.Context) error {
	w.active.Store(true)
	defer w.active.Store(false)
	lists := []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}}
	for _, l := range lists {
		if err := w.reader.List(ctx, l); err != nil {
			return fmt.Errorf("listing %T: %w", l, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return err
		}
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				w.record(o, w.m.observeStatus(o))
			}
		}
	}
	<-ctx.Done()
	return nil
}

func (w *statusWatch) OnAdd(obj any, _ bool) {
	if o, ok := obj.(client.Object); ok && w.active.Load() {
		w.record(o, w.m.observeStatus(o))
	}
}

func (w *statusWatch) OnUpdate(_, obj any) {
	if o, ok := obj.(client.Object); ok && w.active.Load() {
		w.record(o, w.m.observeStatus(o))
	}
}

func (w *statusWatch) OnDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if o, ok := obj.(client.Object); ok && w.active.Load() {
		w.record(o, w.m.observeStatusGone(o))
	}
}
