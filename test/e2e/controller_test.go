//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	simkubelet "github.com/stevedore-autoscaler/stevedore/sim/kubelet"
)

// The tests below run the stevedore binary as a controller against the
// cluster, with a simulated AWS account. Only one controller (or one set of
// replicas electing a leader) may run at a time: a controller acts on every
// NodePool it sees. TestController runs the tests that can share one
// controller in parallel, each on its own namespace, NodePool and
// EC2NodeClass; the tests that need a controller of their own (leader
// election, the scale-out measurement) run after it, one at a time. Go runs
// the suite's other, parallel tests (which create Nodes by hand) once these
// sequential ones have finished.

// sharedAccount is the account of TestController's controller.
var sharedAccount = accountSpec{Cluster: "e2e", Region: "us-west-2", Seed: 11}

// TestController runs one controller with a served account (the test needs
// the account at hand to interrupt spot instances) and, against it, the
// tests that share it.
func TestController(t *testing.T) {
	acc := serveAccount(t, sharedAccount)
	// CapacityBuffer is on for the buffers test; without buffers the gate
	// changes nothing for the others.
	startController(t, controllerOptions{name: "stevedore", account: acc.URL, featureGates: "CapacityBuffer=true"})
	t.Run("group", func(t *testing.T) {
		t.Run("CapacityBuffer", func(t *testing.T) { t.Parallel(); testCapacityBuffer(t) })
		t.Run("UpgradeSeed", func(t *testing.T) { t.Parallel(); testUpgradeSeed(t) })
		t.Run("NodeClassNotReady", func(t *testing.T) { t.Parallel(); testNodeClassNotReady(t) })
		t.Run("DurationTooLong", func(t *testing.T) { t.Parallel(); testDurationTooLong(t) })
		t.Run("DoNotDisruptAndPDB", func(t *testing.T) { t.Parallel(); testDoNotDisruptAndPDB(t) })
		t.Run("SpotInterruption", func(t *testing.T) { t.Parallel(); testSpotInterruption(t, acc) })
		t.Run("LimitRangeDefault", func(t *testing.T) {
			t.Parallel()
			testLimitRangeDaemonSet(t, "    default: {cpu: \"2\", memory: 1Gi}")
		})
		t.Run("LimitRangeDefaultRequest", func(t *testing.T) {
			t.Parallel()
			testLimitRangeDaemonSet(t, "    defaultRequest: {cpu: \"2\", memory: 1Gi}")
		})
	})
	// The one controller call the simulator never makes, made here under
	// Karpenter's policy (serveAccount checks that nothing was refused).
	if n := acc.AWS.Calls("DescribeCluster"); n == 0 {
		t.Error("the controller never called eks:DescribeCluster at start-up")
	}
}

// testUpgradeSeed is the upgrade walkthrough (examples/drift-upgrade): the
// checkout Deployment grows from 1 to 10 replicas and the pool with it; the
// EC2NodeClass then moves to a new AMI, which drifts every node, and the
// Drifted budget of 1 replaces them one at a time while kube-scheduler moves
// the pods to the new nodes. The PodDisruptionBudget (maxUnavailable 1) holds
// throughout: at least 9 of the 10 pods are Ready at every moment the test
// looks, and never more than one old node is being disrupted.
func testUpgradeSeed(t *testing.T) {
	ctx := t.Context()
	pool := "upgrade-" + suffix()
	createPool(t, poolSpec{
		Name: pool, Cluster: sharedAccount.Cluster,
		Template: "      taints: [{key: dedicated, value: CheckoutApp, effect: NoSchedule}]",
		// Only drift disrupts here (empty nodes go after 30s), so that every
		// node replaced is a drift replacement.
		Disruption: `    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
    budgets:
      - {nodes: "1", reasons: [Drifted]}
      - {nodes: "100%", reasons: [Empty, Underutilized]}`,
	})
	ns := newNamespace(t, "checkout")
	create(t, workloadYAML, workloadSpec{
		Name: "checkout", Namespace: ns, Pool: pool, Replicas: 1, CPU: "250m", Memory: "512Mi",
		Extra: "      tolerations: [{key: dedicated, value: CheckoutApp, effect: NoSchedule}]",
	})
	create(t, `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: checkout, namespace: {{.}}}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: checkout}}
`, ns)

	waitRunning(t, 2*time.Minute, ns, "checkout", 1)
	first, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := scale(ctx, ns, "checkout", 10); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, 2*time.Minute, ns, "checkout", 10)
	var grown poolState
	eventually(t, time.Minute, "the pool grew", func(ctx context.Context) error {
		if grown, err = readPool(ctx, pool); err != nil {
			return err
		}
		if n := len(grown.initialized()); n <= len(first.initialized()) {
			return fmt.Errorf("%d initialized NodeClaims, as many as for 1 replica", n)
		}
		return nil
	})
	oldNodes := grown.nodeNames()
	t.Logf("10 replicas on %d nodes: %v", len(oldNodes), oldNodes)
	waitForBudget(t, ns, "checkout", 10, 1)

	// From here on, poll: Ready pods never below the budget's minimum,
	// never more than one old node disrupted at once.
	mon := monitor(t, 250*time.Millisecond, func(ctx context.Context, m *observation) error {
		ps, err := pods(ctx, ns, "checkout")
		if err != nil {
			return err
		}
		ready := 0
		for i := range ps {
			if isPodReady(&ps[i]) {
				ready++
			}
		}
		m.min("ready checkout pods", ready)
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		busy := 0
		for i := range s.nodes {
			if slices.Contains(oldNodes, s.nodes[i].Name) && s.draining(&s.nodes[i]) {
				busy++
			}
		}
		m.max("old nodes draining at once", busy)
		return nil
	})

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"amiSelectorTerms":[{"id":"`+amiNew+`"}]}}`))
	if err := kube.Patch(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, patch); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	eventually(t, 6*time.Minute, "every old node replaced by one on the new AMI", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		var left []string
		for i, n := range s.nodes {
			if slices.Contains(oldNodes, n.Name) && !s.gone(&s.nodes[i]) {
				left = append(left, n.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("old nodes left: %v", left)
		}
		for _, nc := range s.claims {
			if nc.DeletionTimestamp == nil && nc.Status.ImageID != amiNew {
				return fmt.Errorf("NodeClaim %s runs image %q", nc.Name, nc.Status.ImageID)
			}
		}
		return nil
	})
	final := waitRunning(t, 2*time.Minute, ns, "checkout", 10)
	obs := mon.stop()
	t.Logf("rollout of %d nodes took %s; %s", len(oldNodes), time.Since(started).Round(time.Second), obs)
	if f := obs.failures(); f != "" {
		t.Logf("monitor checks that failed (not counted): %s", f)
	}

	// kube-scheduler placed the pods on the new nodes.
	s, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	newNodes := s.nodeNames()
	eventually(t, 30*time.Second, "Scheduled events from default-scheduler", func(ctx context.Context) error {
		for _, p := range final {
			if !slices.Contains(newNodes, p.Spec.NodeName) {
				return fmt.Errorf("pod %s is on %s, not on a new node %v", p.Name, p.Spec.NodeName, newNodes)
			}
			if err := scheduledByScheduler(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
	if got := obs.mins["ready checkout pods"]; got < 9 {
		t.Errorf("Ready checkout pods fell to %d during the rollout; the budget keeps at least 9", got)
	}
	if got := obs.maxs["old nodes draining at once"]; got > 1 {
		t.Errorf("%d old nodes were drained at once; the Drifted budget allows 1", got)
	}
	if obs.maxs["old nodes draining at once"] == 0 {
		t.Error("the monitor never saw an old node being drained")
	}
}

// testNodeClassNotReady: an EC2NodeClass whose subnet selector matches no
// subnet (the subnets are not tagged for it) is not Ready; nothing is
// launched, the NodePool's status says why, and the pods stay Pending with
// an event from stevedore. Tagging fixes it: the selector is corrected and
// the pods run.
// testDurationTooLong stores a NodePool whose terminationGracePeriod is
// longer than any duration (the API's pattern takes any number of hours).
// Before, the controller's informer could not decode it, and so could list
// no NodePool at all; now that one NodePool is refused by name, with its
// field, the bound and the fix, and the next NodePool launches nodes.
func testDurationTooLong(t *testing.T) {
	bad := "toolong-" + suffix()
	createPool(t, poolSpec{Name: bad, Cluster: sharedAccount.Cluster, Template: "      terminationGracePeriod: 9999999999h"})
	eventually(t, time.Minute, "the NodePool is refused for its duration", func(ctx context.Context) error {
		np := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: bad}, np); err != nil {
			return err
		}
		c := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeValidationSucceeded)
		if c == nil || c.Status != metav1.ConditionFalse ||
			!strings.Contains(c.Message, "spec.template.spec.terminationGracePeriod") || !strings.Contains(c.Message, "2562047h") {
			return fmt.Errorf("ValidationSucceeded condition %+v", c)
		}
		t.Logf("NodePool ValidationSucceeded=False: %s", c.Message)
		return nil
	})
	good := "fine-" + suffix()
	createPool(t, poolSpec{Name: good, Cluster: sharedAccount.Cluster})
	ns := newNamespace(t, "toolong")
	create(t, workloadYAML, workloadSpec{Name: "web", Namespace: ns, Pool: good, Replicas: 2, CPU: "500m", Memory: "1Gi"})
	waitRunning(t, 2*time.Minute, ns, "web", 2)
}

func testNodeClassNotReady(t *testing.T) {
	ctx := t.Context()
	pool := "notready-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: sharedAccount.Cluster, Discovery: "untagged-" + pool})
	ns := newNamespace(t, "notready")
	create(t, workloadYAML, workloadSpec{Name: "web", Namespace: ns, Pool: pool, Replicas: 2, CPU: "500m", Memory: "1Gi"})

	eventually(t, time.Minute, "EC2NodeClass not Ready", func(ctx context.Context) error {
		nc := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, client.ObjectKey{Name: pool}, nc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != nc.Generation {
			return fmt.Errorf("Ready condition %+v", c)
		}
		t.Logf("EC2NodeClass Ready=False: %s: %s", c.Reason, c.Message)
		return nil
	})
	eventually(t, time.Minute, "NodePool status says why", func(ctx context.Context) error {
		np := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return err
		}
		c := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeClassReady)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(strings.ToLower(c.Message), "subnet") {
			return fmt.Errorf("NodeClassReady condition %+v", c)
		}
		if meta.IsStatusConditionTrue(np.Status.Conditions, karpv1.ConditionTypeReady) {
			return errors.New("NodePool Ready")
		}
		t.Logf("NodePool NodeClassReady=False: %s: %s", c.Reason, c.Message)
		return nil
	})
	eventually(t, time.Minute, "the NodePool has a NodeClassNotReady event", func(ctx context.Context) error {
		evs, err := events(ctx, pool, "NodeClassNotReady")
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.InvolvedObject.Kind == "NodePool" && strings.Contains(e.Message, "subnet") {
				t.Logf("NodePool event: %s", e.Message)
				return nil
			}
		}
		return fmt.Errorf("events %v", evs)
	})
	eventually(t, time.Minute, "pending pods have an event from stevedore", func(ctx context.Context) error {
		ps, err := pods(ctx, ns, "web")
		if err != nil {
			return err
		}
		if len(ps) != 2 {
			return fmt.Errorf("%d pods", len(ps))
		}
		for _, p := range ps {
			if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
				return fmt.Errorf("pod %s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
			evs, err := events(ctx, p.Name, "FailedScheduling")
			if err != nil {
				return err
			}
			i := slices.IndexFunc(evs, func(e corev1.Event) bool {
				return e.ReportingController == "karpenter" || e.Source.Component == "karpenter"
			})
			if i < 0 {
				return fmt.Errorf("pod %s: no FailedScheduling event from stevedore (source karpenter): %d from others", p.Name, len(evs))
			}
			// The pod's event names the NodePool left out and why.
			if want := "nodepool " + pool + ": left out: "; !strings.Contains(evs[i].Message, want) || !strings.Contains(evs[i].Message, "NodeClassNotReady") {
				return fmt.Errorf("pod %s: FailedScheduling %q does not say %q", p.Name, evs[i].Message, want)
			}
			t.Logf("pod %s: %s", p.Name, evs[i].Message)
		}
		return nil
	})
	// Still nothing launched a while later.
	time.Sleep(5 * time.Second)
	if s, err := readPool(ctx, pool); err != nil || len(s.claims) != 0 {
		t.Fatalf("NodeClaims for a pool whose node class is not Ready: %d (%v)", len(s.claims), err)
	}

	// The fix: select the subnets by the cluster's discovery tag.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"`+sharedAccount.Cluster+`"}}]}}`))
	if err := kube.Patch(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, patch); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, 2*time.Minute, ns, "web", 2)
}

// testDoNotDisruptAndPDB: two pods that keep their nodes from graceful
// disruption, one with karpenter.sh/do-not-disrupt and one whose
// PodDisruptionBudget allows no disruption, each on its own node (they
// repel each other). Once filler pods are gone the nodes are underutilized:
// consolidation reports them blocked (DisruptionBlocked, with the codes
// DoNotDisruptPod and PDBBlocked) and leaves them. Expiration is forceful:
// at expireAfter both NodeClaims are deleted anyway, the drain waits for the
// two pods until the NodeClaims' terminationGracePeriod, and the pods run
// again on new nodes.
func testDoNotDisruptAndPDB(t *testing.T) {
	ctx := t.Context()
	pool := "protected-" + suffix()
	const expireAfter = 75 * time.Second
	createPool(t, poolSpec{
		Name: pool, Cluster: sharedAccount.Cluster,
		Template: fmt.Sprintf("      expireAfter: %s\n      terminationGracePeriod: 15s", expireAfter),
		Disruption: `    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]`,
	})
	ns := newNamespace(t, "protected")
	apart := `      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {group: protected}}}`
	create(t, workloadYAML, workloadSpec{
		Name: "pinned", Namespace: ns, Pool: pool, Replicas: 1, CPU: "500m", Memory: "512Mi", Group: "protected",
		Annotations: `        karpenter.sh/do-not-disrupt: "true"`, Extra: apart,
	})
	create(t, workloadYAML, workloadSpec{
		Name: "budgeted", Namespace: ns, Pool: pool, Replicas: 1, CPU: "500m", Memory: "512Mi", Group: "protected", Extra: apart,
	})
	create(t, `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: budgeted, namespace: {{.}}}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: budgeted}}
`, ns)
	// Fillers make the nodes bigger than the protected pods need.
	create(t, workloadYAML, workloadSpec{Name: "filler", Namespace: ns, Pool: pool, Replicas: 4, CPU: "1", Memory: "2Gi"})

	pinned := waitRunning(t, 2*time.Minute, ns, "pinned", 1)[0]
	budgeted := waitRunning(t, 2*time.Minute, ns, "budgeted", 1)[0]
	waitRunning(t, 2*time.Minute, ns, "filler", 4)
	if pinned.Spec.NodeName == budgeted.Spec.NodeName {
		t.Fatalf("both protected pods on %s", pinned.Spec.NodeName)
	}
	waitForBudget(t, ns, "budgeted", 1, 0)
	claimOf := map[string]string{}
	s, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range s.claims {
		claimOf[nc.Status.NodeName] = nc.Name
	}
	// The codes of the decisions, as the events quote them.
	protected := map[string]string{pinned.Spec.NodeName: "DoNotDisruptPod", budgeted.Spec.NodeName: "PDBBlocked"}
	created := map[string]time.Time{}
	for _, nc := range s.claims {
		created[nc.Name] = nc.CreationTimestamp.Time
	}

	if err := scale(ctx, ns, "filler", 0); err != nil {
		t.Fatal(err)
	}
	for node, code := range protected {
		claim := claimOf[node]
		eventually(t, time.Minute, fmt.Sprintf("DisruptionBlocked %s on NodeClaim %s", code, claim), func(ctx context.Context) error {
			evs, err := events(ctx, claim, "DisruptionBlocked")
			if err != nil {
				return err
			}
			for _, e := range evs {
				if strings.Contains(e.Message, "("+code+")") {
					t.Logf("%s: %s", claim, e.Message)
					return nil
				}
			}
			return fmt.Errorf("events %v", evs)
		})
	}
	// Blocked is blocked: some time later, before expiry, both still run
	// untouched.
	time.Sleep(10 * time.Second)
	s, err = readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for node := range protected {
		i := slices.IndexFunc(s.nodes, func(n corev1.Node) bool { return n.Name == node })
		switch {
		case i < 0:
			t.Fatalf("node %s disrupted before it expired", node)
		case disrupted(&s.nodes[i]):
			if time.Since(created[claimOf[node]]) < expireAfter {
				t.Fatalf("node %s disrupted before it expired: taints %v", node, s.nodes[i].Spec.Taints)
			}
		}
	}

	// Expiration goes ahead regardless: both NodeClaims are deleted, and
	// the drain takes the protected pods once the terminationGracePeriod
	// has run out.
	for node := range protected {
		claim := claimOf[node]
		eventually(t, expireAfter+time.Minute, "NodeClaim "+claim+" expired", func(ctx context.Context) error {
			nc := &karpv1.NodeClaim{}
			err := kube.Get(ctx, client.ObjectKey{Name: claim}, nc)
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err == nil && nc.DeletionTimestamp == nil {
				return errors.New("not deleted")
			}
			evs, err := events(ctx, claim, "Expired")
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				return errors.New("deleted without an Expired event")
			}
			t.Logf("%s: %s", claim, evs[0].Message)
			return nil
		})
	}
	for _, app := range []string{"pinned", "budgeted"} {
		eventually(t, 2*time.Minute, app+" Running on a new node", func(ctx context.Context) error {
			ps, err := pods(ctx, ns, app)
			if err != nil {
				return err
			}
			if len(ps) != 1 || !isPodReady(&ps[0]) {
				return fmt.Errorf("%d pods", len(ps))
			}
			if _, old := protected[ps[0].Spec.NodeName]; old {
				return fmt.Errorf("still on the expired node %s", ps[0].Spec.NodeName)
			}
			return nil
		})
	}
}

// testSpotInterruption: a spot instance gets EC2's two-minute interruption
// warning. stevedore reads it from the queue, launches a replacement, drains
// the node and terminates the instance itself, all before EC2 would have
// reclaimed it; the pods run on the new node.
func testSpotInterruption(t *testing.T, acc *servedAccount) {
	ctx := t.Context()
	pool := "spot-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: sharedAccount.Cluster, CapacityType: wellknown.CapacityTypeSpot})
	ns := newNamespace(t, "spot")
	create(t, workloadYAML, workloadSpec{Name: "batch", Namespace: ns, Pool: pool, Replicas: 3, CPU: "500m", Memory: "1Gi"})
	before := waitRunning(t, 2*time.Minute, ns, "batch", 3)

	var victim *karpv1.NodeClaim
	eventually(t, time.Minute, "a spot NodeClaim", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		for i, nc := range s.claims {
			if nc.Status.NodeName == before[0].Spec.NodeName {
				victim = &s.claims[i]
				return nil
			}
		}
		return fmt.Errorf("no NodeClaim for node %s", before[0].Spec.NodeName)
	})
	id := simkubelet.InstanceID(victim.Status.ProviderID)
	if info, ok := acc.AWS.Instance(id); !ok || info.CapacityType != wellknown.CapacityTypeSpot {
		t.Fatalf("instance %s of NodeClaim %s: %+v", id, victim.Name, info)
	}
	node := victim.Status.NodeName
	var onVictim []string
	for _, p := range before {
		if p.Spec.NodeName == node {
			onVictim = append(onVictim, p.Name)
		}
	}

	interrupted := time.Now()
	if err := acc.AWS.InterruptSpotInstance(acc.InterruptionQueue, id); err != nil {
		t.Fatal(err)
	}
	reclaim := interrupted.Add(fake.SpotInterruptionNotice)
	t.Logf("interrupted instance %s (node %s, pods %v); EC2 reclaims it at %s", id, node, onVictim, reclaim.Format(time.TimeOnly))

	// The controller drains and terminates it before EC2 would.
	var drained, terminated time.Time
	eventually(t, fake.SpotInterruptionNotice, "pods drained and the instance terminated by stevedore", func(ctx context.Context) error {
		if drained.IsZero() {
			ps, err := pods(ctx, ns, "batch")
			if err != nil {
				return err
			}
			left := slices.ContainsFunc(ps, func(p corev1.Pod) bool { return slices.Contains(onVictim, p.Name) })
			if left {
				return errors.New("pods still on the interrupted node")
			}
			drained = time.Now()
		}
		info, ok := acc.AWS.Instance(id)
		if ok && (info.State == fake.StatePending || info.State == fake.StateRunning) {
			return fmt.Errorf("instance %s %s", id, info.State)
		}
		terminated = time.Now()
		return nil
	})
	if !terminated.Before(reclaim) {
		t.Errorf("instance terminated at %s, not before EC2 reclaimed it at %s", terminated, reclaim)
	}
	after := waitRunning(t, 2*time.Minute, ns, "batch", 3)
	for _, p := range after {
		if p.Spec.NodeName == node {
			t.Errorf("pod %s still on the interrupted node", p.Name)
		}
	}
	evs, err := events(ctx, victim.Name, "")
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs {
		reasons = append(reasons, e.Reason)
	}
	t.Logf("drained %s and terminated %s after the warning (EC2 would at %s); NodeClaim events %v",
		drained.Sub(interrupted).Round(100*time.Millisecond), terminated.Sub(interrupted).Round(100*time.Millisecond), fake.SpotInterruptionNotice, reasons)
	eventually(t, time.Minute, "no leaked instance", func(ctx context.Context) error {
		return checkNoLeaks(ctx, acc.AWS, sharedAccount.Cluster, pool)
	})
}

// scale sets a Deployment's replicas.
func scale(ctx context.Context, ns, name string, replicas int) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
	return kube.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch)
}

// observation is what a monitor saw: the least and the most of each
// quantity, and the errors of its checks.
type observation struct {
	mu     sync.Mutex
	mins   map[string]int
	maxs   map[string]int
	checks int
	errs   []string
}

func (o *observation) min(what string, v int) {
	if cur, ok := o.mins[what]; !ok || v < cur {
		o.mins[what] = v
	}
}

func (o *observation) max(what string, v int) {
	if cur, ok := o.maxs[what]; !ok || v > cur {
		o.maxs[what] = v
	}
}

// merge adds one look's figures and error to o.
func (o *observation) merge(look *observation, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for what, v := range look.mins {
		o.min(what, v)
	}
	for what, v := range look.maxs {
		o.max(what, v)
	}
	o.checks++
	if err != nil {
		o.errs = append(o.errs, err.Error())
	}
}

func (o *observation) String() string {
	return fmt.Sprintf("%d looks: min %v, max %v", o.checks, o.mins, o.maxs)
}

type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	obs    *observation
}

// monitor calls check every interval until stop.
func monitor(t *testing.T, interval time.Duration, check func(ctx context.Context, o *observation) error) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{}), obs: &observation{mins: map[string]int{}, maxs: map[string]int{}}}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			// A look records into its own observation, merged only when
			// the monitor was not stopped during it: a look cut short by
			// stop sees its API calls fail with a cancelled context, which
			// says nothing about the cluster.
			look := &observation{mins: map[string]int{}, maxs: map[string]int{}}
			err := check(ctx, look)
			if ctx.Err() == nil {
				r.obs.merge(look, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *running) stop() *observation {
	r.cancel()
	<-r.done
	return r.obs
}

// failures returns the monitor's failed checks, at most the first few.
func (o *observation) failures() string {
	if len(o.errs) > 3 {
		return fmt.Sprintf("%s (and %d more)", strings.Join(o.errs[:3], "; "), len(o.errs)-3)
	}
	return strings.Join(o.errs, "; ")
}
