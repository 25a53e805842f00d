package diagnose

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// TestTroubleshootingExample diagnoses the manifests of the troubleshooting
// guide (examples/troubleshooting-nodeclass.yaml) in the account that guide
// warns about: the cluster was built by hand, its subnets and security group
// carry the discovery tag of another name, the node role has no access entry,
// and the controller may not pass the role. Each symptom of the guide's
// checklist must be named by a finding.
func TestTroubleshootingExample(t *testing.T) {
	data, err := os.ReadFile("../examples/troubleshooting-nodeclass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var nc awsv1.EC2NodeClass
	var np karpv1.NodePool
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatal(err)
		}
		switch kind.Kind {
		case "EC2NodeClass":
			err = yaml.UnmarshalStrict([]byte(doc), &nc)
		case "NodePool":
			err = yaml.UnmarshalStrict([]byte(doc), &np)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	e := newEnv(t) // the standard "demo" account and cluster objects
	// The guide's cluster is "my-cluster", but the account was tagged
	// for "my-cluster-prod"; its node role exists, unauthorized.
	if _, err := e.aws.StandardCluster("my-cluster-prod", k8sMinor); err != nil {
		t.Fatal(err)
	}
	e.aws.AddRole(nc.Spec.Role)
	e.aws.DenyPassRole(nc.Spec.Role)
	e.settings.ClusterName = "my-cluster-prod"
	e.nodeClass(func(c *awsv1.EC2NodeClass) { c.Spec = nc.Spec })
	e.nodePool("default", func(p *karpv1.NodePool) { p.Spec = np.Spec })
	e.pod("web-2", "", "3", "1Gi", func(p *corev1.Pod) {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-12 * time.Minute))
	})

	r := Run(ctx, e.world(), Checks())
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if !r.Failed() {
		t.Fatal("the guide's broken account passed")
	}
	// Pod Pending, no EC2 calls: the node class does not resolve.
	expect(t, r.Results, Fail, "EC2NodeClass default", "SubnetsReady is False", "looked for subnet tags karpenter.sh/discovery=my-cluster",
		"karpenter.sh/discovery=my-cluster-prod on subnet-")
	expect(t, r.Results, Fail, "EC2NodeClass default", "SecurityGroupsReady is False", "karpenter.sh/discovery=my-cluster-prod on sg-")
	expect(t, r.Results, Fail, "Pod default/web-2", "left out (NodeClassNotReady)")
	// EC2 running, no node: the node role has no access entry.
	expect(t, r.Results, Fail, "node role my-cluster-karpenter-node-role has no EKS access entry")
	// Nodes replaced without a commit: @latest.
	expect(t, r.Results, Warn, "al2023@latest")
}
