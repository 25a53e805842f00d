package explain

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/decide/disruption"
)

// NodePoolDetails are the facts behind a NodePool's verdict.
type NodePoolDetails struct {
	Weight              int32  `json:"weight"`
	ConsolidationPolicy string `json:"consolidationPolicy"`
	ConsolidateAfter    string `json:"consolidateAfter"`
	// Nodes is how many nodes and in-flight NodeClaims it has.
	Nodes int `json:"nodes"`
	// Launchable is whether the provisioner may launch from it now.
	Launchable bool `json:"launchable"`
	// InstanceTypes is how many instance types it may launch, when
	// launchable.
	InstanceTypes int             `json:"instanceTypes,omitempty"`
	Ready         *Condition      `json:"ready,omitempty"`
	Limits        []Limit         `json:"limits"`
	Budgets       []BudgetState   `json:"budgets"`
	Allowed       []AllowanceView `json:"allowed"`
	// NextBudgetChange is when a budget next starts or stops applying.
	NextBudgetChange *time.Time `json:"nextBudgetChange,omitempty"`
}

// Limit is one resource counted against the NodePool's limits.
type Limit struct {
	Resource string `json:"resource"`
	Used     string `json:"used"`
	// Limit is empty when the resource is not limited.
	Limit   string `json:"limit,omitempty"`
	Reached bool   `json:"reached,omitempty"`
}

// BudgetState is one budget and whether it applies now.
type BudgetState struct {
	Index       int    `json:"index"`
	Description string `json:"description"`
	Active      bool   `json:"active"`
	// Invalid says why the budget cannot be evaluated.
	Invalid string `json:"invalid,omitempty"`
}

// AllowanceView is decide/budget's Allowance for one reason.
type AllowanceView struct {
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes"`
	// Allowed is "unbounded" when no budget limits the reason.
	Allowed    string `json:"allowed"`
	Disrupting int    `json:"disrupting"`
	Remaining  string `json:"remaining"`
	// Budget is the index of the budget that sets Allowed; omitted when
	// none does.
	Budget *int `json:"budget,omitempty"`
}

// NodePool explains a NodePool: whether it may launch, its limits used
// against each limit, the budgets that apply now and the allowance they leave
// per disruption reason, and when that next changes.
func NodePool(in Input, name string) (*Explanation, error) {
	snap := in.Snapshot
	now := snap.Time
	np := nodePool(snap, name)
	if np == nil {
		return nil, fmt.Errorf("NodePool %q not found", name)
	}
	d := &NodePoolDetails{
		ConsolidationPolicy: string(policy(np)),
		ConsolidateAfter:    consolidateAfter(np),
	}
	if np.Spec.Weight != nil {
		d.Weight = *np.Spec.Weight
	}
	for _, n := range snap.Nodes {
		if n.NodePool() == name {
			d.Nodes++
		}
	}
	if c := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeReady); c != nil {
		d.Ready = condition(c)
		d.Ready.Reason = string(c.Status) + "/" + c.Reason
	}
	e := &Explanation{Kind: KindNodePool, Name: name, Time: now.UTC(), NodePool: d, Notes: in.Notes}

	for i := range in.Pools {
		if in.Pools[i].Name == name {
			d.Launchable = true
			d.InstanceTypes = len(in.Pools[i].InstanceTypes)
		}
	}
	for _, s := range in.Skipped {
		if s.NodePool == name {
			e.Reasons = append(e.Reasons, Reason{Code: s.Reason, NodePool: name, Message: s.Message})
		}
	}

	used := snap.InUse(name)
	keys := map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, "nodes": true}
	for k := range np.Spec.Limits {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		u := used[k]
		l := Limit{Resource: string(k), Used: u.String()}
		if lim, ok := np.Spec.Limits[k]; ok {
			l.Limit = lim.String()
			l.Reached = u.Cmp(lim) >= 0
			if l.Reached {
				e.Reasons = append(e.Reasons, Reason{Code: CodeLimitReached, NodePool: name,
					Message: fmt.Sprintf("%s used %s of its limit %s: nothing more can launch until nodes go", k, u.String(), lim.String())})
			}
		}
		d.Limits = append(d.Limits, l)
	}

	a := budget.Compute(np, snap.Nodes, now)
	active := budget.Active(np, now)
	invalid := map[int]string{}
	for _, be := range a.Invalid {
		invalid[be.Index] = be.Error()
		e.Reasons = append(e.Reasons, Reason{Code: CodeInvalidBudget, NodePool: name,
			Message: fmt.Sprintf("budget #%d cannot be evaluated (%s), which blocks every disruption", be.Index, be.Error())})
	}
	for i, b := range a.Budgets {
		d.Budgets = append(d.Budgets, BudgetState{Index: i, Description: budget.Describe(b), Active: slices.Contains(active, i), Invalid: invalid[i]})
	}
	next, hasNext := budget.NextChange(np, now)
	if hasNext {
		d.NextBudgetChange = timePtr(next)
	}
	for _, al := range a.ByReason {
		v := AllowanceView{Reason: string(al.Reason), Nodes: al.Nodes, Allowed: count(al.Allowed), Disrupting: al.Disrupting, Remaining: count(al.Remaining)}
		if al.Budget != budget.NoBudget {
			idx := al.Budget
			v.Budget = &idx
		}
		d.Allowed = append(d.Allowed, v)
		if al.Blocked() && len(a.Invalid) == 0 {
			r := Reason{Code: disruption.CodeBudget, NodePool: name, Method: string(al.Reason),
				Message: fmt.Sprintf("%s disruptions are held: budget #%d (%s) allows %d of %d node(s)", al.Reason, al.Budget, budget.Describe(a.Budgets[al.Budget]), al.Allowed, al.Nodes)}
			if hasNext {
				r.Until = timePtr(next)
			}
			e.Reasons = append(e.Reasons, r)
		}
	}

	switch {
	case !d.Launchable:
		e.Verdict = VerdictNotLaunchable
		e.Summary = fmt.Sprintf("NodePool %s cannot launch now", name)
		if len(e.Reasons) > 0 {
			e.Summary += ": " + strings.TrimSuffix(e.Reasons[0].Message, ".")
		}
		e.Summary += "."
	case len(e.Reasons) > 0:
		e.Verdict = VerdictConstrained
		e.Summary = fmt.Sprintf("NodePool %s may launch, but %s.", name, strings.TrimSuffix(e.Reasons[0].Message, "."))
	default:
		e.Verdict = VerdictOpen
		e.Summary = fmt.Sprintf("NodePool %s may launch, is within its limits, and its budgets allow disruption now.", name)
	}
	return e, nil
}

func policy(np *karpv1.NodePool) karpv1.ConsolidationPolicy {
	if p := np.Spec.Disruption.ConsolidationPolicy; p != "" {
		return p
	}
	return karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
}

// consolidateAfter renders the setting; unset is the API server's default,
// 0s.
func consolidateAfter(np *karpv1.NodePool) string {
	ca := np.Spec.Disruption.ConsolidateAfter
	if ca == nil {
		return "0s"
	}
	return ca.String()
}

func count(n int) string {
	if n >= budget.Unbounded {
		return "unbounded"
	}
	return fmt.Sprint(n)
}
