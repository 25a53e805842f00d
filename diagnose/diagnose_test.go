package diagnose

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// TestHealthyWorld runs every check on a correctly set-up cluster: all pass.
func TestHealthyWorld(t *testing.T) {
	e := newEnv(t)
	w := e.world()
	if len(w.Notes) != 0 {
		t.Errorf("notes: %v", w.Notes)
	}
	r := Run(ctx, w, Checks())
	for _, res := range r.Results {
		if res.Status != Pass {
			t.Errorf("%s: %s, want %s: %s %s | fix: %s", res.ID, res.Status, Pass, res.Object, res.Evidence, res.Fix)
		}
	}
	if r.Failed() {
		t.Error("report failed")
	}
	if r.Checks != len(Checks()) {
		t.Errorf("%d checks ran", r.Checks)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text.String(), "\n"); n < len(Checks()) {
		t.Errorf("text has %d lines for %d checks:\n%s", n, len(Checks()), text.String())
	}
	t.Logf("\n%s", text.String())
}

func TestPendingPods(t *testing.T) {
	t.Run("fits nowhere", func(t *testing.T) {
		e := newEnv(t)
		e.pod("huge-1", "", "100", "1Gi")
		e.pod("huge-2", "", "100", "1Gi")
		r := expect(t, e.run("pending-pods"), Fail, "default/huge-1, default/huge-2", "NoInstanceTypeFits")
		if !strings.Contains(r.Fix, "lower the pod's requests") {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("no NodePool may launch", func(t *testing.T) {
		e := newEnv(t)
		e.aws.RemoveAccessEntry(cluster, e.cw.NodeRoleARN) // irrelevant here
		e.nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: "other"}}}
		})
		e.pod("web-2", "", "3", "1Gi")
		expect(t, e.run("pending-pods"), Fail, "default/web-2", "left out (NodeClassNotReady)", "nodepool-ready")
	})
	t.Run("placeable but waiting long", func(t *testing.T) {
		e := newEnv(t)
		e.pod("web-2", "", "3", "1Gi", func(p *corev1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-20 * time.Minute))
		})
		expect(t, e.run("pending-pods"), Warn, "default/web-2", "pending for up to 20m0s", "NodePool default")
	})
	t.Run("placeable", func(t *testing.T) {
		e := newEnv(t)
		e.pod("web-2", "", "3", "1Gi")
		expect(t, e.run("pending-pods"), Pass, "1 pending pod(s) can be placed", "1 new NodeClaim")
	})
	// Three families asked for, two (m6i and c6i) offered: the check
	// follows the controller's MIN_VALUES_POLICY.
	threeFamilies := func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements[0] = karpv1.NodeSelectorRequirementWithMinValues{Key: wellknown.LabelInstanceFamily,
			Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i", "c6i", "r6i"}, MinValues: ptr.To(3)}
	}
	t.Run("minValues unmet under Strict", func(t *testing.T) {
		e := newEnv(t)
		e.nodePool("default", threeFamilies)
		e.pod("web-2", "", "3", "1Gi")
		expect(t, e.run("pending-pods"), Fail, "default/web-2", "MinValuesUnsatisfiable")
	})
	t.Run("minValues relaxed under BestEffort", func(t *testing.T) {
		e := newEnv(t)
		e.nodePool("default", threeFamilies)
		ctrl := e.get(&corev1.Pod{}, "stevedore-7d9f8-abcde").(*corev1.Pod)
		ctrl.Spec.Containers[0].Env = append(ctrl.Spec.Containers[0].Env, corev1.EnvVar{Name: "MIN_VALUES_POLICY", Value: "BestEffort"})
		e.pod("web-2", "", "3", "1Gi")
		expect(t, e.run("pending-pods"), Pass, "1 pending pod(s) can be placed", "1 new NodeClaim")
	})
}

func TestNodePoolReady(t *testing.T) {
	e := newEnv(t)
	e.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"team": "x"}}}
	})
	r := expect(t, e.run("nodepool-ready"), Fail, "NodePool default", "NodeClassNotReady")
	if !strings.Contains(r.Fix, "EC2NodeClass default") {
		t.Errorf("fix %q", r.Fix)
	}

	e = newEnv(t)
	e.nodePool("narrow", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"x9.huge"}})
	})
	expect(t, e.run("nodepool-ready"), Fail, "NodePool narrow", "no instance type")
}

func TestNodePoolLimits(t *testing.T) {
	e := newEnv(t)
	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	})
	expect(t, e.run("nodepool-limits"), Warn, "NodePool default", "limit reached for cpu")
}

func TestNodePoolWeights(t *testing.T) {
	e := newEnv(t)
	e.nodePool("general", func(np *karpv1.NodePool) {
		np.Spec.Weight = ptr.To(int32(50))
		np.Spec.Template.Spec.Requirements = np.Spec.Template.Spec.Requirements[1:] // any family
	})
	expect(t, e.run("nodepool-weights"), Warn, "NodePool default", "NodePool general (weight 50) is tried first")

	// With limits the heavier pool is meant to overflow into the other.
	e.nodePool("general", func(np *karpv1.NodePool) {
		np.Spec.Weight = ptr.To(int32(50))
		np.Spec.Template.Spec.Requirements = np.Spec.Template.Spec.Requirements[1:]
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	})
	expect(t, e.run("nodepool-weights"), Pass, "none is shadowed")
}

func TestNodePoolBudgets(t *testing.T) {
	e := newEnv(t)
	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: &karpv1.Duration{Duration: 8 * time.Hour}}}
	})
	expect(t, e.run("nodepool-budgets"), Warn, "NodePool default", "held now: Drifted by budget #0", "2026-03-03T17:00:00Z")

	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%", Schedule: ptr.To("not a cron"), Duration: &karpv1.Duration{Duration: time.Hour}}}
	})
	expect(t, e.run("nodepool-budgets"), Fail, "NodePool default", "cannot be evaluated")
}

func TestNodeClassConditions(t *testing.T) {
	t.Run("subnet tag typo", func(t *testing.T) {
		e := newEnv(t)
		e.nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: "demo-prod"}}}
		})
		r := expect(t, e.run("nodeclass-conditions"), Fail, "EC2NodeClass default", "SubnetsReady is False (SubnetsNotFound)",
			"looked for subnet tags karpenter.sh/discovery=demo-prod", "similar tags found: karpenter.sh/discovery=demo on subnet-")
		if !strings.Contains(r.Fix, "tag the subnets") {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("security group key typo", func(t *testing.T) {
		e := newEnv(t)
		e.nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discover": cluster}}}
		})
		expect(t, e.run("nodeclass-conditions"), Fail, "SecurityGroupsReady is False", "similar tags found: karpenter.sh/discovery=demo on sg-")
	})
	t.Run("nothing similar", func(t *testing.T) {
		e := newEnv(t)
		e.nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"team": "payments"}}}
		})
		expect(t, e.run("nodeclass-conditions"), Fail, "none of the region's 3 subnets carries a similar tag")
	})
	t.Run("iam:PassRole denied", func(t *testing.T) {
		e := newEnv(t)
		e.aws.DenyPassRole(e.cw.NodeRole)
		e.nodeClass()
		r := expect(t, e.run("nodeclass-conditions"), Fail, "ValidationSucceeded is False")
		if !strings.Contains(r.Fix, "iam:PassRole") {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("not reported", func(t *testing.T) {
		e := newEnv(t)
		nc := e.get(&awsv1.EC2NodeClass{}, nodeClass).(*awsv1.EC2NodeClass)
		nc.Status = awsv1.EC2NodeClassStatus{}
		expect(t, e.run("nodeclass-conditions"), Warn, "no status conditions")
	})
}

func TestSubnetIPs(t *testing.T) {
	e := newEnv(t)
	for _, id := range e.cw.SubnetIDs {
		if err := e.aws.SetSubnetAvailableIPs(id, 0); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, e.run("nodeclass-subnet-ips"), Fail, "no subnet has a free address", "InsufficientFreeAddressesInSubnet")

	if err := e.aws.SetSubnetAvailableIPs(e.cw.SubnetIDs[1], 5000); err != nil {
		t.Fatal(err)
	}
	expect(t, e.run("nodeclass-subnet-ips"), Warn, "subnets nearly full", ": 0 free")
}

func TestNodeRoleAccess(t *testing.T) {
	e := newEnv(t)
	e.aws.RemoveAccessEntry(cluster, e.cw.NodeRoleARN)
	r := expect(t, e.run("node-role-access"), Fail, "node role KarpenterNodeRole-demo has no EKS access entry", "no kube-system/aws-auth")
	if !strings.Contains(r.Fix, "aws eks create-access-entry --cluster-name demo --principal-arn "+e.cw.NodeRoleARN+" --type EC2_LINUX") {
		t.Errorf("fix %q", r.Fix)
	}

	// An aws-auth mapping authorizes the role as well.
	e.add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-auth"}, Data: map[string]string{
		"mapRoles": "- rolearn: " + e.cw.NodeRoleARN + "\n  username: system:node:{{EC2PrivateDNSName}}\n  groups:\n    - system:bootstrappers\n    - system:nodes\n"}})
	expect(t, e.run("node-role-access"), Pass, "mapped into system:nodes by kube-system/aws-auth")

	e = newEnv(t)
	e.aws.DenyAction("eks:ListAccessEntries")
	expect(t, e.run("node-role-access"), Warn, "could not check the access entries", "AccessDeniedException")
}

func TestNodeClaimLaunch(t *testing.T) {
	e := newEnv(t)
	nc, _ := e.claim("default", "", 10*time.Minute)
	nc.Name = "default-passrole"
	nc.Status = karpv1.NodeClaimStatus{Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionUnknown, Reason: "Unauthorized",
		LastTransitionTime: metav1.NewTime(now.Add(-9 * time.Minute)),
		Message: "the controller is not allowed iam:PassRole on the node role of instance profile \"demo_1234\", so EC2 refused the launch: " +
			"add iam:PassRole on that role, with the condition iam:PassedToService=ec2.amazonaws.com, to the controller's IAM policy"}}}
	e.add(nc)
	r := expect(t, e.run("nodeclaim-launch"), Fail, "NodeClaim default-passrole", "Launched is Unknown (Unauthorized)", "iam:PassRole")
	if !strings.Contains(r.Fix, "iam:PassedToService=ec2.amazonaws.com") {
		t.Errorf("fix %q", r.Fix)
	}
}

func TestNodeClaimRegistration(t *testing.T) {
	e := newEnv(t)
	pid := e.launch()
	e.aws.RemoveAccessEntry(cluster, e.cw.NodeRoleARN)
	e.nodes++
	nc, _ := e.claim("default", "", 10*time.Minute)
	nc.Status.NodeName = ""
	nc.Status.ProviderID = pid
	nc.Status.Conditions = nc.Status.Conditions[:1]
	e.add(nc)
	r := expect(t, e.run("nodeclaim-registration"), Fail, "NodeClaim "+nc.Name, "launched 10m0s ago and not registered",
		"instance "+instanceID(pid)+" is running", "has no EKS access entry", "free address(es)")
	if !strings.Contains(r.Fix, "create-access-entry") {
		t.Errorf("fix %q", r.Fix)
	}

	// Within the grace period it is only registering.
	nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))
	expect(t, e.run("nodeclaim-registration"), Pass, "1 registering")
}

func TestNodeClaimInitialization(t *testing.T) {
	e := newEnv(t)
	e.nodes++
	nc, n := e.claim("default", "ip-10-0-9-9.ec2.internal", 10*time.Minute)
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	nc.Spec.StartupTaints = []corev1.Taint{startup}
	nc.Status.Conditions[2] = metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionUnknown, Reason: "StartupTaintsPresent",
		Message: "startup taints are still on the node", LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Minute))}
	delete(n.Labels, wellknown.LabelInitialized)
	n.Spec.Taints = []corev1.Taint{startup}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime network not ready: cni plugin not initialized"}}
	e.add(nc)
	e.add(n)
	r := expect(t, e.run("nodeclaim-initialization"), Fail, "NodeClaim "+nc.Name, "startup taints still on the node: example.com/agent-not-ready:NoSchedule",
		"NotReady", "cni plugin not initialized")
	if !strings.Contains(r.Fix, "startup taints are removed by the agent") {
		t.Errorf("fix %q", r.Fix)
	}
}

func TestControllerCredentials(t *testing.T) {
	noIRSA := func(e *env) {
		e.replace(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ctrlNS, Name: ctrlSA}})
	}
	t.Run("no association and nothing resolves", func(t *testing.T) {
		e := newEnv(t)
		noIRSA(e)
		nc := e.get(&awsv1.EC2NodeClass{}, nodeClass).(*awsv1.EC2NodeClass)
		nc.Status = awsv1.EC2NodeClassStatus{}
		r := expect(t, e.run("controller-credentials"), Fail, "ServiceAccount stevedore/stevedore", "neither an EKS Pod Identity association nor an IRSA annotation")
		if !strings.Contains(r.Fix, "aws eks create-pod-identity-association --cluster-name demo --namespace stevedore --service-account stevedore") {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("no association but a Ready node class", func(t *testing.T) {
		e := newEnv(t)
		noIRSA(e)
		expect(t, e.run("controller-credentials"), Warn, "gets credentials another way")
	})
	t.Run("pod identity", func(t *testing.T) {
		e := newEnv(t)
		noIRSA(e)
		id, err := e.aws.AddPodIdentityAssociation(cluster, ctrlNS, ctrlSA, e.aws.AddRole("stevedore-controller"))
		if err != nil {
			t.Fatal(err)
		}
		expect(t, e.run("controller-credentials"), Pass, "EKS Pod Identity association "+id)
	})
	t.Run("not determinable", func(t *testing.T) {
		e := newEnv(t)
		noIRSA(e)
		e.aws.DenyAction("eks:ListPodIdentityAssociations")
		expect(t, e.run("controller-credentials"), Warn, "not checked", "AccessDeniedException")
	})
	t.Run("controller not found", func(t *testing.T) {
		e := newEnv(t)
		e.get(&corev1.Pod{}, "stevedore-7d9f8-abcde").(*corev1.Pod).Labels = nil
		expect(t, e.run("controller-credentials"), Warn, "not checked", "controller's pods were not found")
	})
}

func TestInterruptionQueue(t *testing.T) {
	t.Run("missing queue", func(t *testing.T) {
		e := newEnv(t)
		e.settings.InterruptionQueue = "demo-typo"
		expect(t, e.run("interruption-queue"), Fail, "Queue demo-typo", "does not exist in us-east-1")
	})
	t.Run("no policy", func(t *testing.T) {
		e := newEnv(t)
		if err := e.aws.SetQueuePolicy(e.cw.QueueName, ""); err != nil {
			t.Fatal(err)
		}
		expect(t, e.run("interruption-queue"), Fail, "no access policy")
	})
	t.Run("not configured", func(t *testing.T) {
		e := newEnv(t)
		e.get(&corev1.Pod{}, "stevedore-7d9f8-abcde").(*corev1.Pod).Spec.Containers[0].Env = nil
		e.settings.ClusterName = cluster
		expect(t, e.run("interruption-queue"), Warn, "no interruption queue is configured")
	})
	t.Run("not reachable", func(t *testing.T) {
		e := newEnv(t)
		e.aws.DenyAction("sqs:GetQueueUrl")
		expect(t, e.run("interruption-queue"), Warn, "not checked", "AccessDenied")
	})
}

func TestInterruptionRules(t *testing.T) {
	const queueARN = "arn:aws:sqs:us-east-1:123456789012:demo"
	removeRules := func(t *testing.T, e *env, names ...string) {
		t.Helper()
		for _, n := range names {
			if err := e.aws.RemoveRule(n); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("all present", func(t *testing.T) {
		e := newEnv(t)
		expect(t, e.run("interruption-rules"), Pass, "Queue demo", queueARN,
			"spot interruption warning (demo-spot-interruption)", "rebalance recommendation (demo-rebalance)",
			"instance state change (demo-state-change)", "scheduled change (demo-scheduled-change)",
			"no rule for capacity reservation interruptions")
	})
	t.Run("optional capacity reservation rule", func(t *testing.T) {
		e := newEnv(t)
		if err := e.aws.PutRule(fake.Rule{Name: "demo-capacity-reservation", Targets: []string{queueARN},
			EventPattern: `{"source":["aws.ec2"],"detail-type":["EC2 Capacity Reservation Instance Interruption Warning"]}`}); err != nil {
			t.Fatal(err)
		}
		expect(t, e.run("interruption-rules"), Pass, "capacity reservation interruption (demo-capacity-reservation)")
	})
	t.Run("one removed", func(t *testing.T) {
		e := newEnv(t)
		removeRules(t, e, "demo-rebalance")
		r := expect(t, e.run("interruption-rules"), Warn, "1 of the 4 interruption events",
			"rebalance recommendation: spot nodes at elevated risk are not flagged", "present: spot interruption warning (demo-spot-interruption)")
		if strings.Contains(r.Evidence, "not checked") {
			t.Errorf("evidence %q", r.Evidence)
		}
		want := `aws events put-rule --name demo-rebalance --event-pattern '{"source":["aws.ec2"],"detail-type":["EC2 Instance Rebalance Recommendation"]}' && aws events put-targets --rule demo-rebalance --targets Id=stevedore,Arn=` + queueARN
		if r.Fix != want {
			t.Errorf("fix %q, want %q", r.Fix, want)
		}
	})
	t.Run("one disabled", func(t *testing.T) {
		e := newEnv(t)
		if err := e.aws.SetRuleEnabled("demo-spot-interruption", false); err != nil {
			t.Fatal(err)
		}
		r := expect(t, e.run("interruption-rules"), Warn, "spot interruption warning: reclaimed spot nodes", "demo-spot-interruption matches it but is disabled")
		if r.Fix != "aws events enable-rule --name demo-spot-interruption" {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("catch-all EC2 rule", func(t *testing.T) {
		e := newEnv(t)
		removeRules(t, e, e.cw.InterruptionRules...)
		if err := e.aws.PutRule(fake.Rule{Name: "all-ec2", EventPattern: `{"source":["aws.ec2"]}`, Targets: []string{queueARN}}); err != nil {
			t.Fatal(err)
		}
		r := expect(t, e.run("interruption-rules"), Warn, "1 of the 4", "scheduled change: instances scheduled for retirement",
			"spot interruption warning (all-ec2)", "instance state change (all-ec2)")
		if !strings.Contains(r.Fix, `--event-pattern '{"source":["aws.health"],"detail-type":["AWS Health Event"]}'`) {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("none", func(t *testing.T) {
		e := newEnv(t)
		removeRules(t, e, e.cw.InterruptionRules...)
		r := expect(t, e.run("interruption-rules"), Fail, "no enabled EventBridge rule routes interruption events to "+queueARN)
		for _, rule := range []string{"demo-spot-interruption", "demo-rebalance", "demo-state-change", "demo-scheduled-change"} {
			if !strings.Contains(r.Fix, "aws events put-rule --name "+rule+" ") {
				t.Errorf("fix lacks %s: %q", rule, r.Fix)
			}
		}
	})
	t.Run("rules of another queue", func(t *testing.T) {
		e := newEnv(t)
		e.aws.CreateQueue("other", 0)
		removeRules(t, e, e.cw.InterruptionRules...)
		if _, err := e.aws.AddInterruptionRules("other", "other"); err != nil {
			t.Fatal(err)
		}
		expect(t, e.run("interruption-rules"), Fail, "no enabled EventBridge rule")
	})
	t.Run("denied", func(t *testing.T) {
		e := newEnv(t)
		e.aws.DenyAction("events:ListRuleNamesByTarget")
		r := expect(t, e.run("interruption-rules"), Warn, "not checked", "AccessDeniedException")
		if !strings.Contains(r.Fix, "aws events list-rule-names-by-target --target-arn arn:aws:sqs:us-east-1:<account>:demo") {
			t.Errorf("fix %q", r.Fix)
		}
	})
	t.Run("describe denied", func(t *testing.T) {
		e := newEnv(t)
		e.aws.DenyAction("events:DescribeRule")
		expect(t, e.run("interruption-rules"), Warn, "not checked", "DescribeRule demo-rebalance", "AccessDeniedException")
	})
	t.Run("not configured", func(t *testing.T) {
		e := newEnv(t)
		e.get(&corev1.Pod{}, "stevedore-7d9f8-abcde").(*corev1.Pod).Spec.Containers[0].Env = nil
		e.settings.ClusterName = cluster
		expect(t, e.run("interruption-rules"), Warn, "not checked: no interruption queue is configured")
	})
}

func TestAMILatest(t *testing.T) {
	e := newEnv(t)
	e.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	})
	expect(t, e.run("risk-ami-latest"), Warn, "EC2NodeClass default", "al2023@latest", "1 node(s) of NodePool(s) default")
}

func TestDoNotDisrupt(t *testing.T) {
	e := newEnv(t)
	n := e.node("default", time.Hour)
	e.pod("batch-1", n, "1", "1Gi", func(p *corev1.Pod) { p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "true"} })
	e.pod("batch-2", n, "1", "1Gi", func(p *corev1.Pod) { p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "forever"} })
	results := e.run("risk-do-not-disrupt")
	expect(t, results, Warn, n+" (pod default/batch-1)", "does not stop expiry")
	expect(t, results, Warn, `default/batch-2="forever"`, "ignored")
}

func TestConsolidateAfter(t *testing.T) {
	e := newEnv(t)
	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	})
	e.node("default", time.Hour)
	expect(t, e.run("risk-consolidate-after"), Warn, "NodePool default", "consolidateAfter is Never", "1 empty now")

	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(2 * time.Hour)
	})
	expect(t, e.run("risk-consolidate-after"), Warn, "consolidateAfter is 2h")
}

func TestBudgetsNeverOpen(t *testing.T) {
	e := newEnv(t)
	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}, {Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
	})
	expect(t, e.run("risk-budgets-never-open"), Warn, "NodePool default", "Drifted (not ever)")

	// Closed every day but for one hour: it opens.
	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Schedule: ptr.To("@daily"), Duration: &karpv1.Duration{Duration: 23 * time.Hour}}}
	})
	expect(t, e.run("risk-budgets-never-open"), Pass, "every disruption reason has a window")

	// Closed for all 24 hours of every day: it never opens.
	e.nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0%", Schedule: ptr.To("@daily"), Duration: &karpv1.Duration{Duration: 24 * time.Hour}}}
	})
	expect(t, e.run("risk-budgets-never-open"), Warn, "Drifted (not within 168h0m0s)", "Empty", "Underutilized")
}

// TestEveryCheckTested keeps the list of checks and the tests above in step.
func TestEveryCheckTested(t *testing.T) {
	tested := map[string]bool{
		"pending-pods": true, "nodepool-ready": true, "nodepool-limits": true, "nodepool-weights": true, "nodepool-budgets": true,
		"nodeclass-conditions": true, "nodeclass-subnet-ips": true, "node-role-access": true, "nodeclaim-launch": true,
		"nodeclaim-registration": true, "nodeclaim-initialization": true, "controller-credentials": true, "interruption-queue": true,
		"interruption-rules": true, "risk-ami-latest": true, "risk-do-not-disrupt": true, "risk-consolidate-after": true,
		"risk-budgets-never-open": true,
	}
	for _, c := range Checks() {
		if !tested[c.ID] {
			t.Errorf("check %s has no test", c.ID)
		}
		delete(tested, c.ID)
	}
	for id := range tested {
		t.Errorf("test for unknown check %s", id)
	}
}

func TestReportJSONAndText(t *testing.T) {
	e := newEnv(t)
	e.pod("huge", "", "100", "1Gi")
	r := Run(ctx, e.world(), Checks())
	if !r.Failed() {
		t.Fatal("a pod that fits nowhere did not fail the report")
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Counts[Fail] != 1 || back.Results[0].ID != "pending-pods" || back.Results[0].Status != Fail {
		t.Errorf("json round trip: %+v", back.Results[0])
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "FAIL  pending-pods") || !strings.Contains(text.String(), "fix: lower the pod's requests") {
		t.Errorf("text:\n%s", text.String())
	}

	// The same world gives the same bytes.
	var again bytes.Buffer
	if err := Run(ctx, e.world(), Checks()).WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(js.Bytes(), again.Bytes()) {
		t.Error("two runs on the same world differ")
	}
}

// TestLoadWithoutAWS builds a world with no AWS at all: the catalog stands in
// for instance types and every AWS check says it did not look.
func TestLoadWithoutAWS(t *testing.T) {
	e := newEnv(t)
	w := e.world()
	w2, err := Load(ctx, Source{Reader: readerOf(t, e), AWSError: errNoCredentials, Settings: e.settings, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(w2.Pools) != 1 || len(w2.Notes) != 1 || !strings.Contains(w2.Notes[0], "embedded EC2 catalog") {
		t.Fatalf("pools %d, notes %v", len(w2.Pools), w2.Notes)
	}
	if w2.Settings.ClusterName != cluster || w2.Settings.InterruptionQueue != e.cw.QueueName {
		t.Errorf("settings from the controller's environment: %+v", w2.Settings)
	}
	r := Run(ctx, w2, Checks())
	if r.Failed() {
		t.Errorf("a world without AWS failed:\n%s", dump(r.Results))
	}
	expect(t, r.Results, Warn, "not checked", "no credentials")
	_ = w
}

// TestHandBuiltWorld runs the checklist on a World filled by hand, without
// Load and without any AWS client, as another source (the simulator, a
// test) may fill it: nothing panics, and what cannot be looked at says so.
func TestHandBuiltWorld(t *testing.T) {
	e := newEnv(t)
	loaded := e.world()
	w := &World{Snapshot: loaded.Snapshot, Pools: loaded.Pools, Settings: loaded.Settings, AWSError: "offline"}
	r := Run(ctx, w, Checks())
	if w.Thresholds != DefaultThresholds() {
		t.Errorf("thresholds %+v", w.Thresholds)
	}
	expect(t, r.Results, Warn, "not checked", "no EC2 client (offline)")
	expect(t, r.Results, Warn, "could not check the access entries", "no EKS client (offline)")
	expect(t, r.Results, Warn, "controller's pods were not found")
	expect(t, r.Results, Pass, "EC2NodeClass default", "Ready: 3 subnet(s)")
	if r.Failed() {
		t.Errorf("failed:\n%s", dump(r.Results))
	}
}
