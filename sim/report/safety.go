package report

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// This file records what the safety invariants are checked against: the
// instances launched, every eviction, the PodDisruptionBudgets and the
// NodePools' disruption budgets over time, and the NodeClaims at the end.

// InstancesLaunched records instances that EC2 launched now (the IDs a
// CreateFleet or RunInstances call returned), as they are at launch.
func (r *Recorder) InstancesLaunched(ids []string) {
	if r.aws == nil {
		return
	}
	for _, id := range ids {
		info, ok := r.aws.Instance(id)
		if !ok {
			continue
		}
		r.launches = append(r.launches, Instance{
			ID: id, NodeClaim: info.Tags[wellknown.TagNodeClaim], NodePool: info.Tags[wellknown.TagNodePool],
			State: info.State, InstanceType: info.InstanceType, Zone: info.Zone, CapacityType: capacityTypeOf(info),
			LaunchTime: info.LaunchTime.UTC(),
		})
	}
}

// Eviction records one call of the eviction API.
func (r *Recorder) Eviction(now time.Time, e apiserver.Eviction) {
	key := e.Pod.Namespace + "/" + e.Pod.Name
	ev := Eviction{Time: now, Pod: key, Node: r.podNode[key], Healthy: e.Healthy, Granted: e.Granted, Reason: e.Reason}
	for _, b := range e.Budgets {
		ev.Budgets = append(ev.Budgets, PDBStatus{Name: b.Name.Namespace + "/" + b.Name.Name, CurrentHealthy: b.CurrentHealthy,
			DesiredHealthy: b.DesiredHealthy, DisruptionsAllowed: b.DisruptionsAllowed, ExpectedPods: b.ExpectedPods})
	}
	r.doc.Evictions = append(r.doc.Evictions, ev)
}

// Flush records what needs the API as it is once a change has been carried
// out: the budgets of the disruptions decided since the last call. The
// runner calls it after each change's effects are dispatched.
func (r *Recorder) Flush(now time.Time, api *apiserver.Server) {
	if len(r.decided) == 0 {
		return
	}
	decided := r.decided
	r.decided = nil
	uses := budgetUses(now, api, true)
	for _, name := range decided {
		cl := r.claims[name]
		if cl == nil || cl.disruption == "" {
			continue
		}
		d := Decision{Time: now, NodeClaim: name, BudgetUse: BudgetUse{NodePool: cl.nodePool, Reason: cl.disruption}}
		if i := slices.IndexFunc(uses, func(u BudgetUse) bool { return u.NodePool == cl.nodePool && u.Reason == cl.disruption }); i >= 0 {
			d.BudgetUse = uses[i]
		}
		r.doc.Decisions = append(r.doc.Decisions, d)
	}
}

// budgetUses returns, for every NodePool and budgeted reason (in name and
// reason order), how many nodes its budgets allow to be disrupted at now
// (package decide/budget, over the nodes as the API has them) and how many
// are. Unless all is set, pools without counted or disrupting nodes are
// left out.
func budgetUses(now time.Time, api *apiserver.Server, all bool) []BudgetUse {
	pools := api.Objects(nodePoolGVK)
	if len(pools) == 0 {
		return nil
	}
	nodes := map[string]*corev1.Node{}
	for _, o := range api.Objects(nodeGVK) {
		nodes[o.GetName()] = o.(*corev1.Node)
	}
	var sns []*state.StateNode
	// The nodes disrupted for each reason, to count them as the budgets
	// count nodes.
	byReason := map[string][]*state.StateNode{}
	for _, o := range api.Objects(nodeClaimGVK) {
		nc := o.(*karpv1.NodeClaim)
		n := nodes[nc.Status.NodeName]
		if n == nil {
			continue
		}
		reason := disruptionOf(nc)
		sn := &state.StateNode{Node: n, NodeClaim: nc, MarkedForDeletion: reason != "" ||
			slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == wellknown.TaintKeyDisrupted })}
		sns = append(sns, sn)
		if reason != "" {
			byReason[reason] = append(byReason[reason], sn)
		}
	}
	var out []BudgetUse
	for _, o := range pools {
		np := o.(*karpv1.NodePool)
		a := budget.Compute(np, sns, now)
		for _, al := range a.ByReason {
			_, disrupting := budget.CountNodes(np.Name, byReason[string(al.Reason)])
			u := BudgetUse{NodePool: np.Name, Reason: string(al.Reason), Nodes: al.Nodes, Allowed: al.Allowed,
				Disrupting: disrupting, DisruptingAll: al.Disrupting}
			if all || u.Nodes > 0 || u.DisruptingAll > 0 {
				out = append(out, u)
			}
		}
	}
	return out
}

// disruptionOf is the reason of a NodeClaim's DisruptionReason condition,
// when it is True.
func disruptionOf(nc *karpv1.NodeClaim) string {
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

// pdbStatuses returns every PodDisruptionBudget's status at the moment, by
// namespace and name.
func pdbStatuses(api *apiserver.Server) []PDBStatus {
	var out []PDBStatus
	for _, o := range api.Objects(pdbGVK) {
		st := api.PDBStatus(o.(*policyv1.PodDisruptionBudget))
		out = append(out, PDBStatus{Name: o.GetNamespace() + "/" + o.GetName(), CurrentHealthy: st.CurrentHealthy,
			DesiredHealthy: st.DesiredHealthy, DisruptionsAllowed: st.DisruptionsAllowed, ExpectedPods: st.ExpectedPods})
	}
	return out
}

// finalNodeClaims lists the NodeClaims at the end, by name.
func finalNodeClaims(api *apiserver.Server) []NodeClaim {
	out := []NodeClaim{}
	for _, o := range api.Objects(nodeClaimGVK) {
		nc := o.(*karpv1.NodeClaim)
		c := NodeClaim{Name: nc.Name, NodePool: nc.Labels[wellknown.LabelNodePool], ProviderID: nc.Status.ProviderID,
			InstanceID: instanceID(nc.Status.ProviderID), Node: nc.Status.NodeName}
		for _, cond := range nc.Status.Conditions {
			s := cond.Type + "=" + string(cond.Status)
			if cond.Status != metav1.ConditionTrue && cond.Reason != "" {
				s += ":" + cond.Reason
			} else if cond.Type == karpv1.ConditionTypeDisruptionReason {
				s += ":" + cond.Reason
			}
			c.Conditions = append(c.Conditions, s)
		}
		if nc.DeletionTimestamp != nil {
			t := nc.DeletionTimestamp.Time.UTC()
			c.Deleting = &t
		}
		out = append(out, c)
	}
	return out
}

// finalInstances lists every instance launched, with its state at the end:
// as the in-memory EC2 describes it, or terminated once it no longer does.
func (r *Recorder) finalInstances() []Instance {
	out := make([]Instance, 0, len(r.launches))
	for _, in := range r.launches {
		in.State = fake.StateTerminated
		if r.aws != nil {
			if info, ok := r.aws.Instance(in.ID); ok {
				in.State = info.State
			}
		}
		out = append(out, in)
	}
	return out
}
