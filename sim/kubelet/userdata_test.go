package kubelet

import (
	"encoding/base64"
	"maps"
	"os"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// golden returns a user-data golden file of the AWS provider, base64 as EC2
// holds it.
func golden(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../cloud/aws/userdata/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(data)
}

// The user data the AWS provider writes (its golden files) hands the kubelet
// the NodeClaim's labels; the simulated kubelet registers with them.
func TestUserDataLabels(t *testing.T) {
	flagLabels := map[string]string{
		"karpenter.sh/do-not-sync-taints":  "true",
		"karpenter.sh/nodepool":            "default",
		"node.kubernetes.io/instance-type": "m6i.large",
		"node.kubernetes.io/lifecycle":     "kept",
		"team":                             "payments",
	}
	tests := []struct {
		name     string
		userData string
		want     map[string]string
	}{
		{"AL2023 NodeConfig", golden(t, "al2023.golden"), flagLabels},
		{"AL2 bootstrap arguments", golden(t, "al2-kubelet-raid0-user.golden"), flagLabels},
		{"Bottlerocket settings", golden(t, "bottlerocket.golden"), flagLabels},
		{"quoted flag", base64.StdEncoding.EncodeToString([]byte(`KUBELET_EXTRA_ARGS='--node-labels="a=1,b.example.com/c=" --max-pods=10'`)), map[string]string{"a": "1", "b.example.com/c": ""}},
		{"no labels", base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi\n")), map[string]string{}},
		{"not base64", "%%%", map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := UserDataLabels(tc.userData)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("label %s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			if len(tc.want) == 0 && len(got) != 0 {
				t.Errorf("labels = %v, want none", got)
			}
		})
	}
}

// A registering Node carries its user data's labels, and the labels the
// kubelet finds out itself win over them.
func TestNodeForRegistersWithUserDataLabels(t *testing.T) {
	ud := base64.StdEncoding.EncodeToString([]byte("    flags:\n    - --node-labels=registration=fail,node.kubernetes.io/instance-type=wrong\n"))
	info := fake.InstanceInfo{ID: "i-0123", InstanceType: "m6i.large", Zone: "us-west-2a", PrivateDNSName: "ip-10-0-0-1.us-west-2.compute.internal", UserData: ud}
	node, err := NodeFor(info)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"registration": "fail", "node.kubernetes.io/instance-type": "m6i.large"}
	got := maps.Clone(node.Labels)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}
}

// The user data the AWS provider writes hands the kubelet the NodeClaim's
// taints and startup taints (it also says do-not-sync-taints); the simulated
// kubelet registers with them.
func TestUserDataTaints(t *testing.T) {
	fromGoldens := []corev1.Taint{
		{Key: "dedicated", Value: "payments", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/startup", Effect: corev1.TaintEffectNoSchedule},
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
	}
	tests := []struct {
		name     string
		userData string
		want     []corev1.Taint
	}{
		{"AL2023 NodeConfig", golden(t, "al2023.golden"), fromGoldens},
		{"AL2 bootstrap arguments", golden(t, "al2-kubelet-raid0-user.golden"), fromGoldens},
		{"Bottlerocket settings", golden(t, "bottlerocket.golden"), fromGoldens},
		{"bare flag, bad entries dropped", base64.StdEncoding.EncodeToString([]byte("--register-with-taints=a=1:NoSchedule,b:NoExecute,c=2:Sometimes,:NoSchedule --v=2")),
			[]corev1.Taint{{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoExecute}}},
		{"no taints", base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi\n")), nil},
		{"not base64", "%%%", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := UserDataTaints(tc.userData)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("taints = %v, want %v", got, tc.want)
			}
		})
	}
}

// A registering Node carries its user data's taints once each, and the
// unregistered taint even when its user data does not name it.
func TestNodeForRegistersWithUserDataTaints(t *testing.T) {
	ud := base64.StdEncoding.EncodeToString([]byte(`--register-with-taints="team=a:NoSchedule,karpenter.sh/unregistered=:NoExecute,team=a:NoSchedule"`))
	node, err := NodeFor(fake.InstanceInfo{ID: "i-0123", InstanceType: "m6i.large", Zone: "us-west-2a", PrivateDNSName: "ip-10-0-0-1.us-west-2.compute.internal", UserData: ud})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Taint{
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule},
	}
	if !reflect.DeepEqual(node.Spec.Taints, want) {
		t.Errorf("taints = %v, want %v", node.Spec.Taints, want)
	}
	node, err = NodeFor(fake.InstanceInfo{ID: "i-0456", InstanceType: "m6i.large", Zone: "us-west-2a", PrivateDNSName: "ip-10-0-0-2.us-west-2.compute.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}; !reflect.DeepEqual(node.Spec.Taints, want) {
		t.Errorf("taints without user data = %v, want %v", node.Spec.Taints, want)
	}
}
