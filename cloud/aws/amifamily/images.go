package amifamily

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// DefaultOwners are the image owners a name term searches when it names no
// owner, so that a public image with a squatted name is never picked up.
var DefaultOwners = []string{"self", "amazon"}

// ErrNoImages is returned when the selector terms matched no usable image.
var ErrNoImages = errors.New("no image matches amiSelectorTerms")

// Image is what selection needs to know about an EC2 image.
type Image struct {
	ID   string
	Name string
	// Architecture is EC2's: x86_64, arm64, i386, ...
	Architecture string
	CreationDate time.Time
	Deprecated   bool
	OwnerID      string
}

// ImageFromEC2 converts a DescribeImages result. An image is deprecated when
// its deprecation time is at or before now.
func ImageFromEC2(img ec2types.Image, now time.Time) Image {
	out := Image{
		ID:           aws.ToString(img.ImageId),
		Name:         aws.ToString(img.Name),
		Architecture: string(img.Architecture),
		OwnerID:      aws.ToString(img.OwnerId),
	}
	if t, err := time.Parse(time.RFC3339, aws.ToString(img.CreationDate)); err == nil {
		out.CreationDate = t
	}
	if img.DeprecationTime != nil {
		if t, err := time.Parse(time.RFC3339, *img.DeprecationTime); err == nil && !t.After(now) {
			out.Deprecated = true
		}
	}
	return out
}

// Query is one DescribeImages request.
type Query struct {
	Filters []ec2types.Filter
	Owners  []string
}

// Input returns the request, which always asks for available images and
// includes deprecated ones (they are chosen only when nothing else fits).
func (q Query) Input() *ec2.DescribeImagesInput {
	filters := append(slices.Clone(q.Filters), ec2types.Filter{Name: aws.String("state"), Values: []string{"available"}})
	return &ec2.DescribeImagesInput{Filters: filters, Owners: slices.Clone(q.Owners), IncludeDeprecated: aws.Bool(true)}
}

// SSMParameterNames returns the ssmParameter values of the terms, which the
// caller resolves to image IDs before calling Queries.
func SSMParameterNames(terms []awsv1.AMISelectorTerm) []string {
	var out []string
	for _, t := range terms {
		if t.SSMParameter != "" && !slices.Contains(out, t.SSMParameter) {
			out = append(out, t.SSMParameter)
		}
	}
	return out
}

// Queries returns the DescribeImages requests for non-alias selector terms.
// id terms and ssmParameter terms (resolved through ssmValues, parameter
// name to image ID) are collapsed into one image-id filter; every other term
// becomes its own query with name and tag filters, limited to the term's
// owner, or to DefaultOwners for a name term without one. An ssmParameter
// whose value is missing or not an image ID is an error.
func Queries(terms []awsv1.AMISelectorTerm, ssmValues map[string]string) ([]Query, error) {
	var ids []string
	var out []Query
	for _, t := range terms {
		switch {
		case t.Alias != "":
			return nil, fmt.Errorf("alias %q: aliases are resolved through SSM parameters, not DescribeImages queries", t.Alias)
		case t.ID != "":
			ids = appendUnique(ids, t.ID)
		case t.SSMParameter != "":
			v, ok := ssmValues[t.SSMParameter]
			if !ok {
				return nil, fmt.Errorf("ssmParameter %q was not resolved", t.SSMParameter)
			}
			if !strings.HasPrefix(v, "ami-") {
				return nil, fmt.Errorf("ssmParameter %q holds %q, which is not an image ID (ami-...)", t.SSMParameter, v)
			}
			ids = appendUnique(ids, v)
		default:
			var q Query
			if t.Name != "" {
				q.Filters = append(q.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{t.Name}})
			}
			keys := make([]string, 0, len(t.Tags))
			for k := range t.Tags {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if v := t.Tags[k]; v == "*" {
					q.Filters = append(q.Filters, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
				} else {
					q.Filters = append(q.Filters, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
				}
			}
			switch {
			case t.Owner != "":
				q.Owners = []string{t.Owner}
			case t.Name != "":
				q.Owners = slices.Clone(DefaultOwners)
			}
			if len(q.Filters) == 0 && len(q.Owners) == 0 {
				return nil, fmt.Errorf("an amiSelectorTerms term selects nothing: set alias, id, name, tags or ssmParameter")
			}
			out = append(out, q)
		}
	}
	if len(ids) > 0 {
		out = append([]Query{{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: ids}}}}, out...)
	}
	return out, nil
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// kubeArch maps an EC2 architecture to the Kubernetes one; others are
// skipped.
func kubeArch(ec2Arch string) (string, bool) {
	switch ec2Arch {
	case string(ec2types.ArchitectureValuesX8664):
		return wellknown.ArchAMD64, true
	case string(ec2types.ArchitectureValuesArm64):
		return wellknown.ArchARM64, true
	}
	return "", false
}

// better orders images: non-deprecated first, then newest, then by name,
// then by ID.
func better(a, b Image) int {
	if a.Deprecated != b.Deprecated {
		if !a.Deprecated {
			return -1
		}
		return 1
	}
	if c := b.CreationDate.Compare(a.CreationDate); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Select chooses the images for status.amis. Each image suits its
// architecture combined with each requirement set that known lists for its
// ID (the alias variants), or its architecture alone when known lists none.
// Per distinct requirement set the best image wins (non-deprecated, newest,
// then by name); the result is ordered best first. Images of architectures
// other than x86_64 and arm64 are skipped.
func Select(images []Image, known map[string][][]corev1.NodeSelectorRequirement) []awsv1.AMI {
	type candidate struct {
		image Image
		reqs  []corev1.NodeSelectorRequirement
	}
	best := map[string]candidate{}
	for _, img := range images {
		arch, ok := kubeArch(img.Architecture)
		if !ok {
			continue
		}
		archReq := corev1.NodeSelectorRequirement{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}
		sets := known[img.ID]
		if len(sets) == 0 {
			sets = [][]corev1.NodeSelectorRequirement{nil}
		}
		for _, set := range sets {
			reqs := canonical(append([]corev1.NodeSelectorRequirement{archReq}, set...))
			key := requirementsKey(reqs)
			if cur, ok := best[key]; !ok || better(img, cur.image) < 0 {
				best[key] = candidate{image: img, reqs: reqs}
			}
		}
	}
	cands := make([]candidate, 0, len(best))
	for _, c := range best {
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := better(a.image, b.image); c != 0 {
			return c
		}
		return strings.Compare(requirementsKey(a.reqs), requirementsKey(b.reqs))
	})
	out := make([]awsv1.AMI, 0, len(cands))
	for _, c := range cands {
		out = append(out, awsv1.AMI{ID: c.image.ID, Name: c.image.Name, Deprecated: c.image.Deprecated, Requirements: c.reqs})
	}
	return out
}

// canonical sorts requirements by key and operator and their values.
func canonical(reqs []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, len(reqs))
	for i, r := range reqs {
		r.Values = slices.Sorted(slices.Values(r.Values))
		out[i] = r
	}
	slices.SortFunc(out, func(a, b corev1.NodeSelectorRequirement) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(string(a.Operator), string(b.Operator))
	})
	return out
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s %s %s;", r.Key, r.Operator, strings.Join(r.Values, ","))
	}
	return b.String()
}

// ImageFor returns the first image of amis (status.amis, best first) whose
// requirements an instance type with these labels meets.
func ImageFor(amis []awsv1.AMI, labels map[string]string) (awsv1.AMI, bool) {
	for _, ami := range amis {
		reqs, err := requirements.FromNodeSelectorRequirements(ami.Requirements)
		if err != nil {
			continue
		}
		if reqs.Matches(labels) == nil {
			return ami, true
		}
	}
	return awsv1.AMI{}, false
}

// MapToInstanceTypes groups instance types, given by name with their labels,
// by the image each one launches with. Types no image suits are left out.
// Within a group the names are sorted.
func MapToInstanceTypes(amis []awsv1.AMI, types map[string]map[string]string) map[string][]string {
	out := map[string][]string{}
	for name, labels := range types {
		if ami, ok := ImageFor(amis, labels); ok {
			out[ami.ID] = append(out[ami.ID], name)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}
