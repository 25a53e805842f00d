package launch

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
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
			se := CheckUserData(tt.nc, tt.cluster)
			if got := se != nil; got != tt.refused {
				t.Fatalf("CheckUserData = %v, want refused %v", se, tt.refused)
			}
			if se != nil && (se.UserSize != len(*tt.nc.Spec.UserData) || se.Size <= awsv1.MaxUserDataBytes) {
				t.Errorf("refused %d bytes merged from %d, want more than %d merged from %d", se.Size, se.UserSize, awsv1.MaxUserDataBytes, len(*tt.nc.Spec.UserData))
			}
		})
	}
}
