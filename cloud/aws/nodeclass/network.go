package nodeclass

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// maxHints is how many near-miss tags a message names.
const maxHints = 5

// selectorTerm is the part of a subnet or security group selector term that
// filters are built from.
type selectorTerm struct {
	tags     map[string]string
	id, name string
}

// filters returns the EC2 filters of a term, or nil for an empty term (which
// selects nothing rather than everything).
func (t selectorTerm) filters(idFilter, nameFilter string) []ec2types.Filter {
	var out []ec2types.Filter
	if t.id != "" {
		out = append(out, ec2types.Filter{Name: aws.String(idFilter), Values: []string{t.id}})
	}
	if t.name != "" {
		out = append(out, ec2types.Filter{Name: aws.String(nameFilter), Values: []string{t.name}})
	}
	for _, k := range slices.Sorted(maps.Keys(t.tags)) {
		if v := t.tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

func (t selectorTerm) String() string {
	var parts []string
	if t.id != "" {
		parts = append(parts, "id "+t.id)
	}
	if t.name != "" {
		parts = append(parts, "name "+t.name)
	}
	for _, k := range slices.Sorted(maps.Keys(t.tags)) {
		parts = append(parts, fmt.Sprintf("tag %s=%s", k, t.tags[k]))
	}
	if len(parts) == 0 {
		return "an empty term"
	}
	return strings.Join(parts, " and ")
}

func describeTerms(terms []selectorTerm) string {
	s := make([]string, len(terms))
	for i, t := range terms {
		s[i] = t.String()
	}
	return strings.Join(s, " or ")
}

// tagged is a resource found by a hint query.
type tagged struct {
	id   string
	tags map[string]string
}

// nearMisses looks for resources that carry the tag keys the terms ask for,
// with other values, and names those key=value pairs: the usual mistake is a
// discovery tag with the wrong cluster name. It is best effort: a failed
// lookup gives no hint.
func nearMisses(ctx context.Context, terms []selectorTerm, list func(context.Context, []ec2types.Filter) ([]tagged, error)) []string {
	keys := map[string]bool{}
	for _, t := range terms {
		for k := range t.tags {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return nil
	}
	found, err := list(ctx, []ec2types.Filter{{Name: aws.String("tag-key"), Values: slices.Sorted(maps.Keys(keys))}})
	if err != nil {
		return nil
	}
	pairs := map[string]bool{}
	for _, res := range found {
		for k := range keys {
			if v, ok := res.tags[k]; ok {
				pairs[k+"="+v] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(pairs))
}

func hintList(pairs []string) string {
	if len(pairs) > maxHints {
		return fmt.Sprintf("%s (and %d more)", strings.Join(pairs[:maxHints], ", "), len(pairs)-maxHints)
	}
	return strings.Join(pairs, ", ")
}

func (r *Resolver) describeSubnets(ctx context.Context, filters []ec2types.Filter) ([]ec2types.Subnet, error) {
	var out []ec2types.Subnet
	p := ec2.NewDescribeSubnetsPaginator(r.ec2, &ec2.DescribeSubnetsInput{Filters: filters})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Subnets...)
	}
	return out, nil
}

// resolveSubnets returns the subnets the terms select, the ones with the most
// free addresses first, then by ID.
func (r *Resolver) resolveSubnets(ctx context.Context, specTerms []awsv1.SubnetSelectorTerm) ([]awsv1.Subnet, outcome, error) {
	terms := make([]selectorTerm, len(specTerms))
	for i, t := range specTerms {
		terms[i] = selectorTerm{tags: t.Tags, id: t.ID}
	}
	byID := map[string]ec2types.Subnet{}
	for _, t := range terms {
		filters := t.filters("subnet-id", "")
		if len(filters) == 0 {
			continue
		}
		found, err := r.describeSubnets(ctx, filters)
		if err != nil {
			if isUnauthorized(err) {
				return nil, unauthorized("ec2:DescribeSubnets", err), nil
			}
			return nil, outcome{}, err
		}
		for _, s := range found {
			byID[aws.ToString(s.SubnetId)] = s
		}
	}
	if len(byID) == 0 {
		msg := fmt.Sprintf("no subnet matches subnetSelectorTerms (%s)", describeTerms(terms))
		hints := nearMisses(ctx, terms, func(ctx context.Context, f []ec2types.Filter) ([]tagged, error) {
			found, err := r.describeSubnets(ctx, f)
			out := make([]tagged, len(found))
			for i, s := range found {
				out[i] = tagged{id: aws.ToString(s.SubnetId), tags: tagMap(s.Tags)}
			}
			return out, err
		})
		if len(hints) > 0 {
			msg += "; subnets carry " + hintList(hints)
		}
		return nil, failed(ReasonSubnetsNotFound, "%s; %s", msg, fix(terms, "subnets", "subnetSelectorTerms")), nil
	}
	subnets := slices.Collect(maps.Values(byID))
	slices.SortFunc(subnets, func(a, b ec2types.Subnet) int {
		return cmp.Or(
			cmp.Compare(aws.ToInt32(b.AvailableIpAddressCount), aws.ToInt32(a.AvailableIpAddressCount)),
			cmp.Compare(aws.ToString(a.SubnetId), aws.ToString(b.SubnetId)),
		)
	})
	out := make([]awsv1.Subnet, len(subnets))
	for i, s := range subnets {
		out[i] = awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}
	}
	return out, ok(awsv1.ConditionTypeSubnetsReady), nil
}

func (r *Resolver) describeSecurityGroups(ctx context.Context, filters []ec2types.Filter) ([]ec2types.SecurityGroup, error) {
	var out []ec2types.SecurityGroup
	p := ec2.NewDescribeSecurityGroupsPaginator(r.ec2, &ec2.DescribeSecurityGroupsInput{Filters: filters})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.SecurityGroups...)
	}
	return out, nil
}

// resolveSecurityGroups returns the security groups the terms select, by ID.
func (r *Resolver) resolveSecurityGroups(ctx context.Context, specTerms []awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, outcome, error) {
	terms := make([]selectorTerm, len(specTerms))
	for i, t := range specTerms {
		terms[i] = selectorTerm{tags: t.Tags, id: t.ID, name: t.Name}
	}
	byID := map[string]awsv1.SecurityGroup{}
	for _, t := range terms {
		filters := t.filters("group-id", "group-name")
		if len(filters) == 0 {
			continue
		}
		found, err := r.describeSecurityGroups(ctx, filters)
		if err != nil {
			if isUnauthorized(err) {
				return nil, unauthorized("ec2:DescribeSecurityGroups", err), nil
			}
			return nil, outcome{}, err
		}
		for _, g := range found {
			id := aws.ToString(g.GroupId)
			byID[id] = awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)}
		}
	}
	if len(byID) == 0 {
		msg := fmt.Sprintf("no security group matches securityGroupSelectorTerms (%s)", describeTerms(terms))
		hints := nearMisses(ctx, terms, func(ctx context.Context, f []ec2types.Filter) ([]tagged, error) {
			found, err := r.describeSecurityGroups(ctx, f)
			out := make([]tagged, len(found))
			for i, g := range found {
				out[i] = tagged{id: aws.ToString(g.GroupId), tags: tagMap(g.Tags)}
			}
			return out, err
		})
		if len(hints) > 0 {
			msg += "; security groups carry " + hintList(hints)
		}
		return nil, failed(ReasonSecurityGroupsNotFound, "%s; %s", msg, fix(terms, "security groups", "securityGroupSelectorTerms")), nil
	}
	out := slices.SortedFunc(maps.Values(byID), func(a, b awsv1.SecurityGroup) int { return cmp.Compare(a.ID, b.ID) })
	return out, ok(awsv1.ConditionTypeSecurityGroupsReady), nil
}

func tagMap(tags []ec2types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// fix says what to do when terms match nothing: tag the resources when the
// terms select by tag, else correct the IDs or names.
func fix(terms []selectorTerm, noun, field string) string {
	for _, t := range terms {
		if len(t.tags) > 0 {
			return fmt.Sprintf("tag your %s or change %s", noun, field)
		}
	}
	return fmt.Sprintf("check that the %s exist in this region and change %s", noun, field)
}

// Network returns the subnets and security groups nc's selector terms
// select now, as Resolve would put them in its status, with no other call
// and nothing created: the simulator gives the instances of a restored
// cluster the network their node class selects, so that they are not
// drifted from the start. A term that selects nothing is not an error here;
// the lists are then shorter or empty.
func (r *Resolver) Network(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, []awsv1.SecurityGroup, error) {
	subnets, _, err := r.resolveSubnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return nil, nil, err
	}
	groups, _, err := r.resolveSecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return nil, nil, err
	}
	return subnets, groups, nil
}
