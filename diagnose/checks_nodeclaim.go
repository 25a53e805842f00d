package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// reasonLaunching is the Launched condition's reason while the launch is
// under way (package controllers/nodeclaim/lifecycle).
const reasonLaunching = "Launching"

func age(now, since time.Time) string { return now.Sub(since).Round(time.Second).String() }

// launchFix says what to do about a failed launch, from its message.
func launchFix(reason, message string) string {
	m := strings.ToLower(message)
	switch {
	case strings.Contains(m, "iam:passrole"):
		return "allow iam:PassRole on the node role, with the condition iam:PassedToService=ec2.amazonaws.com, in the controller's IAM policy"
	case strings.Contains(m, "insufficientfreeaddressesinsubnet") || strings.Contains(m, "free address"):
		return "the subnets are out of addresses: add subnets tagged for discovery or free addresses (see nodeclass-subnet-ips)"
	case strings.Contains(m, "insufficientinstancecapacity") || reason == "InsufficientCapacity":
		return "capacity is short for every offering: allow more instance types, zones or capacity types"
	case strings.Contains(m, "maxspotinstancecountexceeded") || reason == "SpotQuotaExceeded":
		return "raise the account's spot vCPU quota, or allow on-demand"
	case strings.Contains(m, "unauthorizedoperation") || strings.Contains(m, "not authorized") || reason == "Unauthorized":
		return "add the action the message names to the controller's IAM policy"
	case reason == "NodeClassNotReady":
		return "make the EC2NodeClass Ready (see nodeclass-conditions)"
	}
	return "kubectl describe nodeclaim shows the event; fix what the message names"
}

func nodeClaims(snap state.Snapshot) []*state.StateNode {
	var out []*state.StateNode
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil && n.NodeClaim.DeletionTimestamp.IsZero() {
			out = append(out, n)
		}
	}
	return out
}

func checkNodeClaimLaunch(_ context.Context, w *World) []Result {
	now := w.now()
	var out []Result
	launched, launching := 0, 0
	for _, n := range nodeClaims(w.Snapshot) {
		nc := n.NodeClaim
		obj := "NodeClaim " + nc.Name
		c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
		switch {
		case c != nil && c.Status == metav1.ConditionTrue:
			launched++
		case c == nil:
			if now.Sub(nc.CreationTimestamp.Time) > w.Thresholds.Launch {
				out = append(out, Result{Status: Warn, Object: obj, Evidence: fmt.Sprintf("created %s ago and no launch has been attempted (no Launched condition)", age(now, nc.CreationTimestamp.Time)),
					Fix: "check that the controller is running and is the leader (kubectl logs of the stevedore deployment)"})
			} else {
				launching++
			}
		case c.Reason == reasonLaunching && c.Status == metav1.ConditionUnknown:
			if now.Sub(c.LastTransitionTime.Time) > w.Thresholds.Launch {
				out = append(out, Result{Status: Warn, Object: obj, Evidence: fmt.Sprintf("launching for %s", age(now, c.LastTransitionTime.Time)),
					Fix: "check the controller's log for the CreateFleet call of this NodeClaim"})
			} else {
				launching++
			}
		default:
			out = append(out, Result{Status: Fail, Object: obj,
				Evidence: fmt.Sprintf("not launched after %s: Launched is %s (%s): %s", age(now, c.LastTransitionTime.Time), c.Status, c.Reason, c.Message),
				Fix:      launchFix(c.Reason, c.Message)})
		}
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("%d NodeClaim(s) launched, %d launching", launched, launching)})
	}
	return out
}

func checkNodeClaimRegistration(ctx context.Context, w *World) []Result {
	now := w.now()
	var out []Result
	registered, waiting := 0, 0
	for _, n := range nodeClaims(w.Snapshot) {
		nc := n.NodeClaim
		launched := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
		if launched == nil || launched.Status != metav1.ConditionTrue {
			continue
		}
		if meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered) || n.Node != nil {
			registered++
			continue
		}
		if now.Sub(launched.LastTransitionTime.Time) <= w.Thresholds.Registration {
			waiting++
			continue
		}
		out = append(out, w.unregistered(ctx, n, launched.LastTransitionTime.Time))
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("%d NodeClaim(s) registered, %d registering within %s of launch", registered, waiting, w.Thresholds.Registration)})
	}
	return out
}

// unregistered gathers why a launched instance has not joined: the
// instance's state, whether its role may join, and its subnet's addresses.
func (w *World) unregistered(ctx context.Context, n *state.StateNode, launchedAt time.Time) Result {
	nc := n.NodeClaim
	now := w.now()
	res := Result{Status: Fail, Object: "NodeClaim " + nc.Name}
	evidence := []string{fmt.Sprintf("launched %s ago and not registered", age(now, launchedAt))}
	var fixes []string

	id := instanceID(nc.Status.ProviderID)
	var subnetID string
	if id == "" {
		evidence = append(evidence, "no instance ID in its providerID "+nc.Status.ProviderID)
	} else if inst, why := w.describeInstance(ctx, id); inst == nil {
		evidence = append(evidence, "instance "+id+": "+why)
	} else {
		st := ""
		if inst.State != nil {
			st = string(inst.State.Name)
		}
		desc := fmt.Sprintf("instance %s is %s", id, st)
		if inst.StateReason != nil && aws.ToString(inst.StateReason.Message) != "" {
			desc += " (" + aws.ToString(inst.StateReason.Message) + ")"
		}
		evidence = append(evidence, desc)
		if st != "running" && st != "pending" {
			fixes = append(fixes, "the instance is "+st+": look at its state reason; stevedore replaces the NodeClaim after its registration timeout")
		}
		subnetID = aws.ToString(inst.SubnetId)
	}

	if role := w.nodeRole(nc); role != "" {
		st, ev, fix := w.nodeRoleAccess(ctx, role).verdict(w.Settings.ClusterName)
		evidence = append(evidence, ev)
		if st != Pass {
			fixes = append(fixes, fix)
		}
	}
	if subnetID != "" {
		if subnets, err := w.subnetFreeIPs(ctx, []string{subnetID}); err == nil {
			if s, ok := subnets[subnetID]; ok {
				free := aws.ToInt32(s.AvailableIpAddressCount)
				evidence = append(evidence, fmt.Sprintf("subnet %s has %d free address(es)", subnetID, free))
				if int(free) < w.Thresholds.LowFreeIPs {
					fixes = append(fixes, "the subnet is nearly full: pods (and the node's own ENIs) cannot get addresses")
				}
			}
		}
	}
	if len(fixes) == 0 {
		fixes = append(fixes, "read the kubelet's log on the instance (aws ssm start-session; journalctl -u kubelet | grep -i 'unauthorized\\|forbidden'): the security groups must let it reach the API server, and its user data must be intact")
	}
	res.Evidence = strings.Join(evidence, "; ")
	res.Fix = strings.Join(fixes, "; ")
	return res
}

// nodeRole is the IAM role of the NodeClaim's EC2NodeClass, "" when it uses
// an instance profile or the class is gone.
func (w *World) nodeRole(nc *karpv1.NodeClaim) string {
	ref := nc.Spec.NodeClassRef
	if ref == nil {
		return ""
	}
	for _, c := range w.Snapshot.NodeClasses {
		if c.Name == ref.Name {
			return c.Spec.Role
		}
	}
	return ""
}

// ephemeralTaints are the taints every new node carries for a while; they
// go by themselves unless something is wrong.
var ephemeralTaints = []string{
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	wellknown.TaintKeyUninitialized,
	wellknown.UnregisteredTaint().Key,
}

func checkNodeClaimInitialization(_ context.Context, w *World) []Result {
	now := w.now()
	var out []Result
	initialized, waiting := 0, 0
	for _, n := range nodeClaims(w.Snapshot) {
		nc := n.NodeClaim
		if n.Node == nil {
			continue
		}
		if n.Initialized() {
			initialized++
			continue
		}
		reg := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
		since := n.Node.CreationTimestamp.Time
		if reg != nil && reg.Status == metav1.ConditionTrue {
			since = reg.LastTransitionTime.Time
		}
		if now.Sub(since) <= w.Thresholds.Initialization {
			waiting++
			continue
		}
		evidence := []string{fmt.Sprintf("registered %s ago as node %s and not initialized", age(now, since), n.Node.Name)}
		if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized); c != nil && c.Message != "" {
			evidence = append(evidence, fmt.Sprintf("Initialized is %s (%s): %s", c.Status, c.Reason, c.Message))
		}
		var fixes []string
		for _, c := range n.Node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				evidence = append(evidence, fmt.Sprintf("the node is NotReady (Ready %s, %s: %s)", c.Status, c.Reason, c.Message))
				fixes = append(fixes, "a node stays NotReady when the kubelet or the CNI does not come up: kubectl describe node "+n.Node.Name+", and the aws-node pod on it")
			}
		}
		var startup, stuck []string
		for _, t := range n.Node.Spec.Taints {
			switch {
			case slices.ContainsFunc(nc.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) }):
				startup = append(startup, t.ToString())
			case slices.Contains(ephemeralTaints, t.Key):
				stuck = append(stuck, t.ToString())
			}
		}
		if len(startup) > 0 {
			evidence = append(evidence, "startup taints still on the node: "+strings.Join(startup, ", "))
			fixes = append(fixes, "startup taints are removed by the agent they wait for (a CNI, a storage or GPU driver DaemonSet): check that it runs on the node and tolerates the taint")
		}
		if len(stuck) > 0 {
			evidence = append(evidence, "taints still on the node: "+strings.Join(stuck, ", "))
		}
		if len(fixes) == 0 {
			fixes = append(fixes, "kubectl describe node "+n.Node.Name+": extended resources the instance type promises (GPUs) must be registered by their device plugin")
		}
		out = append(out, Result{Status: Fail, Object: "NodeClaim " + nc.Name, Evidence: strings.Join(evidence, "; "), Fix: strings.Join(fixes, "; ")})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("%d node(s) initialized, %d initializing within %s of registering", initialized, waiting, w.Thresholds.Initialization)})
	}
	return out
}
