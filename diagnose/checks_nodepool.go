package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// maxNamed is how many objects a finding names before it counts the rest.
const maxNamed = 5

func named(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

// fixForVerdict says what to do about a packer verdict code.
var fixForVerdict = map[string]string{
	packer.CodeTaintNotTolerated:       "add a toleration for the NodePool's taint to the pod, or let a NodePool without that taint take it",
	packer.CodeRequirementIncompatible: "relax the pod's nodeSelector or node affinity, or widen the NodePool's requirements to allow what the pod asks for",
	packer.CodeLimitExceeded:           "raise the NodePool's spec.limits, or free capacity in it",
	packer.CodeNoInstanceTypeFits:      "lower the pod's requests, or allow larger instance types in the NodePool's requirements",
	packer.CodeTopologyUnsatisfiable:   "check the pod's topologySpreadConstraints against the zones and nodes the NodePools can offer",
	packer.CodeAffinityUnsatisfiable:   "check the pod's pod affinity and anti-affinity: the pods it must (not) run with decide where it can go",
	packer.CodeHostPortConflict:        "the hostPort is taken on every node it could use: free the port or let more nodes launch",
	packer.CodeNoAvailableOffering:     "capacity is short for every offering the pod may use: allow more instance types, zones or capacity types",
	packer.CodeMinValuesUnsatisfiable:  "lower the requirement's minValues, or allow more instance types",
}

func checkPendingPods(_ context.Context, w *World) []Result {
	snap := w.Snapshot
	pods := snap.ProvisionablePods()
	if len(pods) == 0 {
		waiting := len(snap.PendingPods)
		if waiting == 0 {
			return []Result{{Status: Pass, Evidence: "no pod is pending"}}
		}
		return []Result{{Status: Pass, Evidence: fmt.Sprintf("no pod waits for a new node (%d pending pods have not been marked unschedulable by kube-scheduler)", waiting)}}
	}
	in := snap.PackerInput(pods, w.Pools, w.Explain.PreferencePolicy)
	in.MaxInstanceTypes = w.Explain.MaxInstanceTypes
	in.MinValuesPolicy = w.Explain.MinValuesPolicy
	res := packer.Solve(in)
	byKey := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range pods {
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	var out []Result

	// Pods nothing can take, grouped by what rules them out, so that a
	// Deployment of 50 replicas is one finding.
	type group struct {
		pods []string
		u    packer.Unschedulable
	}
	groups := map[string]*group{}
	for _, u := range res.Unschedulable {
		var sig strings.Builder
		sig.WriteString(u.Reason)
		for _, v := range u.NodePools {
			sig.WriteString("|" + v.NodePool + ":" + v.Code + ":" + v.Message)
		}
		g := groups[sig.String()]
		if g == nil {
			g = &group{u: u}
			groups[sig.String()] = g
		}
		g.pods = append(g.pods, u.Pod.String())
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		slices.Sort(g.pods)
		var verdicts []string
		fix := ""
		for _, v := range g.u.NodePools {
			verdicts = append(verdicts, fmt.Sprintf("NodePool %s: %s", v.NodePool, v.Code))
			if fix == "" {
				fix = fixForVerdict[v.Code]
			}
		}
		for _, s := range w.Skipped {
			verdicts = append(verdicts, fmt.Sprintf("NodePool %s: left out (%s)", s.NodePool, s.Reason))
		}
		if len(w.Pools) == 0 {
			fix = "no NodePool may launch: fix what nodepool-ready reports"
			if len(snap.NodePools) == 0 {
				fix = "create a NodePool (and its EC2NodeClass) so that stevedore can launch nodes"
			}
		}
		if fix == "" {
			fix = "run stevedore explain pod " + g.pods[0] + " for the verdict of every NodePool"
		}
		ev := fmt.Sprintf("%d pod(s) fit nowhere: %s", len(g.pods), strings.TrimSuffix(g.u.Reason, "."))
		if len(verdicts) > 0 {
			ev += " [" + strings.Join(verdicts, "; ") + "]"
		}
		out = append(out, Result{Status: Fail, Object: "Pod " + named(g.pods), Evidence: ev, Fix: fix})
	}

	var ignored []string
	for _, u := range res.Ignored {
		ignored = append(ignored, u.Pod.String()+" ("+u.Reason+")")
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		out = append(out, Result{Status: Warn, Object: "Pod", Evidence: fmt.Sprintf("%d pod(s) are ignored by the provisioner: %s", len(ignored), named(ignored)),
			Fix: "a pod whose volumes cannot be resolved waits until its PersistentVolumeClaim exists and is readable"})
	}

	// Pods that could be placed: fine, unless they have waited long, which
	// means a launch or a registration is not completing.
	var placed, stale []string
	pools := map[string]bool{}
	var oldest time.Duration
	note := func(key types.NamespacedName, where string) {
		placed = append(placed, key.String())
		if p := byKey[key]; p != nil {
			if age := w.now().Sub(unschedulableSince(p)); age > w.Thresholds.PendingPod {
				stale = append(stale, key.String())
				oldest = max(oldest, age)
				pools[where] = true
			}
		}
	}
	for _, pl := range res.Placements {
		where := "node " + pl.Node
		if n, ok := snap.Node(pl.Node); ok && n.InFlight() {
			where = "NodeClaim " + pl.Node
		}
		note(pl.Pod, where)
	}
	for _, c := range res.NodeClaims {
		for _, key := range c.Pods {
			note(key, "NodePool "+c.NodePool)
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		out = append(out, Result{Status: Warn, Object: "Pod " + named(stale),
			Evidence: fmt.Sprintf("%d pod(s) have been pending for up to %s although %s could take them: a launch, registration or initialization is not completing",
				len(stale), oldest.Round(time.Second), named(slices.Sorted(maps.Keys(pools)))),
			Fix: "see the nodeclaim-launch, nodeclaim-registration and nodeclaim-initialization findings"})
	} else if len(placed) > 0 && len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("%d pending pod(s) can be placed: %d on existing or in-flight nodes, %d on %d new NodeClaim(s)",
			len(placed), len(res.Placements), len(placed)-len(res.Placements), len(res.NodeClaims))})
	}
	return out
}

// unschedulableSince is when kube-scheduler gave up on the pod.
func unschedulableSince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

func checkNodePoolReady(_ context.Context, w *World) []Result {
	snap := w.Snapshot
	if len(snap.NodePools) == 0 {
		return []Result{{Status: Fail, Evidence: "there is no NodePool, so stevedore launches nothing",
			Fix: "create a NodePool and the EC2NodeClass it references (see examples/)"}}
	}
	skipped := map[string]string{}
	for _, s := range w.Skipped {
		skipped[s.NodePool] = s.Reason + ": " + s.Message
	}
	types := map[string]int{}
	for _, p := range w.Pools {
		types[p.Name] = len(p.InstanceTypes)
	}
	var out []Result
	for _, np := range snap.NodePools {
		obj := "NodePool " + np.Name
		if !np.DeletionTimestamp.IsZero() {
			out = append(out, Result{Status: Warn, Object: obj, Evidence: "being deleted: it launches nothing more", Fix: "nothing, if that is intended"})
			continue
		}
		if why, ok := skipped[np.Name]; ok {
			fix := "fix what the message names"
			if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && strings.HasPrefix(why, "NodeClassNotReady") {
				fix = fmt.Sprintf("make EC2NodeClass %s Ready: see its nodeclass-conditions findings", ref.Name)
			}
			out = append(out, Result{Status: Fail, Object: obj, Evidence: "the provisioner leaves it out: " + why, Fix: fix})
			continue
		}
		if c := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeReady); c != nil && c.Status == metav1.ConditionFalse {
			out = append(out, Result{Status: Fail, Object: obj, Evidence: fmt.Sprintf("Ready is False (%s): %s", c.Reason, c.Message),
				Fix: "fix the condition the message names (kubectl describe nodepool " + np.Name + ")"})
			continue
		}
		n := types[np.Name]
		if n == 0 {
			out = append(out, Result{Status: Fail, Object: obj, Evidence: "its requirements leave no instance type to launch",
				Fix: "widen spec.template.spec.requirements (instance types, families, architectures, capacity types, zones)"})
			continue
		}
		out = append(out, Result{Status: Pass, Object: obj, Evidence: fmt.Sprintf("may launch %d instance types", n)})
	}
	return out
}

func checkNodePoolLimits(_ context.Context, w *World) []Result {
	var out []Result
	for _, np := range w.Snapshot.NodePools {
		if len(np.Spec.Limits) == 0 {
			continue
		}
		used := w.Snapshot.InUse(np.Name)
		var parts, reached []string
		for _, k := range slices.Sorted(maps.Keys(np.Spec.Limits)) {
			lim, u := np.Spec.Limits[k], used[k]
			parts = append(parts, fmt.Sprintf("%s %s of %s", k, u.String(), lim.String()))
			if u.Cmp(lim) >= 0 {
				reached = append(reached, string(k))
			}
		}
		obj := "NodePool " + np.Name
		if len(reached) > 0 {
			out = append(out, Result{Status: Warn, Object: obj,
				Evidence: fmt.Sprintf("limit reached for %s (%s): it launches nothing more until nodes go", strings.Join(reached, ", "), strings.Join(parts, ", ")),
				Fix:      "raise spec.limits if the pool should grow; pending pods it would have taken get LimitExceeded"})
			continue
		}
		out = append(out, Result{Status: Pass, Object: obj, Evidence: "within its limits: " + strings.Join(parts, ", ")})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: "no NodePool sets limits"})
	}
	return out
}

// checkNodePoolWeights finds NodePools that another NodePool, tried before
// them, always takes the pods of: every instance type the shadowed pool may
// launch, the other may launch too, its requirements admit everything the
// shadowed pool's do, and its taints are a subset of the shadowed pool's.
// With no limits on the first, the second only launches when the first has
// no capacity at all.
func checkNodePoolWeights(_ context.Context, w *World) []Result {
	// In the provisioner's default order, Karpenter's: weight descending,
	// then name descending.
	pools := slices.Clone(w.Pools)
	slices.SortStableFunc(pools, func(a, b packer.NodePool) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(b.Name, a.Name))
	})
	var out []Result
	for j := range pools {
		for i := range j {
			a, b := &pools[i], &pools[j]
			if len(a.Limits) > 0 || !covers(a, b) {
				continue
			}
			out = append(out, Result{Status: Warn, Object: "NodePool " + b.Name,
				Evidence: fmt.Sprintf("NodePool %s (weight %d) is tried first and accepts every pod and instance type that %s (weight %d) does, without limits: %s launches only when %s finds no capacity",
					a.Name, a.Weight, b.Name, b.Weight, b.Name, a.Name),
				Fix: fmt.Sprintf("give %s a higher weight than %s, narrow %s's requirements, or set limits on %s if %s is meant as overflow", b.Name, a.Name, a.Name, a.Name, b.Name)})
			break
		}
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("%d launchable NodePool(s); none is shadowed", len(pools))})
	}
	return out
}

// covers reports whether a takes every pod b would take, on any instance
// type b would use.
func covers(a, b *packer.NodePool) bool {
	names := map[string]bool{}
	for _, it := range a.InstanceTypes {
		names[it.Name] = true
	}
	for _, it := range b.InstanceTypes {
		if !names[it.Name] {
			return false
		}
	}
	for _, ta := range a.Taints {
		if !slices.ContainsFunc(b.Taints, func(tb corev1.Taint) bool { return ta.MatchTaint(&tb) && ta.Value == tb.Value }) {
			return false
		}
	}
	ra, rb := withoutPoolKey(a.Requirements), withoutPoolKey(b.Requirements)
	return rb.Intersect(ra).Equal(rb)
}

// withoutPoolKey drops karpenter.sh/nodepool, which every pool pins to its
// own name.
func withoutPoolKey(r requirements.Requirements) requirements.Requirements {
	var kept []requirements.Requirement
	for req := range r.All() {
		if req.Key() != wellknown.LabelNodePool {
			kept = append(kept, req)
		}
	}
	return requirements.New(kept...)
}

func checkNodePoolBudgets(_ context.Context, w *World) []Result {
	var out []Result
	now := w.now()
	for _, np := range w.Snapshot.NodePools {
		obj := "NodePool " + np.Name
		a := budget.Compute(np, w.Snapshot.Nodes, now)
		if len(a.Invalid) > 0 {
			var errs []string
			for _, e := range a.Invalid {
				errs = append(errs, fmt.Sprintf("budget #%d: %v", e.Index, e))
			}
			out = append(out, Result{Status: Fail, Object: obj, Evidence: "a budget cannot be evaluated, which blocks every disruption: " + strings.Join(errs, "; "),
				Fix: "fix spec.disruption.budgets (stevedore validate names the field)"})
			continue
		}
		var held, open []string
		for _, al := range a.ByReason {
			if al.Blocked() {
				held = append(held, fmt.Sprintf("%s by budget #%d (%s)", al.Reason, al.Budget, budget.Describe(a.Budgets[al.Budget])))
				continue
			}
			open = append(open, fmt.Sprintf("%s %s", al.Reason, allowance(al.Remaining)))
		}
		if len(held) == 0 {
			ev := "disruptions allowed now: " + strings.Join(open, ", ")
			if len(a.ByReason) > 0 && a.ByReason[0].Nodes == 0 {
				ev = "no initialized nodes to disrupt"
			}
			out = append(out, Result{Status: Pass, Object: obj, Evidence: ev})
			continue
		}
		ev := "held now: " + strings.Join(held, "; ")
		if next, ok := budget.NextChange(np, now); ok {
			ev += fmt.Sprintf("; the budgets next change at %s (in %s)", next.UTC().Format(time.RFC3339), next.Sub(now).Round(time.Second))
		}
		out = append(out, Result{Status: Warn, Object: obj, Evidence: ev,
			Fix: "nothing if the window is intended; stevedore explain nodepool " + np.Name + " shows every budget"})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: "no NodePool"})
	}
	return out
}

func allowance(n int) string {
	if n >= budget.Unbounded {
		return "unbounded"
	}
	return fmt.Sprint(n)
}
