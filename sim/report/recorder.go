package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

var (
	nodeGVK      = corev1.SchemeGroupVersion.WithKind("Node")
	podGVK       = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeClaimGVK = karpv1.GroupVersion.WithKind("NodeClaim")
	nodePoolGVK  = karpv1.GroupVersion.WithKind("NodePool")
	pdbGVK       = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
)

// interruptionReasons are the reasons of the events the interruption
// handler records; those marked true take the node away.
var interruptionReasons = map[string]bool{
	"SpotInterrupted":                        true,
	"SpotRebalanceRecommendation":            false,
	"InstanceUnhealthy":                      true,
	"InstanceStopping":                       true,
	"InstanceTerminating":                    true,
	"CapacityReservationInstanceInterrupted": true,
}

// Recorder builds a Document while a run goes. Create it with NewRecorder;
// it is not safe for concurrent use.
type Recorder struct {
	doc    Document
	events [][]Event // the events so far, in chunks (see add)
	aws    *fake.AWS
	end    time.Time

	claims  map[string]*claim // by NodeClaim name
	byNode  map[string]string // node name → NodeClaim name
	podNode map[string]string // pod key → node name
	ledger  map[string]*instance
	order   []string          // instance IDs in launch order
	notes   map[string]string // pod key → the provisioner's latest reason
	counts  map[string]int    // disruptions by reason
	warned  map[string]bool

	// launches are the instances launched, in launch order, as they were
	// then.
	launches []Instance
	// decided are the NodeClaims whose budgeted disruption started since
	// the last Flush.
	decided []string
}

// claim is what the log knows about a NodeClaim.
type claim struct {
	nodePool, instanceType, capacityType, zone, imageID, node string
	launched, registered, initialized                         bool
	launchFailure                                             string
	// disruption is the reason it is being taken away, once known.
	disruption string
	// deletedFor is why a controller deleted it, when that was not a
	// disruption (a launch or registration timeout, a vanished instance),
	// with the controller's note.
	deletedFor, deletedNote string
}

// deletionReasons are the reasons of events that controllers record on a
// NodeClaim they delete for something other than a disruption.
var deletionReasons = map[string]bool{
	"RegistrationTimeout": true, "LaunchTimeout": true, "InstanceNotFound": true,
	"InsufficientCapacityError": true, "NodeClassNotReady": true,
	// The termination controller deletes the NodeClaim of a Node deleted
	// by someone else (a failed node removed, kubectl delete node).
	"DeletedNodeClaim": true,
}

// instance is a ledger line: an instance and what it costs.
type instance struct {
	id, nodePool, nodeClaim, instanceType, capacityType, zone string
	price                                                     float64
	start, end                                                time.Time
	// logged is set once its termination is in the log.
	logged bool
}

// NewRecorder returns a Recorder for a run of scenario with seed from start to
// end; prices come from aws.
func NewRecorder(scenario string, seed uint64, start, end time.Time, aws *fake.AWS) *Recorder {
	return &Recorder{
		doc: Document{SchemaVersion: SchemaVersion, Scenario: scenario, Seed: seed, Start: start, End: end, Events: []Event{}, Samples: []Sample{},
			Evictions: []Eviction{}, Decisions: []Decision{}},
		aws:     aws,
		end:     end,
		claims:  map[string]*claim{},
		byNode:  map[string]string{},
		podNode: map[string]string{},
		ledger:  map[string]*instance{},
		notes:   map[string]string{},
		counts:  map[string]int{},
		warned:  map[string]bool{},
	}
}

// add records an event. A day of a large cluster records hundreds of
// thousands; they are kept in chunks of fixed size, joined once by Finish,
// rather than in one slice that append moves to a larger array (and the
// garbage collector scans again) every time it fills.
func (r *Recorder) add(e Event) {
	if n := len(r.events); n == 0 || len(r.events[n-1]) == cap(r.events[n-1]) {
		r.events = append(r.events, make([]Event, 0, eventChunk))
	}
	last := &r.events[len(r.events)-1]
	*last = append(*last, e)
}

const eventChunk = 4096

// withClaim fills in what the log knows about a NodeClaim.
func (r *Recorder) withClaim(e Event, name string) Event {
	e.NodeClaim = name
	if c := r.claims[name]; c != nil {
		e.NodePool, e.InstanceType, e.CapacityType, e.Zone, e.ImageID = c.nodePool, c.instanceType, c.capacityType, c.zone, c.imageID
		if e.Node == "" {
			e.Node = c.node
		}
	}
	return e
}

// Warn records a warning about the run, once per distinct text.
func (r *Recorder) Warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.warned[msg] {
		return
	}
	r.warned[msg] = true
	r.doc.Warnings = append(r.doc.Warnings, msg)
}

// ScenarioEvent logs an event of the scenario.
func (r *Recorder) ScenarioEvent(now time.Time, reason, object, message string) {
	r.add(Event{Time: now, Kind: KindScenarioEvent, Reason: reason, Object: object, Message: message})
}

// Change looks at one change to the API.
func (r *Recorder) Change(now time.Time, c apiserver.Change) {
	switch c.GVK {
	case nodeClaimGVK:
		r.nodeClaim(now, c)
	case nodeGVK:
		if c.Type == apiserver.Deleted {
			e := Event{Time: now, Kind: KindNodeDeleted, Object: "Node/" + c.Object.GetName(), Node: c.Object.GetName()}
			if nc := r.byNode[c.Object.GetName()]; nc != "" {
				e = r.withClaim(e, nc)
			}
			r.add(e)
		}
	case podGVK:
		r.pod(now, c)
	}
}

// claimOf returns what the log knows of a NodeClaim, brought up to date
// with nc's labels and status.
func (r *Recorder) claimOf(nc *karpv1.NodeClaim) *claim {
	cl := r.claims[nc.Name]
	if cl == nil {
		cl = &claim{}
		r.claims[nc.Name] = cl
	}
	cl.nodePool = nc.Labels[wellknown.LabelNodePool]
	if v := nc.Labels[wellknown.LabelInstanceType]; v != "" {
		cl.instanceType, cl.capacityType, cl.zone = v, nc.Labels[wellknown.LabelCapacityType], nc.Labels[wellknown.LabelTopologyZone]
	}
	if nc.Status.ImageID != "" {
		cl.imageID = nc.Status.ImageID
	}
	if nc.Status.NodeName != "" {
		cl.node = nc.Status.NodeName
		r.byNode[nc.Status.NodeName] = nc.Name
	}
	return cl
}

func (r *Recorder) nodeClaim(now time.Time, c apiserver.Change) {
	nc := c.Object.(*karpv1.NodeClaim)
	obj := "NodeClaim/" + nc.Name
	cl := r.claimOf(nc)
	switch c.Type {
	case apiserver.Added:
		r.add(r.withClaim(Event{Time: now, Kind: KindNodeClaimCreated, Object: obj, Message: describeRequests(nc)}, nc.Name))
	case apiserver.Deleted:
		if cl.disruption != "" {
			r.counts[cl.disruption]++
			r.add(r.withClaim(Event{Time: now, Kind: KindDisruptionFinished, Object: obj, Reason: cl.disruption}, nc.Name))
		}
		e := Event{Time: now, Kind: KindNodeClaimDeleted, Object: obj, Reason: cl.disruption}
		if e.Reason == "" {
			e.Reason, e.Message = cl.deletedFor, cl.deletedNote
		}
		r.add(r.withClaim(e, nc.Name))
		return
	}
	launched := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
	if !cl.launched && launched != nil && launched.Status == metav1.ConditionTrue && cl.instanceType != "" {
		cl.launched = true
		r.launched(nc)
		r.add(r.withClaim(Event{Time: now, Kind: KindNodeClaimLaunched, Object: obj, InstanceID: instanceID(nc.Status.ProviderID)}, nc.Name))
	}
	if launched != nil && launched.Status != metav1.ConditionTrue && launched.Reason != "Launching" {
		if key := launched.Reason + ": " + launched.Message; key != cl.launchFailure {
			cl.launchFailure = key
			r.add(r.withClaim(Event{Time: now, Kind: KindNodeClaimLaunchFailed, Object: obj, Reason: launched.Reason, Message: launched.Message}, nc.Name))
		}
	}
	if !cl.registered && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered) {
		cl.registered = true
		r.add(r.withClaim(Event{Time: now, Kind: KindNodeRegistered, Object: "Node/" + cl.node}, nc.Name))
	}
	if !cl.initialized && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
		cl.initialized = true
		r.add(r.withClaim(Event{Time: now, Kind: KindNodeInitialized, Object: "Node/" + cl.node}, nc.Name))
	}
	if d := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); d != nil && d.Status == metav1.ConditionTrue && d.Reason != cl.disruption {
		cl.disruption = d.Reason
		r.add(r.withClaim(Event{Time: now, Kind: KindDisruptionStarted, Object: obj, Reason: d.Reason, Message: d.Message}, nc.Name))
		if slices.Contains(budget.Reasons, karpv1.DisruptionReason(d.Reason)) {
			r.decided = append(r.decided, nc.Name)
		}
	} else if d == nil && cl.disruption != "" && nc.DeletionTimestamp == nil {
		// The disruption was abandoned before the NodeClaim went.
		r.add(r.withClaim(Event{Time: now, Kind: KindDisruptionFinished, Object: obj, Reason: cl.disruption, Message: "abandoned"}, nc.Name))
		cl.disruption = ""
	}
}

// describeRequests summarises what a new NodeClaim may be.
func describeRequests(nc *karpv1.NodeClaim) string {
	var parts []string
	for _, req := range nc.Spec.Requirements {
		switch req.Key {
		case wellknown.LabelInstanceType:
			parts = append(parts, fmt.Sprintf("%d instance types", len(req.Values)))
		case wellknown.LabelCapacityType, wellknown.LabelTopologyZone:
			if req.Operator == corev1.NodeSelectorOpIn {
				parts = append(parts, strings.Join(req.Values, "/"))
			}
		}
	}
	if cpu, ok := nc.Spec.Resources.Requests[corev1.ResourceCPU]; ok {
		parts = append(parts, "cpu "+cpu.String())
	}
	if mem, ok := nc.Spec.Resources.Requests[corev1.ResourceMemory]; ok {
		parts = append(parts, "memory "+mem.String())
	}
	return strings.Join(parts, ", ")
}

// launched puts a launched NodeClaim's instance on the ledger, at the price
// of its offering now.
func (r *Recorder) launched(nc *karpv1.NodeClaim) {
	id := instanceID(nc.Status.ProviderID)
	if id == "" || r.ledger[id] != nil || r.aws == nil {
		return
	}
	info, ok := r.aws.Instance(id)
	if !ok {
		return
	}
	in := &instance{id: id, nodePool: nc.Labels[wellknown.LabelNodePool], nodeClaim: nc.Name,
		instanceType: info.InstanceType, capacityType: capacityTypeOf(info), zone: info.Zone, start: info.LaunchTime}
	if info.CapacityType == fake.CapacityTypeSpot {
		in.price, _ = r.aws.SpotPrice(info.InstanceType, info.Zone)
	} else {
		in.price, _ = r.aws.OnDemandPrice(info.InstanceType)
	}
	r.ledger[id] = in
	r.order = append(r.order, id)
}

// ExistingInstance records a NodeClaim that existed before the run
// (restored from a snapshot) as it is, without logging its launch,
// registration and initialization again, and puts its instance on the
// ledger, billed from the start of the run.
func (r *Recorder) ExistingInstance(nc *karpv1.NodeClaim) {
	cl := r.claimOf(nc)
	cl.registered = meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
	cl.initialized = meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) || cl.instanceType == "" {
		return
	}
	cl.launched = true
	r.launched(nc)
	if in := r.ledger[instanceID(nc.Status.ProviderID)]; in != nil && in.start.Before(r.doc.Start) {
		in.start = r.doc.Start
	}
}

// ExistingPod remembers the node of a pod bound before the run, for the
// evictions that name it.
func (r *Recorder) ExistingPod(p *corev1.Pod) {
	if p.Spec.NodeName != "" {
		r.podNode[p.Namespace+"/"+p.Name] = p.Spec.NodeName
	}
}

// capacityTypeOf is an instance's capacity type as the report counts it: an
// instance in a capacity reservation is reserved (EC2 reports it as
// on-demand, and bills the reservation at the on-demand price whether it is
// used or not, which is the price the ledger keeps).
func capacityTypeOf(info fake.InstanceInfo) string {
	if info.CapacityReservationID != "" {
		return wellknown.CapacityTypeReserved
	}
	return info.CapacityType
}

// InstanceEnds records that an instance will stop at at (its billing ends
// then), as a spot interruption schedules it, without logging anything yet.
func (r *Recorder) InstanceEnds(id string, at time.Time) {
	if in := r.ledger[id]; in != nil && (in.end.IsZero() || at.Before(in.end)) {
		in.end = at
	}
}

// InstanceTerminated records that an instance stops at now (its billing ends
// then, unless it was to end earlier) and logs it, once.
func (r *Recorder) InstanceTerminated(id string, now time.Time, reason string) {
	in := r.ledger[id]
	if in == nil || in.logged {
		return
	}
	r.InstanceEnds(id, now)
	in.logged = true
	r.add(r.withClaim(Event{Time: now, Kind: KindInstanceTerminated, Object: "Instance/" + id, Reason: reason, InstanceID: id}, in.nodeClaim))
}

func (r *Recorder) pod(now time.Time, c apiserver.Change) {
	p := c.Object.(*corev1.Pod)
	key := p.Namespace + "/" + p.Name
	obj := "Pod/" + key
	if c.Type == apiserver.Deleted {
		delete(r.podNode, key)
		delete(r.notes, key)
		r.add(r.podEvent(Event{Time: now, Kind: KindPodDeleted, Object: obj}, p.Spec.NodeName))
		return
	}
	if p.Spec.NodeName != "" {
		r.podNode[key] = p.Spec.NodeName
	}
	var old *corev1.Pod
	if c.Old != nil {
		old = c.Old.(*corev1.Pod)
	}
	if p.Spec.NodeName != "" && (old == nil || old.Spec.NodeName == "") {
		r.add(r.podEvent(Event{Time: now, Kind: KindPodBound, Object: obj}, p.Spec.NodeName))
	}
	if cond := unschedulable(p); cond != nil && (old == nil || unschedulable(old) == nil) {
		r.add(Event{Time: now, Kind: KindPodUnschedulable, Object: obj, Reason: cond.Reason, Message: cond.Message})
	}
}

func (r *Recorder) podEvent(e Event, node string) Event {
	if node == "" {
		return e
	}
	e.Node = node
	if nc := r.byNode[node]; nc != "" {
		e = r.withClaim(e, nc)
	}
	return e
}

func unschedulable(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c
		}
	}
	return nil
}

// Event looks at one event a controller (or the eviction subresource)
// recorded.
func (r *Recorder) Event(now time.Time, e apiserver.Event) {
	reg := e.Regarding
	switch {
	case e.Source == apiserver.SourceEviction && e.Reason == apiserver.ReasonEvicted:
		key := reg.Namespace + "/" + reg.Name
		r.add(r.podEvent(Event{Time: now, Kind: KindPodEvicted, Object: "Pod/" + key}, r.podNode[key]))
	case e.Reason == "DisruptionBlocked":
		ev := Event{Time: now, Kind: KindDisruptionBlocked, Object: reg.String(), Message: e.Note}
		switch reg.Kind {
		case "NodeClaim":
			ev = r.withClaim(ev, reg.Name)
		case "Node":
			ev = r.podEvent(ev, reg.Name)
		case "NodePool":
			ev.NodePool = reg.Name
		}
		r.add(ev)
	case reg.Kind == "NodeClaim" && e.Reason == "Unconsolidatable":
		r.add(r.withClaim(Event{Time: now, Kind: KindUnconsolidatable, Object: reg.String(), Message: e.Note}, reg.Name))
	case reg.Kind == "NodeClaim" && isInterruption(e):
		r.add(r.withClaim(Event{Time: now, Kind: KindInterruptionReceived, Object: reg.String(), Reason: e.Reason, Message: e.Note}, reg.Name))
		if cl := r.claims[reg.Name]; cl != nil && cl.disruption == "" && interruptionReasons[e.Reason] {
			cl.disruption = ReasonInterrupted
		}
	case reg.Kind == "NodeClaim" && deletionReasons[e.Reason]:
		if cl := r.claims[reg.Name]; cl != nil {
			cl.deletedFor, cl.deletedNote = e.Reason, e.Note
		}
	case reg.Kind == "Pod" && e.Reason == "FailedScheduling":
		r.notes[reg.Namespace+"/"+reg.Name] = e.Note
	}
}

func isInterruption(e apiserver.Event) bool {
	_, ok := interruptionReasons[e.Reason]
	return ok && e.Action == "Interrupted"
}

func instanceID(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	if i < 0 || !strings.HasPrefix(providerID[i+1:], "i-") {
		return ""
	}
	return providerID[i+1:]
}

// Sample takes a sample of the cluster at now.
func (r *Recorder) Sample(now time.Time, api *apiserver.Server) {
	s := Sample{Time: now}
	disrupting := map[string]bool{}
	for _, o := range api.Objects(nodeGVK) {
		n := o.(*corev1.Node)
		s.Nodes++
		if nodeReady(n) {
			s.ReadyNodes++
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == wellknown.TaintKeyDisrupted }) {
			disrupting[n.Name] = true
		}
	}
	for _, o := range api.Objects(nodeClaimGVK) {
		nc := o.(*karpv1.NodeClaim)
		if nc.DeletionTimestamp != nil {
			name := nc.Status.NodeName
			if name == "" {
				name = "nodeclaim/" + nc.Name
			}
			disrupting[name] = true
		}
	}
	s.Disrupting = len(disrupting)
	for _, o := range api.Objects(podGVK) {
		p := o.(*corev1.Pod)
		switch p.Status.Phase {
		case corev1.PodRunning:
			s.RunningPods++
		case corev1.PodPending:
			if p.DeletionTimestamp == nil {
				s.PendingPods++
			}
		}
	}
	for _, id := range r.order {
		in := r.ledger[id]
		if !in.start.After(now) && (in.end.IsZero() || in.end.After(now)) {
			s.CostPerHour += in.price
		}
	}
	s.CostPerHour = money(s.CostPerHour)
	s.PodDisruptionBudgets = pdbStatuses(api)
	s.DisruptionBudgets = budgetUses(now, api, false)
	r.doc.Samples = append(r.doc.Samples, s)
}

// Finish takes the final state at now and returns the document. The event
// log comes in time order (events logged ahead of time, such as an
// instance's termination two minutes after its interruption notice, take
// their place).
func (r *Recorder) Finish(now time.Time, api *apiserver.Server) *Document {
	f := Final{Nodes: []Node{}, Unschedulable: []Unschedulable{}, NotRunning: []PodState{}, Disruptions: map[string]int{}}
	claimsByProvider := map[string]*karpv1.NodeClaim{}
	for _, o := range api.Objects(nodeClaimGVK) {
		nc := o.(*karpv1.NodeClaim)
		if nc.Status.ProviderID != "" {
			claimsByProvider[nc.Status.ProviderID] = nc
		}
	}
	podsOn := map[string]int{}
	for _, o := range api.Objects(podGVK) {
		p := o.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		f.Pods.Total++
		if p.Status.Phase != corev1.PodRunning {
			f.NotRunning = append(f.NotRunning, PodState{Pod: p.Namespace + "/" + p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName,
				Terminating: p.DeletionTimestamp != nil, Created: p.CreationTimestamp.Time.UTC()})
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			f.Pods.Running++
		case corev1.PodPending:
			f.Pods.Pending++
		}
		if p.Spec.NodeName != "" {
			podsOn[p.Spec.NodeName]++
			continue
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		reason := r.notes[p.Namespace+"/"+p.Name]
		if reason == "" {
			if c := unschedulable(p); c != nil {
				reason = c.Message
			} else {
				reason = "waiting for the scheduler"
			}
		}
		f.Unschedulable = append(f.Unschedulable, Unschedulable{Pod: p.Namespace + "/" + p.Name, Reason: reason})
	}
	for _, o := range api.Objects(nodeGVK) {
		n := o.(*corev1.Node)
		node := Node{
			Name: n.Name, NodePool: n.Labels[wellknown.LabelNodePool], InstanceType: n.Labels[wellknown.LabelInstanceType],
			CapacityType: n.Labels[wellknown.LabelCapacityType], Zone: n.Labels[wellknown.LabelTopologyZone],
			Created: n.CreationTimestamp.Time.UTC(), Ready: nodeReady(n), Labels: n.Labels, Pods: podsOn[n.Name],
		}
		if nc := claimsByProvider[n.Spec.ProviderID]; nc != nil {
			node.NodeClaim, node.ImageID = nc.Name, nc.Status.ImageID
		}
		for _, t := range n.Spec.Taints {
			s := t.Key
			if t.Value != "" {
				s += "=" + t.Value
			}
			node.Taints = append(node.Taints, s+":"+string(t.Effect))
		}
		f.Nodes = append(f.Nodes, node)
	}
	for _, id := range r.order {
		in := r.ledger[id]
		stop := in.end
		if stop.IsZero() || stop.After(now) {
			stop = now
		}
		if h := stop.Sub(in.start).Hours(); h > 0 {
			f.NodeHours += h
			f.Cost += h * in.price
		}
	}
	f.NodeHours = money(f.NodeHours)
	f.Cost = money(f.Cost)
	for k, v := range r.counts {
		f.Disruptions[k] = v
	}
	f.NodePools = []NodePool{}
	for _, o := range api.Objects(nodePoolGVK) {
		np := o.(*karpv1.NodePool)
		p := NodePool{Name: np.Name, Ready: meta.IsStatusConditionTrue(np.Status.Conditions, "Ready")}
		for _, n := range f.Nodes {
			if n.NodePool == np.Name {
				p.Nodes++
			}
		}
		if !p.Ready {
			p.Message = "Ready: the NodePool status controller has not reported yet"
			for _, c := range np.Status.Conditions {
				if c.Status != metav1.ConditionTrue && c.Type != "Ready" {
					p.Message = fmt.Sprintf("%s: %s: %s", c.Type, c.Reason, c.Message)
					break
				}
			}
		}
		f.NodePools = append(f.NodePools, p)
	}
	f.NodeClaims = finalNodeClaims(api)
	f.Instances = r.finalInstances()
	r.doc.Final = f
	if len(r.events) > 0 {
		r.doc.Events, r.events = slices.Concat(r.events...), nil
	}
	sort.SliceStable(r.doc.Events, func(i, j int) bool { return r.doc.Events[i].Time.Before(r.doc.Events[j].Time) })
	return &r.doc
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
