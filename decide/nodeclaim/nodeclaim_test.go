package nodeclaim

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func hashes(hash, version string) map[string]string {
	a := map[string]string{}
	if hash != "" {
		a[wellknown.AnnotationNodePoolHash] = hash
	}
	if version != "" {
		a[wellknown.AnnotationNodePoolHashVersion] = version
	}
	return a
}

func launchedClaim(labels, annotations map[string]string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "nc", Labels: labels, Annotations: annotations},
		Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue},
		}},
	}
}

func pool(annotations map[string]string, labels map[string]karpv1.LabelValue, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: annotations}}
	np.Spec.Template.Metadata.Labels = labels
	np.Spec.Template.Spec.Requirements = reqs
	return np
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func TestStaticDrift(t *testing.T) {
	for _, tc := range []struct {
		name        string
		claim, pool map[string]string
		want        bool
	}{
		{"same hash", hashes("1", "v"), hashes("1", "v"), false},
		{"hash changed", hashes("1", "v"), hashes("2", "v"), true},
		{"versions differ", hashes("1", "v1"), hashes("2", "v2"), false},
		{"claim has no hash", hashes("", "v"), hashes("2", "v"), false},
		{"claim has no version", hashes("1", ""), hashes("2", "v"), false},
		{"pool not stamped yet", hashes("1", "v"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, drifted := StaticDrift(launchedClaim(nil, tc.claim), pool(tc.pool, nil))
			if drifted != tc.want || (drifted && reason != ReasonNodePoolDrifted) || (!drifted && reason != "") {
				t.Errorf("StaticDrift = %q, %v; want drifted %v", reason, drifted, tc.want)
			}
		})
	}
}

func TestRequirementsDrift(t *testing.T) {
	node := map[string]string{
		wellknown.LabelArch:                        "amd64",
		wellknown.LabelCapacityType:                "on-demand",
		wellknown.LabelTopologyZone:                "us-east-1a",
		wellknown.LabelInstanceType:                "m6i.large",
		"example.com/team":                         "a",
		"failure-domain.beta.kubernetes.io/region": "us-east-1",
		"karpenter.k8s.aws/instance-cpu":           "8",
	}
	for _, tc := range []struct {
		name   string
		labels map[string]karpv1.LabelValue
		reqs   []karpv1.NodeSelectorRequirementWithMinValues
		want   bool
		detail string
	}{
		{name: "no requirements", want: false},
		{name: "still met", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelArch, corev1.NodeSelectorOpIn, "amd64", "arm64"),
			req(wellknown.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand", "spot"),
		}},
		{name: "arch narrowed", want: true, detail: wellknown.LabelArch, reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelArch, corev1.NodeSelectorOpIn, "arm64"),
		}},
		{name: "zone excluded", want: true, detail: wellknown.LabelTopologyZone, reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "us-east-1a"),
		}},
		{name: "new custom requirement the node lacks", want: true, detail: "example.com/tier", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/tier", corev1.NodeSelectorOpExists),
		}},
		{name: "absence allowed", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/tier", corev1.NodeSelectorOpDoesNotExist),
		}},
		{name: "deprecated alias on the node counts", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelTopologyRegion, corev1.NodeSelectorOpIn, "us-east-1"),
		}},
		{name: "template label still met", labels: map[string]karpv1.LabelValue{"example.com/team": "a"}},
		{name: "template label changed", want: true, detail: "example.com/team", labels: map[string]karpv1.LabelValue{"example.com/team": "b"}},
		{name: "Gte met at its bound", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req("karpenter.k8s.aws/instance-cpu", karpv1.NodeSelectorOpGte, "8"),
			req("karpenter.k8s.aws/instance-cpu", karpv1.NodeSelectorOpLte, "8"),
		}},
		{name: "Gte raised past the node", want: true, detail: "karpenter.k8s.aws/instance-cpu", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req("karpenter.k8s.aws/instance-cpu", karpv1.NodeSelectorOpGte, "9"),
		}},
		{name: "Lte lowered past the node", want: true, detail: "karpenter.k8s.aws/instance-cpu", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req("karpenter.k8s.aws/instance-cpu", karpv1.NodeSelectorOpLte, "7"),
		}},
		{name: "unparsable requirement is not judged", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/gen", corev1.NodeSelectorOpGt, "x"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := launchedClaim(node, nil)
			np := pool(nil, tc.labels, tc.reqs...)
			reason, drifted := RequirementsDrift(nc, np)
			if drifted != tc.want || (drifted && reason != ReasonRequirementsDrifted) {
				t.Fatalf("RequirementsDrift = %q, %v; want drifted %v", reason, drifted, tc.want)
			}
			d := NodePoolDrift(nc, np)
			if d.Drifted() != tc.want || !strings.Contains(d.Message, tc.detail) {
				t.Errorf("NodePoolDrift = %+v; want drifted %v naming %q", d, tc.want, tc.detail)
			}
		})
	}
}

func TestNodePoolDriftOrderAndLaunch(t *testing.T) {
	labels := map[string]string{wellknown.LabelArch: "amd64"}
	np := pool(hashes("2", "v"), nil, req(wellknown.LabelArch, corev1.NodeSelectorOpIn, "arm64"))

	// Both drifts apply: the static one is reported, as Karpenter does.
	d := NodePoolDrift(launchedClaim(labels, hashes("1", "v")), np)
	if d.Reason != ReasonNodePoolDrifted || !strings.Contains(d.Message, "NodePool default") {
		t.Errorf("NodePoolDrift = %+v, want %s first", d, ReasonNodePoolDrifted)
	}

	// Static drift recorded under an older hash version is kept: the hashes
	// cannot be compared, and nothing says the template changed back.
	old := launchedClaim(labels, hashes("1", "v1"))
	old.Status.Conditions = append(old.Status.Conditions, metav1.Condition{
		Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: ReasonNodePoolDrifted, Message: "changed",
	})
	if d := NodePoolDrift(old, pool(hashes("2", "v2"), nil)); d.Reason != ReasonNodePoolDrifted || d.Message != "changed" {
		t.Errorf("NodePoolDrift across a hash version change = %+v", d)
	}
	if _, drifted := StaticDrift(old, pool(hashes("2", "v2"), nil)); drifted {
		t.Error("StaticDrift compared hashes of different versions")
	}
	// Without the recorded drift, another version is not drift.
	if d := NodePoolDrift(launchedClaim(labels, hashes("1", "v1")), pool(hashes("2", "v2"), nil)); d.Drifted() {
		t.Errorf("NodePoolDrift = %+v for another hash version", d)
	}

	// Not launched: labels are not resolved, nothing has drifted.
	nc := launchedClaim(labels, hashes("1", "v"))
	nc.Status.Conditions[0].Status = metav1.ConditionUnknown
	if d := NodePoolDrift(nc, np); d.Drifted() {
		t.Errorf("NodePoolDrift of an unlaunched NodeClaim = %+v", d)
	}
}

func initialized(at time.Time, lastPodEvent time.Time) *karpv1.NodeClaim {
	nc := launchedClaim(nil, nil)
	nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{
		Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at),
	})
	nc.Status.LastPodEventTime = metav1.NewTime(lastPodEvent)
	return nc
}

func TestConsolidatable(t *testing.T) {
	five := karpv1.NewNillableDuration(5 * time.Minute)
	zero := karpv1.NewNillableDuration(0)
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name      string
		nc        *karpv1.NodeClaim
		after     *karpv1.NillableDuration
		want      bool
		reason    string
		at        time.Time
		remaining time.Duration
	}{
		{"never", initialized(t0, time.Time{}), karpv1.NeverDuration(), false, ReasonConsolidateAfterNever, time.Time{}, 0},
		{"not initialized", launchedClaim(nil, nil), five, false, ReasonNotInitialized, time.Time{}, 0},
		{"from initialization, elapsed", initialized(t0, time.Time{}), five, true, ReasonConsolidatable, t0.Add(5 * time.Minute), 0},
		{"from initialization, not yet", initialized(now.Add(-2*time.Minute), time.Time{}), five, false, ReasonConsolidateAfterNotElapsed, now.Add(3 * time.Minute), 3 * time.Minute},
		{"recent pod event", initialized(t0, now.Add(-time.Minute)), five, false, ReasonConsolidateAfterNotElapsed, now.Add(4 * time.Minute), 4 * time.Minute},
		{"exactly at the boundary", initialized(t0, now.Add(-5*time.Minute)), five, true, ReasonConsolidatable, now, 0},
		{"old pod event", initialized(t0, now.Add(-10*time.Minute)), five, true, ReasonConsolidatable, now.Add(-5 * time.Minute), 0},
		{"zero is immediate", initialized(now, time.Time{}), zero, true, ReasonConsolidatable, now, 0},
		{"unset reads as the 0s default", initialized(now, time.Time{}), nil, true, ReasonConsolidatable, now, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Consolidatable(tc.nc, tc.after, now)
			if c.Consolidatable != tc.want || c.Reason != tc.reason || !c.At.Equal(tc.at) || c.Remaining(now) != tc.remaining {
				t.Errorf("Consolidatable = %+v (remaining %s); want %v %s at %s remaining %s", c, c.Remaining(now), tc.want, tc.reason, tc.at, tc.remaining)
			}
			if c.Message() == "" {
				t.Error("empty message")
			}
		})
	}
	// The message says where the window counts from.
	if m := Consolidatable(initialized(t0, now.Add(-time.Minute)), five, now).Message(); !strings.Contains(m, "last pod event") || !strings.Contains(m, "5m") {
		t.Errorf("message = %q", m)
	}
}

func TestExpiresAt(t *testing.T) {
	claim := func(created time.Time, after *karpv1.NillableDuration) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		nc.Spec.ExpireAfter = after
		return nc
	}
	for _, tc := range []struct {
		name    string
		nc      *karpv1.NodeClaim
		ok      bool
		at      time.Time
		now     time.Time
		expired bool
	}{
		{"720h", claim(t0, karpv1.NewNillableDuration(720*time.Hour)), true, t0.Add(720 * time.Hour), t0.Add(719 * time.Hour), false},
		{"expired", claim(t0, karpv1.NewNillableDuration(time.Hour)), true, t0.Add(time.Hour), t0.Add(2 * time.Hour), true},
		{"exactly at expiry", claim(t0, karpv1.NewNillableDuration(time.Hour)), true, t0.Add(time.Hour), t0.Add(time.Hour), true},
		{"never", claim(t0, karpv1.NeverDuration()), false, time.Time{}, t0.Add(10000 * time.Hour), false},
		{"unset", claim(t0, nil), false, time.Time{}, t0.Add(10000 * time.Hour), false},
		{"not created yet", claim(time.Time{}, karpv1.NewNillableDuration(time.Hour)), false, time.Time{}, t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, ok := ExpiresAt(tc.nc)
			if ok != tc.ok || !at.Equal(tc.at) {
				t.Errorf("ExpiresAt = %s, %v; want %s, %v", at, ok, tc.at, tc.ok)
			}
			if _, expired := Expired(tc.nc, tc.now); expired != tc.expired {
				t.Errorf("Expired at %s = %v, want %v", tc.now, expired, tc.expired)
			}
		})
	}
}

var policies = []cloud.RepairPolicy{
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
	{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 2 * time.Minute},
}

func node(conds ...corev1.NodeCondition) corev1.Node {
	return corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
}

func cond(typ corev1.NodeConditionType, status corev1.ConditionStatus, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(since)}
}

func TestNodeHealth(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name      string
		node      corev1.Node
		unhealthy bool
		due       bool
		policy    int
		repairAt  time.Time
	}{
		{name: "ready", node: node(cond(corev1.NodeReady, corev1.ConditionTrue, t0))},
		{name: "no conditions", node: node()},
		{name: "not ready, tolerated", node: node(cond(corev1.NodeReady, corev1.ConditionFalse, now.Add(-time.Minute))),
			unhealthy: true, policy: 0, repairAt: now.Add(9 * time.Minute)},
		{name: "not ready, due", node: node(cond(corev1.NodeReady, corev1.ConditionFalse, now.Add(-10*time.Minute))),
			unhealthy: true, due: true, policy: 0, repairAt: now},
		{name: "unknown, due", node: node(cond(corev1.NodeReady, corev1.ConditionUnknown, t0)),
			unhealthy: true, due: true, policy: 1, repairAt: t0.Add(10 * time.Minute)},
		{name: "the policy that falls due first wins", node: node(
			cond(corev1.NodeReady, corev1.ConditionFalse, now.Add(-5*time.Minute)),
			cond("AcceleratedHardwareReady", corev1.ConditionFalse, now.Add(-time.Minute)),
		), unhealthy: true, policy: 2, repairAt: now.Add(time.Minute)},
		{name: "other status of a policy's condition", node: node(cond("AcceleratedHardwareReady", corev1.ConditionTrue, t0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NodeHealth(policies, &tc.node, now)
			if h.Unhealthy != tc.unhealthy || h.Due != tc.due {
				t.Fatalf("NodeHealth = %+v; want unhealthy %v due %v", h, tc.unhealthy, tc.due)
			}
			if !tc.unhealthy {
				return
			}
			if h.Policy != policies[tc.policy] || !h.RepairAt.Equal(tc.repairAt) {
				t.Errorf("NodeHealth = %+v; want policy %d, repair at %s", h, tc.policy, tc.repairAt)
			}
			if !strings.Contains(h.Message(), string(h.Condition.Type)) {
				t.Errorf("message %q does not name the condition", h.Message())
			}
		})
	}
	if got := NodeHealth(nil, &corev1.Node{}, now); got.Unhealthy {
		t.Errorf("no policies: %+v", got)
	}
}

func TestCountUnhealthy(t *testing.T) {
	nodes := []corev1.Node{
		node(cond(corev1.NodeReady, corev1.ConditionTrue, t0)),
		node(cond(corev1.NodeReady, corev1.ConditionFalse, t0)),
		// Still tolerated, but counts: the cap is about failing nodes.
		node(cond(corev1.NodeReady, corev1.ConditionUnknown, t0.Add(time.Hour))),
		node(cond(corev1.NodeReady, corev1.ConditionTrue, t0), cond("AcceleratedHardwareReady", corev1.ConditionFalse, t0)),
		node(),
	}
	if n := CountUnhealthy(policies, nodes); n != 3 {
		t.Errorf("CountUnhealthy = %d, want 3", n)
	}
}

func TestRepairCap(t *testing.T) {
	for _, tc := range []struct {
		unhealthy, total, pct int
		repair                bool
		allowed               int
	}{
		{1, 1, 20, true, 1},   // a single-node pool can be repaired
		{1, 3, 20, true, 1},   // 20% of 3 rounds up to 1
		{2, 3, 20, false, 1},  //
		{2, 10, 20, true, 2},  //
		{3, 10, 20, false, 2}, //
		{3, 11, 20, true, 3},  // 2.2 rounds up to 3
		{5, 10, 50, true, 5},  //
		{1, 10, 0, false, 0},  // 0% never repairs
		{10, 10, 100, true, 10},
		{10, 10, 250, true, 10}, // clamped to 100%
		{1, 10, -5, false, 0},   // clamped to 0%
	} {
		v := RepairCap(tc.unhealthy, tc.total, tc.pct)
		if v.Repair != tc.repair || v.Allowed != tc.allowed {
			t.Errorf("RepairCap(%d, %d, %d) = %+v; want repair %v allowed %d", tc.unhealthy, tc.total, tc.pct, v, tc.repair, tc.allowed)
		}
		wantReason := ReasonTooManyUnhealthy
		if tc.repair {
			wantReason = ReasonRepairAllowed
		}
		if v.Reason != wantReason || !strings.Contains(v.Message(), "of") {
			t.Errorf("RepairCap(%d, %d, %d) reason %q message %q", tc.unhealthy, tc.total, tc.pct, v.Reason, v.Message())
		}
	}
}

func TestRestamp(t *testing.T) {
	withDrifted := func(nc *karpv1.NodeClaim, status metav1.ConditionStatus) *karpv1.NodeClaim {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: status})
		return nc
	}
	for _, tc := range []struct {
		name                  string
		nc                    *karpv1.NodeClaim
		wantVersion, wantHash bool
	}{
		{"same version", launchedClaim(nil, hashes("1", "v2")), false, false},
		{"same version, drifted", withDrifted(launchedClaim(nil, hashes("1", "v2")), metav1.ConditionTrue), false, false},
		{"older version", launchedClaim(nil, hashes("1", "v1")), true, true},
		{"no hash on the claim", launchedClaim(nil, nil), true, true},
		{"version without a hash", launchedClaim(nil, hashes("", "v1")), true, true},
		{"drifted keeps its hash", withDrifted(launchedClaim(nil, hashes("1", "v1")), metav1.ConditionTrue), true, false},
		{"not drifted", withDrifted(launchedClaim(nil, hashes("1", "v1")), metav1.ConditionFalse), true, true},
	} {
		v, h := Restamp(tc.nc, "v2")
		if v != tc.wantVersion || h != tc.wantHash {
			t.Errorf("%s: Restamp = (version %v, hash %v), want (%v, %v)", tc.name, v, h, tc.wantVersion, tc.wantHash)
		}
	}
}

func TestInstanceTypeDrift(t *testing.T) {
	offered := func(name string, offerings ...packer.Offering) *packer.InstanceType {
		return &packer.InstanceType{Name: name, Offerings: offerings}
	}
	od := func(zone string, available bool) packer.Offering {
		return packer.Offering{Zone: zone, CapacityType: wellknown.CapacityTypeOnDemand, Available: available}
	}
	claim := func(typ, zone, capacityType string) *karpv1.NodeClaim {
		return launchedClaim(map[string]string{
			wellknown.LabelInstanceType: typ, wellknown.LabelTopologyZone: zone, wellknown.LabelCapacityType: capacityType,
		}, nil)
	}
	types := []*packer.InstanceType{
		offered("m6i.large", od("us-east-1a", true), od("us-east-1b", false)),
		offered("c6i.large"),
	}
	for _, tc := range []struct {
		name string
		nc   *karpv1.NodeClaim
		want string // a part of the message; empty for no drift
	}{
		{"offered", claim("m6i.large", "us-east-1a", wellknown.CapacityTypeOnDemand), ""},
		{"short of capacity is not drift", claim("m6i.large", "us-east-1b", wellknown.CapacityTypeOnDemand), ""},
		{"reserved falls back to on-demand", claim("m6i.large", "us-east-1a", wellknown.CapacityTypeReserved), ""},
		{"not launched", launchedClaim(nil, nil), ""},
		{"type gone", claim("r6i.large", "us-east-1a", wellknown.CapacityTypeOnDemand), "instance type r6i.large is no longer offered to NodePool general"},
		{"zone gone", claim("m6i.large", "us-east-1c", wellknown.CapacityTypeOnDemand), "no longer offered as on-demand in us-east-1c"},
		{"capacity type gone", claim("m6i.large", "us-east-1a", wellknown.CapacityTypeSpot), "no longer offered as spot in us-east-1a"},
		{"no offerings left", claim("c6i.large", "us-east-1a", wellknown.CapacityTypeOnDemand), "c6i.large is no longer offered as on-demand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := InstanceTypeDrift(tc.nc, "general", types)
			if tc.want == "" {
				if d.Drifted() {
					t.Fatalf("drifted: %+v", d)
				}
				return
			}
			if d.Reason != ReasonInstanceTypeNotFound || !strings.Contains(d.Message, tc.want) {
				t.Errorf("got %+v, want %s with %q", d, ReasonInstanceTypeNotFound, tc.want)
			}
		})
	}
}
