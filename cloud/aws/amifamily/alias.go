package amifamily

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// VersionLatest is the alias version that follows each new release.
const VersionLatest = "latest"

// Alias is a parsed amiSelectorTerms alias, family@version.
type Alias struct {
	Family  awsv1.AMIFamily
	Version string
}

func (a Alias) String() string { return strings.ToLower(string(a.Family)) + "@" + a.Version }

var aliasFamilies = map[string]awsv1.AMIFamily{
	"al2":          awsv1.AMIFamilyAL2,
	"al2023":       awsv1.AMIFamilyAL2023,
	"bottlerocket": awsv1.AMIFamilyBottlerocket,
	"windows2019":  awsv1.AMIFamilyWindows2019,
	"windows2022":  awsv1.AMIFamilyWindows2022,
	"windows2025":  awsv1.AMIFamilyWindows2025,
}

// ParseAlias parses an alias such as al2023@latest or bottlerocket@v1.26.0.
func ParseAlias(s string) (Alias, error) {
	name, version, ok := strings.Cut(s, "@")
	if !ok || name == "" || version == "" {
		return Alias{}, fmt.Errorf("alias %q: use family@version, for example al2023@latest", s)
	}
	family, ok := aliasFamilies[strings.ToLower(name)]
	if !ok {
		return Alias{}, fmt.Errorf("alias %q: family %q is not one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025", s, name)
	}
	if isWindows(family) && version != VersionLatest {
		return Alias{}, fmt.Errorf("alias %q: Windows images can only be selected with @latest", s)
	}
	return Alias{Family: family, Version: version}, nil
}

// AliasOf returns the alias of the selector terms, if one is used.
func AliasOf(terms []awsv1.AMISelectorTerm) (Alias, bool, error) {
	for _, t := range terms {
		if t.Alias != "" {
			a, err := ParseAlias(t.Alias)
			return a, err == nil, err
		}
	}
	return Alias{}, false, nil
}

// ResolvedFamily returns the family that decides user data and defaults: an
// explicit amiFamily, else the alias's family, else Custom.
func ResolvedFamily(spec *awsv1.EC2NodeClassSpec) awsv1.AMIFamily {
	if spec.AMIFamily != nil && *spec.AMIFamily != "" {
		return *spec.AMIFamily
	}
	if a, ok, _ := AliasOf(spec.AMISelectorTerms); ok {
		return a.Family
	}
	return awsv1.AMIFamilyCustom
}

func isWindows(f awsv1.AMIFamily) bool {
	return f == awsv1.AMIFamilyWindows2019 || f == awsv1.AMIFamilyWindows2022 || f == awsv1.AMIFamilyWindows2025
}

// UnsupportedAliasError is an alias that cannot be used with the cluster's
// Kubernetes version. It is the UnsupportedAlias reason of AMIsReady=False.
type UnsupportedAliasError struct {
	Alias             Alias
	KubernetesVersion string
	Detail            string
}

func (e *UnsupportedAliasError) Error() string {
	return fmt.Sprintf("alias %s is not supported on Kubernetes %s: %s", e.Alias, e.KubernetesVersion, e.Detail)
}

// CheckSupported reports an UnsupportedAliasError when the alias's family
// has no EKS-optimized images for the Kubernetes version: AL2 ends with
// 1.32, and Windows Server 2025 starts with 1.35.
func CheckSupported(a Alias, kubernetesVersion string) error {
	minor, err := minorVersion(kubernetesVersion)
	if err != nil {
		return err
	}
	switch {
	case a.Family == awsv1.AMIFamilyAL2 && minor >= 33:
		return &UnsupportedAliasError{Alias: a, KubernetesVersion: kubernetesVersion,
			Detail: "Amazon Linux 2 images are published up to Kubernetes 1.32; use al2023@latest or bottlerocket@latest"}
	case a.Family == awsv1.AMIFamilyWindows2025 && minor < 35:
		return &UnsupportedAliasError{Alias: a, KubernetesVersion: kubernetesVersion,
			Detail: "Windows Server 2025 images are published from Kubernetes 1.35; use windows2022@latest"}
	}
	return nil
}

// minorVersion returns the minor version of a Kubernetes 1.x version such as
// "1.33", "v1.33.2" or "1.33+".
func minorVersion(v string) (int, error) {
	s := strings.TrimPrefix(v, "v")
	major, rest, ok := strings.Cut(s, ".")
	if !ok || major != "1" {
		return 0, fmt.Errorf("kubernetes version %q: want 1.<minor>, for example 1.33", v)
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	minor, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0, fmt.Errorf("kubernetes version %q: want 1.<minor>, for example 1.33", v)
	}
	return minor, nil
}

// Variant is a flavour of an EKS-optimized image.
type Variant string

// Variants.
const (
	VariantStandard Variant = "standard"
	VariantNvidia   Variant = "nvidia"
	VariantNeuron   Variant = "neuron"
)

// Requirements returns the instance requirements of images of the variant:
// standard suits types with neither GPUs nor accelerators, nvidia any type
// with GPUs, neuron any type with accelerators.
func (v Variant) Requirements() []corev1.NodeSelectorRequirement {
	switch v {
	case VariantNvidia:
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case VariantNeuron:
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	}
	return []corev1.NodeSelectorRequirement{
		{Key: wellknown.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: wellknown.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
}

// Parameter is an SSM parameter that holds the ID of an image, with the
// requirement sets that image suits (besides its architecture, which comes
// from the image itself).
type Parameter struct {
	// Path is the SSM parameter name.
	Path string
	// Mutable is true for parameters that move to each new release
	// (@latest); pinned parameters never change.
	Mutable bool
	// Requirements lists the requirement sets the image suits; an image
	// can serve several (the AL2 GPU image suits nvidia and neuron types).
	Requirements [][]corev1.NodeSelectorRequirement
}

// Parameters returns the SSM parameters an alias expands to for the
// Kubernetes version, or an UnsupportedAliasError.
func Parameters(a Alias, kubernetesVersion string) ([]Parameter, error) {
	if err := CheckSupported(a, kubernetesVersion); err != nil {
		return nil, err
	}
	minor, _ := minorVersion(kubernetesVersion)
	k8s := fmt.Sprintf("1.%d", minor)
	latest := a.Version == VersionLatest
	p := func(path string, variants ...Variant) Parameter {
		par := Parameter{Path: path, Mutable: latest}
		for _, v := range variants {
			par.Requirements = append(par.Requirements, v.Requirements())
		}
		return par
	}
	const eks = "/aws/service/eks/optimized-ami/"
	switch a.Family {
	case awsv1.AMIFamilyAL2:
		type flavour struct {
			dir, node string
			variants  []Variant
		}
		var out []Parameter
		for _, f := range []flavour{
			{"amazon-linux-2", "amazon-eks-node", []Variant{VariantStandard}},
			{"amazon-linux-2-arm64", "amazon-eks-arm64-node", []Variant{VariantStandard}},
			{"amazon-linux-2-gpu", "amazon-eks-gpu-node", []Variant{VariantNvidia, VariantNeuron}},
		} {
			release := "recommended"
			if !latest {
				release = fmt.Sprintf("%s-%s-%s", f.node, k8s, a.Version)
			}
			out = append(out, p(fmt.Sprintf("%s%s/%s/%s/image_id", eks, k8s, f.dir, release), f.variants...))
		}
		return out, nil
	case awsv1.AMIFamilyAL2023:
		var out []Parameter
		for _, av := range []struct {
			arch    string
			variant Variant
		}{
			{"x86_64", VariantStandard}, {"x86_64", VariantNvidia}, {"x86_64", VariantNeuron},
			{"arm64", VariantStandard}, {"arm64", VariantNvidia},
		} {
			release := "recommended"
			if !latest {
				release = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", av.arch, av.variant, k8s, a.Version)
			}
			out = append(out, p(fmt.Sprintf("%s%s/amazon-linux-2023/%s/%s/%s/image_id", eks, k8s, av.arch, av.variant, release), av.variant))
		}
		return out, nil
	case awsv1.AMIFamilyBottlerocket:
		release := VersionLatest
		if !latest {
			release = strings.TrimPrefix(a.Version, "v")
		}
		path := func(suffix, arch string) string {
			return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, suffix, arch, release)
		}
		return []Parameter{
			p(path("", "x86_64"), VariantStandard, VariantNeuron),
			p(path("", "arm64"), VariantStandard),
			p(path("-nvidia", "x86_64"), VariantNvidia),
			p(path("-nvidia", "arm64"), VariantNvidia),
		}, nil
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		year, build := windowsRelease(a.Family)
		return []Parameter{{
			Path:    fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s),
			Mutable: true,
			Requirements: [][]corev1.NodeSelectorRequirement{{
				{Key: wellknown.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.OSWindows}},
				{Key: wellknown.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{build}},
			}},
		}}, nil
	}
	return nil, fmt.Errorf("alias %s: family %s has no alias", a, a.Family)
}

func windowsRelease(f awsv1.AMIFamily) (year, build string) {
	switch f {
	case awsv1.AMIFamilyWindows2019:
		return "2019", wellknown.WindowsBuild2019
	case awsv1.AMIFamilyWindows2022:
		return "2022", wellknown.WindowsBuild2022
	}
	return "2025", wellknown.WindowsBuild2025
}
