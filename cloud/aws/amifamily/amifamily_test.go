package amifamily

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

func TestParameters(t *testing.T) {
	tests := []struct {
		alias   string
		k8s     string
		paths   []string
		reqSets []int
	}{
		{"al2023@latest", "1.33", []string{
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/nvidia/recommended/image_id",
		}, []int{1, 1, 1, 1, 1}},
		{"al2023@v20250715", "v1.33.1", []string{
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20250715/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.33-v20250715/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.33-v20250715/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.33-v20250715/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.33-v20250715/image_id",
		}, []int{1, 1, 1, 1, 1}},
		{"al2@latest", "1.32", []string{
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id",
		}, []int{1, 1, 2}},
		{"al2@v20240625", "1.30", []string{
			"/aws/service/eks/optimized-ami/1.30/amazon-linux-2/amazon-eks-node-1.30-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240625/image_id",
		}, []int{1, 1, 2}},
		{"bottlerocket@latest", "1.31", []string{
			"/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/latest/image_id",
		}, []int{2, 1, 1, 1}},
		{"bottlerocket@v1.26.0", "1.31", []string{
			"/aws/service/bottlerocket/aws-k8s-1.31/x86_64/1.26.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.26.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/1.26.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/1.26.0/image_id",
		}, []int{2, 1, 1, 1}},
		{"windows2022@latest", "1.33", []string{
			"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.33/image_id",
		}, []int{1}},
		{"windows2025@latest", "1.35", []string{
			"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id",
		}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.alias+"/"+tt.k8s, func(t *testing.T) {
			a, err := ParseAlias(tt.alias)
			if err != nil {
				t.Fatal(err)
			}
			params, err := Parameters(a, tt.k8s)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			var sets []int
			for _, p := range params {
				paths = append(paths, p.Path)
				sets = append(sets, len(p.Requirements))
				if p.Mutable != (a.Version == VersionLatest) {
					t.Errorf("%s: Mutable = %v", p.Path, p.Mutable)
				}
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths =\n%q\nwant\n%q", paths, tt.paths)
			}
			if !reflect.DeepEqual(sets, tt.reqSets) {
				t.Errorf("requirement sets per path = %v, want %v", sets, tt.reqSets)
			}
		})
	}
}

func TestAliasErrors(t *testing.T) {
	for _, tt := range []struct {
		alias, k8s  string
		unsupported bool
	}{
		{"al2@latest", "1.33", true},
		{"al2@latest", "v1.34.0", true},
		{"windows2025@latest", "1.34", true},
		{"windows2019@v1", "1.30", false},
		{"ubuntu@latest", "1.30", false},
		{"al2023", "1.30", false},
		{"al2023@latest", "2.0", false},
	} {
		a, err := ParseAlias(tt.alias)
		if err == nil {
			_, err = Parameters(a, tt.k8s)
		}
		var ua *UnsupportedAliasError
		if err == nil || errors.As(err, &ua) != tt.unsupported {
			t.Errorf("%s on %s: err = %v, want unsupported=%v", tt.alias, tt.k8s, err, tt.unsupported)
		}
	}
}

func TestResolvedFamily(t *testing.T) {
	custom := awsv1.AMIFamilyCustom
	for _, tt := range []struct {
		spec awsv1.EC2NodeClassSpec
		want awsv1.AMIFamily
	}{
		{awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}}, awsv1.AMIFamilyBottlerocket},
		{awsv1.EC2NodeClassSpec{AMIFamily: &custom, AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}, awsv1.AMIFamilyCustom},
		{awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}}, awsv1.AMIFamilyCustom},
	} {
		if got := ResolvedFamily(&tt.spec); got != tt.want {
			t.Errorf("ResolvedFamily = %s, want %s", got, tt.want)
		}
	}
}

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func TestQueries(t *testing.T) {
	terms := []awsv1.AMISelectorTerm{
		{ID: "ami-1"},
		{SSMParameter: "/my/ami"},
		{ID: "ami-1"},
		{Name: "my-ami-*"},
		{Name: "shared", Owner: "123456789012"},
		{Tags: map[string]string{"team": "a", "env": "*"}},
	}
	got, err := Queries(terms, map[string]string{"/my/ami": "ami-2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{Filters: []ec2types.Filter{filter("image-id", "ami-1", "ami-2")}},
		{Filters: []ec2types.Filter{filter("name", "my-ami-*")}, Owners: []string{"self", "amazon"}},
		{Filters: []ec2types.Filter{filter("name", "shared")}, Owners: []string{"123456789012"}},
		{Filters: []ec2types.Filter{filter("tag-key", "env"), filter("tag:team", "a")}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Queries =\n%+v\nwant\n%+v", got, want)
	}
	in := got[0].Input()
	if !aws.ToBool(in.IncludeDeprecated) || len(in.Filters) != 2 || aws.ToString(in.Filters[1].Name) != "state" {
		t.Errorf("Input = %+v", in)
	}
	if _, err := Queries([]awsv1.AMISelectorTerm{{SSMParameter: "/x"}}, map[string]string{"/x": "not-an-ami"}); err == nil {
		t.Error("a parameter without an image ID was accepted")
	}
	if names := SSMParameterNames(terms); !reflect.DeepEqual(names, []string{"/my/ami"}) {
		t.Errorf("SSMParameterNames = %v", names)
	}
}

func TestImageFromEC2(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	img := ImageFromEC2(ec2types.Image{ImageId: aws.String("ami-1"), Name: aws.String("n"), Architecture: "arm64",
		CreationDate: aws.String("2025-01-01T00:00:00.000Z"), DeprecationTime: aws.String("2025-06-01T00:00:00.000Z"), OwnerId: aws.String("1")}, now)
	want := Image{ID: "ami-1", Name: "n", Architecture: "arm64", CreationDate: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Deprecated: true, OwnerID: "1"}
	if !reflect.DeepEqual(img, want) {
		t.Errorf("ImageFromEC2 = %+v, want %+v", img, want)
	}
}

func day(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }

func TestSelect(t *testing.T) {
	arch := func(a string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}
	}
	t.Run("non-alias: one per arch", func(t *testing.T) {
		images := []Image{
			{ID: "ami-old", Name: "a", Architecture: "x86_64", CreationDate: day(1)},
			{ID: "ami-new-deprecated", Name: "b", Architecture: "x86_64", CreationDate: day(5), Deprecated: true},
			{ID: "ami-new", Name: "c", Architecture: "x86_64", CreationDate: day(3)},
			{ID: "ami-tie-b", Name: "z", Architecture: "arm64", CreationDate: day(4)},
			{ID: "ami-tie-a", Name: "y", Architecture: "arm64", CreationDate: day(4)},
			{ID: "ami-i386", Name: "x", Architecture: "i386", CreationDate: day(9)},
		}
		got := Select(images, nil)
		want := []awsv1.AMI{
			{ID: "ami-tie-a", Name: "y", Requirements: []corev1.NodeSelectorRequirement{arch("arm64")}},
			{ID: "ami-new", Name: "c", Requirements: []corev1.NodeSelectorRequirement{arch("amd64")}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Select =\n%+v\nwant\n%+v", got, want)
		}
	})
	t.Run("deprecated only", func(t *testing.T) {
		got := Select([]Image{{ID: "ami-d", Architecture: "x86_64", Deprecated: true}}, nil)
		if len(got) != 1 || !got[0].Deprecated {
			t.Errorf("Select = %+v", got)
		}
	})
	t.Run("alias: one per variant, GPU image twice", func(t *testing.T) {
		params, err := Parameters(Alias{Family: awsv1.AMIFamilyAL2, Version: VersionLatest}, "1.32")
		if err != nil {
			t.Fatal(err)
		}
		known := map[string][][]corev1.NodeSelectorRequirement{
			"ami-x86": params[0].Requirements, "ami-arm": params[1].Requirements, "ami-gpu": params[2].Requirements,
		}
		images := []Image{
			{ID: "ami-x86", Architecture: "x86_64", CreationDate: day(2)},
			{ID: "ami-arm", Architecture: "arm64", CreationDate: day(2)},
			{ID: "ami-gpu", Architecture: "x86_64", CreationDate: day(3)},
		}
		amis := Select(images, known)
		if len(amis) != 4 || amis[0].ID != "ami-gpu" || amis[1].ID != "ami-gpu" {
			t.Fatalf("Select = %+v", amis)
		}
		types := map[string]map[string]string{
			"m5.large":     {wellknown.LabelArch: "amd64"},
			"m6g.large":    {wellknown.LabelArch: "arm64"},
			"g5.xlarge":    {wellknown.LabelArch: "amd64", wellknown.LabelInstanceGPUCount: "1"},
			"inf2.xlarge":  {wellknown.LabelArch: "amd64", wellknown.LabelInstanceAcceleratorCount: "1"},
			"g5g.xlarge":   {wellknown.LabelArch: "arm64", wellknown.LabelInstanceGPUCount: "1"},
			"mac1.metal":   {wellknown.LabelArch: "amd64", wellknown.LabelOS: "darwin"},
			"c7g.medium":   {wellknown.LabelArch: "arm64"},
			"unknown-arch": {},
		}
		got := MapToInstanceTypes(amis, types)
		want := map[string][]string{
			"ami-x86": {"m5.large", "mac1.metal"},
			"ami-arm": {"c7g.medium", "m6g.large"},
			"ami-gpu": {"g5.xlarge", "inf2.xlarge"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("MapToInstanceTypes = %v, want %v", got, want)
		}
	})
}
