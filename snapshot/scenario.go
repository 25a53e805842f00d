package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// discoveryTag is the tag EC2NodeClasses conventionally select their
// cluster's subnets and security groups by; its value is the cluster's name.
const discoveryTag = "karpenter.sh/discovery"

// wildcardValue is the value written for a tag a selector term asks for
// with "*" (any value).
const wildcardValue = "snapshot"

// releaseFamilies are the alias families whose releases the simulated
// account publishes.
var releaseFamilies = []string{"al2023", "al2", "bottlerocket"}

// scenario builds the Scenario document: the start, the cluster, and the AWS
// account the EC2NodeClasses resolved, so that in the simulation they select
// the same subnets, security groups and images.
func (b *builder) scenario(c *Cluster, opts Options) (scenario.Scenario, error) {
	name, err := clusterName(c, opts.ClusterName)
	if err != nil {
		return scenario.Scenario{}, err
	}
	region, err := region(c, opts.Region)
	if err != nil {
		return scenario.Scenario{}, err
	}
	aws := scenario.AWS{Region: region, Zones: zones(c)}
	aws.Subnets = b.subnets(c)
	aws.SecurityGroups = b.securityGroups(c)
	aws.Images, aws.CurrentImages = b.images(c)
	for i := range c.NodeClasses {
		if nc := &c.NodeClasses[i]; len(nc.Status.CapacityReservations) > 0 {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("EC2NodeClass %s selects capacity reservations, which are not written (its status does not say how many instances they hold): add them to spec.aws.capacityReservations", nc.Name))
		}
	}
	return scenario.Scenario{
		APIVersion: scenario.APIVersion,
		Kind:       scenario.Kind,
		Metadata:   scenario.Metadata{Name: ScenarioName},
		Spec: scenario.Spec{
			Start:    opts.Now.UTC().Format(time.RFC3339),
			Duration: scenario.Duration(opts.Duration),
			Cluster:  scenario.Cluster{Name: name, KubernetesVersion: c.KubernetesVersion},
			AWS:      aws,
		},
	}, nil
}

// clusterName is the name given, else the karpenter.sh/discovery value the
// EC2NodeClasses select subnets by, when they agree on one.
func clusterName(c *Cluster, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	found := map[string]bool{}
	for i := range c.NodeClasses {
		for _, t := range c.NodeClasses[i].Spec.SubnetSelectorTerms {
			if v := t.Tags[discoveryTag]; v != "" && v != "*" {
				found[v] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(found))
	switch len(names) {
	case 0:
		return "", fmt.Errorf("no cluster name: no EC2NodeClass selects its subnets by the %s tag, whose value names the cluster; give it with --cluster-name", discoveryTag)
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("the EC2NodeClasses select subnets by %s for several clusters (%s): give the cluster's name with --cluster-name", discoveryTag, strings.Join(names, ", "))
}

// region is the region given, else the one the nodes' region label names.
func region(c *Cluster, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	found := map[string]bool{}
	for i := range c.Nodes {
		if r := c.Nodes[i].Labels[wellknown.LabelTopologyRegion]; r != "" {
			found[r] = true
		}
	}
	regions := slices.Sorted(maps.Keys(found))
	switch len(regions) {
	case 0:
		return "", fmt.Errorf("no region: no node has the %s label; give the AWS region with --region", wellknown.LabelTopologyRegion)
	case 1:
		return regions[0], nil
	}
	return "", fmt.Errorf("the nodes are in several regions (%s): give the cluster's with --region", strings.Join(regions, ", "))
}

// zones are the zones of the node classes' subnets and of the nodes, sorted.
func zones(c *Cluster) []string {
	found := map[string]bool{}
	for i := range c.NodeClasses {
		for _, s := range c.NodeClasses[i].Status.Subnets {
			if s.Zone != "" {
				found[s.Zone] = true
			}
		}
	}
	for i := range c.Nodes {
		if z := c.Nodes[i].Labels[wellknown.LabelTopologyZone]; z != "" {
			found[z] = true
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// tagSets gathers, per resource ID, the tags of the selector terms of every
// node class that resolved it, in class order (by name) and term order.
type tagSets struct {
	ids   []string
	terms map[string][]map[string]string
}

func (t *tagSets) add(id string, terms []map[string]string) {
	if t.terms == nil {
		t.terms = map[string][]map[string]string{}
	}
	if _, ok := t.terms[id]; !ok {
		t.ids = append(t.ids, id)
		t.terms[id] = nil
	}
	for _, term := range terms {
		if len(term) > 0 {
			t.terms[id] = append(t.terms[id], term)
		}
	}
}

// satisfying returns tags that every term of terms matches: each term's tags,
// a "*" value (any value) written as wildcardValue. When two terms want a key
// to have different values, the first wins and conflict names the others.
func satisfying(terms []map[string]string) (tags map[string]string, conflicts []string) {
	for _, term := range terms {
		for _, k := range slices.Sorted(maps.Keys(term)) {
			v := term[k]
			if v == "*" {
				continue
			}
			if tags == nil {
				tags = map[string]string{}
			}
			if have, ok := tags[k]; !ok {
				tags[k] = v
			} else if have != v {
				conflicts = append(conflicts, fmt.Sprintf("%s=%s (written: %s=%s)", k, v, k, have))
			}
		}
	}
	for _, term := range terms {
		for k, v := range term {
			if v != "*" {
				continue
			}
			if tags == nil {
				tags = map[string]string{}
			}
			if _, ok := tags[k]; !ok {
				tags[k] = wildcardValue
			}
		}
	}
	return tags, conflicts
}

func (b *builder) conflict(what, id string, conflicts []string) {
	if len(conflicts) > 0 {
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s %s: the selector terms that resolved it ask for different values of a tag, %s; in the simulation the terms that ask for the others do not select it",
			what, id, strings.Join(slices.Compact(slices.Sorted(slices.Values(conflicts))), ", ")))
	}
}

// subnets are the subnets of the node classes' status, each with its zone and
// the tags that make the classes' selector terms select it.
func (b *builder) subnets(c *Cluster) []scenario.Subnet {
	var sets tagSets
	zone := map[string]string{}
	for i := range c.NodeClasses {
		nc := &c.NodeClasses[i]
		var terms []map[string]string
		for _, t := range nc.Spec.SubnetSelectorTerms {
			terms = append(terms, t.Tags)
		}
		for _, s := range nc.Status.Subnets {
			if _, ok := zone[s.ID]; !ok {
				zone[s.ID] = s.Zone
			}
			sets.add(s.ID, terms)
		}
	}
	var out []scenario.Subnet
	for _, id := range slices.Sorted(slices.Values(sets.ids)) {
		tags, conflicts := satisfying(sets.terms[id])
		b.conflict("Subnet", id, conflicts)
		out = append(out, scenario.Subnet{ID: id, Zone: zone[id], Tags: tags})
	}
	return out
}

// securityGroups are the security groups of the node classes' status, with
// their names and the tags that make the classes' selector terms select
// them.
func (b *builder) securityGroups(c *Cluster) []scenario.SecurityGroup {
	var sets tagSets
	name := map[string]string{}
	for i := range c.NodeClasses {
		nc := &c.NodeClasses[i]
		var terms []map[string]string
		for _, t := range nc.Spec.SecurityGroupSelectorTerms {
			terms = append(terms, t.Tags)
		}
		for _, g := range nc.Status.SecurityGroups {
			if name[g.ID] == "" {
				name[g.ID] = g.Name
			}
			sets.add(g.ID, terms)
		}
	}
	var out []scenario.SecurityGroup
	for _, id := range slices.Sorted(slices.Values(sets.ids)) {
		tags, conflicts := satisfying(sets.terms[id])
		b.conflict("Security group", id, conflicts)
		out = append(out, scenario.SecurityGroup{ID: id, Name: name[id], Tags: tags})
	}
	return out
}

// images are the images of the node classes' status: those of an alias
// family@latest as the current releases of the family, the others as
// images of the account with the tags and owner their selector terms ask
// for. An image both kinds of class resolve is a current release only.
func (b *builder) images(c *Cluster) ([]scenario.Image, []scenario.ReleaseImage) {
	var current []scenario.ReleaseImage
	released := map[string]bool{}
	var sets tagSets
	owners := map[string]string{}
	found := map[string]awsv1.AMI{}
	for i := range c.NodeClasses {
		nc := &c.NodeClasses[i]
		if family, version, ok := aliasOf(nc.Spec.AMISelectorTerms); ok {
			switch {
			case version != "latest":
				b.res.Notes = append(b.res.Notes, fmt.Sprintf("EC2NodeClass %s pins its images with alias %s@%s, which the simulated account resolves to images of its own: its nodes may drift at the start", nc.Name, family, version))
			case !slices.Contains(releaseFamilies, family):
				b.res.Notes = append(b.res.Notes, fmt.Sprintf("EC2NodeClass %s uses alias %s@latest; the simulated account publishes no %s images, so it resolves none", nc.Name, family, family))
			default:
				for _, ami := range nc.Status.AMIs {
					if released[ami.ID] {
						continue
					}
					released[ami.ID] = true
					current = append(current, scenario.ReleaseImage{Alias: family, Arch: amiArch(ami), Variant: amiVariant(ami), ID: ami.ID, Name: ami.Name})
				}
			}
			continue
		}
		var terms []map[string]string
		owner := ""
		for _, t := range nc.Spec.AMISelectorTerms {
			terms = append(terms, t.Tags)
			if owner == "" && t.Owner != "" && t.Owner != "self" && (len(t.Tags) > 0 || t.Name != "") {
				owner = t.Owner
			}
			if t.SSMParameter != "" {
				b.res.Notes = append(b.res.Notes, fmt.Sprintf("EC2NodeClass %s selects images by SSM parameter %s, which the simulated account does not have: change the term to the image's id to simulate it", nc.Name, t.SSMParameter))
			}
		}
		for _, ami := range nc.Status.AMIs {
			if _, ok := found[ami.ID]; !ok {
				found[ami.ID] = ami
			}
			if owners[ami.ID] == "" {
				owners[ami.ID] = owner
			}
			sets.add(ami.ID, terms)
		}
	}
	slices.SortFunc(current, func(a, b scenario.ReleaseImage) int {
		return strings.Compare(a.Alias+"/"+a.Arch+"/"+a.Variant+"/"+a.ID, b.Alias+"/"+b.Arch+"/"+b.Variant+"/"+b.ID)
	})
	var out []scenario.Image
	for _, id := range slices.Sorted(slices.Values(sets.ids)) {
		if released[id] {
			continue
		}
		tags, conflicts := satisfying(sets.terms[id])
		b.conflict("Image", id, conflicts)
		ami := found[id]
		out = append(out, scenario.Image{ID: id, Name: ami.Name, Arch: amiArch(ami), Owner: owners[id], Tags: tags})
	}
	return out, current
}

// aliasOf returns the family and version of the alias term among terms.
func aliasOf(terms []awsv1.AMISelectorTerm) (family, version string, ok bool) {
	for _, t := range terms {
		if t.Alias != "" {
			family, version, _ = strings.Cut(t.Alias, "@")
			return strings.ToLower(family), version, true
		}
	}
	return "", "", false
}

// amiArch is the EC2 architecture of an image, from its requirement on
// kubernetes.io/arch: x86_64, arm64, or "" when it has none.
func amiArch(ami awsv1.AMI) string {
	for _, r := range ami.Requirements {
		if r.Key != wellknown.LabelArch || r.Operator != corev1.NodeSelectorOpIn || len(r.Values) == 0 {
			continue
		}
		switch r.Values[0] {
		case "amd64":
			return "x86_64"
		case "arm64":
			return "arm64"
		}
	}
	return ""
}

// amiVariant is the variant of an EKS-optimized image: nvidia when it is
// for instances with GPUs, neuron for those with accelerators, else
// standard. A standard image says so with DoesNotExist requirements on
// both keys.
func amiVariant(ami awsv1.AMI) string {
	for _, r := range ami.Requirements {
		if r.Operator == corev1.NodeSelectorOpDoesNotExist {
			continue
		}
		switch r.Key {
		case wellknown.LabelInstanceGPUCount:
			return "nvidia"
		case wellknown.LabelInstanceAcceleratorCount:
			return "neuron"
		}
	}
	return "standard"
}
