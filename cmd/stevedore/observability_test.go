package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// TestControllerDisableClusterStateObservability runs the controller with
// --disable-cluster-state-observability off and on, with a NodePool and an
// EC2NodeClass: once the EC2NodeClass's status metrics are served (its
// status controller and the status watch have run), the NodePool's usage
// and status metrics are served with the switch off and absent with it on.
func TestControllerDisableClusterStateObservability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	for _, disabled := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[disabled]
		t.Run(name, func(t *testing.T) {
			srv, kubeconfig := startAPIServer(t)
			cluster := "observability-" + name
			f, world := testAccount(t, 13, cluster)
			reg := prometheus.NewRegistry()
			args := []string{"--cluster-name=" + cluster, "--health-probe-bind-address=" + freePort(t), "--metrics-bind-address=0"}
			if disabled {
				args = append(args, "--disable-cluster-state-observability")
			}
			logs, done, _ := runControllerWith(t, f, kubeconfig, reg, args...)
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{karpv1.AddToScheme, awsv1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			kube, err := client.New(srv.Config, client.Options{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range []client.Object{
				&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
					AMIFamily:                  ptrTo(awsv1.AMIFamilyAL2023),
					AMISelectorTerms:           []awsv1.AMISelectorTerm{{ID: world.Images["al2023/x86_64/standard"]}},
					SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
					SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
					Role:                       world.NodeRole,
				}},
				&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}}},
					NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				}}}},
			} {
				if err := kube.Create(t.Context(), obj); err != nil {
					t.Fatal(err)
				}
			}
			served := func() map[string]bool {
				fams, err := reg.Gather()
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]bool{}
				for _, f := range fams {
					out[f.GetName()] = len(f.GetMetric()) > 0
				}
				return out
			}
			// Both conditions of the EC2NodeClass reported, and the
			// NodePool's Ready transition (on when not disabled).
			ready := []string{"operator_ec2nodeclass_status_condition_count", "operator_ec2nodeclass_status_condition_transitions_total", "karpenter_nodepools_allowed_disruptions"}
			deadline := time.Now().Add(60 * time.Second)
			var got map[string]bool
			for {
				got = served()
				missing := ""
				for _, n := range ready {
					if !got[n] {
						missing = n
					}
				}
				if missing == "" && (disabled || got["operator_nodepool_status_condition_transitions_total"]) {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("controller stopped: %v\nlogs:\n%s", err, logs)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 60s %s is not served\nlogs:\n%s", missing, logs)
				}
				time.Sleep(200 * time.Millisecond)
			}
			var wrong []string
			for _, n := range []string{"karpenter_nodepools_usage", "operator_nodepool_status_condition_count",
				"operator_nodepool_status_condition_transitions_total", "operator_status_condition_count"} {
				want := !disabled
				if n == "operator_status_condition_count" {
					want = true // the EC2NodeClass's deprecated series stay
				}
				if got[n] != want {
					wrong = append(wrong, n)
				}
			}
			if len(wrong) > 0 {
				t.Errorf("disabled=%v: served is wrong for %s", disabled, strings.Join(wrong, ", "))
			}
		})
	}
}
