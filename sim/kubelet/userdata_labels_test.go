package kubelet

import (
	"encoding/base64"
	"maps"
	"os"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// The user data the AWS provider writes (its golden files) hands the kubelet
// the NodeClaim's labels; the simulated kubelet registers with them.
func TestUserDataLabels(t *testing.T) {
	golden := func(name string) string {
		data, err := os.ReadFile("../../cloud/aws/userdata/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(data)
	}
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
		{"AL2023 NodeConfig", golden("al2023.golden"), flagLabels},
		{"AL2 bootstrap arguments", golden("al2-kubelet-raid0-user.golden"), flagLabels},
		{"Bottlerocket settings", golden("bottlerocket.golden"), flagLabels},
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
