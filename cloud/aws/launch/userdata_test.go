package launch

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/userdata"
)

func TestCheckUserData(t *testing.T) {
	class := func(alias string, userData *string) *awsv1.EC2NodeClass {
		return &awsv1.EC2NodeClass{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: alias}}, UserData: userData},
		}
	}
	custom := class("", nil)
	custom.Spec.AMIFamily = ptr(awsv1.AMIFamilyCustom)
	custom.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0123456789abcdef0"}}
	// A shell script of n bytes.
	shell := func(n int) *string { return ptr("#!/bin/bash\n" + strings.Repeat("#", n-13) + "\n") }
	atLimit := custom.DeepCopy()
	atLimit.Spec.UserData = shell(awsv1.MaxUserDataBytes)
	overLimit := custom.DeepCopy()
	overLimit.Spec.UserData = shell(awsv1.MaxUserDataBytes + 1)
	// Bottlerocket settings that the merge keeps, within the limit as
	// written.
	var toml strings.Builder
	toml.WriteString("[settings.kernel.sysctl]\n")
	for i := 0; toml.Len() < awsv1.MaxUserDataBytes-400; i++ {
		fmt.Fprintf(&toml, "\"net.ipv4.conf.eth%05d.rp_filter\" = \"1\"\n", i)
	}
	tests := []struct {
		name    string
		nc      *awsv1.EC2NodeClass
		cluster Cluster
		refused bool
	}{
		{"no user data", class("al2023@latest", nil), Cluster{}, false},
		{"AL2023 small", class("al2023@latest", shell(2000)), Cluster{}, false},
		{"AL2023 within the limit alone, over it merged", class("al2023@latest", shell(15500)), Cluster{}, true},
		{"AL2023 the same with a tiny CA bundle", class("al2023@latest", shell(15500)), Cluster{CABundle: "Q0E="}, false},
		{"Bottlerocket within the limit alone, over it merged", class("bottlerocket@latest", ptr(toml.String())), Cluster{}, true},
		{"Bottlerocket invalid TOML over the limit: left to the launch", class("bottlerocket@latest", ptr("[settings\n"+strings.Repeat("x", 20000))), Cluster{}, false},
		{"Custom at the limit", atLimit, Cluster{}, false},
		{"Custom one byte over", overLimit, Cluster{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			se := CheckUserData(tt.nc, tt.cluster, nil)
			if got := se != nil; got != tt.refused {
				t.Fatalf("CheckUserData = %v, want refused %v", se, tt.refused)
			}
			if se != nil && (se.UserSize != len(*tt.nc.Spec.UserData) || se.Size <= awsv1.MaxUserDataBytes) {
				t.Errorf("refused %d bytes merged from %d, want more than %d merged from %d", se.Size, se.UserSize, awsv1.MaxUserDataBytes, len(*tt.nc.Spec.UserData))
			}
		})
	}
}

// TestUserDataCache: with a cache, templates are those built without one,
// and user data is generated once for each set of inputs.
func TestUserDataCache(t *testing.T) {
	calls := 0
	generateUserData = func(family awsv1.AMIFamily, opts userdata.Options) (string, error) {
		calls++
		return userdata.Generate(family, opts)
	}
	t.Cleanup(func() { generateUserData = userdata.Generate })
	toml := "[settings.kernel.sysctl]\n\"net.core.somaxconn\" = \"1024\"\n"
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}, UserData: &toml},
		Status:     awsv1.EC2NodeClassStatus{InstanceProfile: "p", SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1"}}},
	}
	params := func(maxPods int32, team string) TemplateParams {
		return TemplateParams{ClusterName: "c", ClusterEndpoint: "https://e", CABundle: "Q0E=", ClusterCIDR: "10.0.0.0/16",
			NodeClass: nc, ImageID: "ami-1", MaxPods: maxPods, Labels: map[string]string{"team": team}}
	}
	cache := NewUserDataCache()
	for i, p := range []TemplateParams{params(29, "a"), params(29, "a"), params(58, "a"), params(29, "b"), params(29, "a")} {
		want, err := BuildTemplate(p)
		if err != nil {
			t.Fatal(err)
		}
		p.UserData = cache
		got, err := BuildTemplate(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || *got.Data.UserData != *want.Data.UserData {
			t.Errorf("build %d: with the cache %s, without %s", i, got.Name, want.Name)
		}
	}
	// Five builds without the cache; with it, one for each of the three
	// sets of inputs.
	if calls != 5+3 {
		t.Errorf("user data generated %d times, want 8", calls)
	}

	// Full, the cache starts over.
	calls = 0
	for n := range int32(userDataCacheSize) {
		p := params(100+n, "a")
		p.UserData = cache
		if _, err := BuildTemplate(p); err != nil {
			t.Fatal(err)
		}
	}
	first := params(29, "a")
	first.UserData = cache
	if _, err := BuildTemplate(first); err != nil {
		t.Fatal(err)
	}
	if calls != userDataCacheSize+1 || len(cache.entries) > userDataCacheSize {
		t.Errorf("%d generated, %d kept, want %d generated and at most %d kept", calls, len(cache.entries), userDataCacheSize+1, userDataCacheSize)
	}

	// The verdict on user data far over the limit is not kept: it would
	// hold the user data.
	kept := len(cache.entries)
	huge := "[settings.kernel.sysctl]\n\"net.core.somaxconn\" = \"" + strings.Repeat("9", userDataCacheMaxKey) + "\"\n"
	nc.Spec.UserData = &huge
	for range 2 {
		if se := CheckUserData(nc, StandInCluster, cache); se == nil || se.UserSize != len(huge) {
			t.Fatalf("CheckUserData = %v, want the user data refused", se)
		}
	}
	if len(cache.entries) != kept {
		t.Errorf("the cache keeps %d entries after checking %d bytes of user data, want %d", len(cache.entries), len(huge), kept)
	}
}
