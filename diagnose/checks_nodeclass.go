package diagnose

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
)

// nodeClassConditions are checked in the order a launch depends on them;
// Ready, which sums them up, last.
var nodeClassConditions = []string{
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeInstanceProfileReady,
	awsv1.ConditionTypeCapacityReservationsReady,
	awsv1.ConditionTypeValidationSucceeded,
}

// fixForNodeClassReason says what to do about a False condition's reason.
var fixForNodeClassReason = map[string]string{
	nodeclass.ReasonSubnetsNotFound:             "tag the subnets the nodes should use with the tags subnetSelectorTerms look for, or change the terms to match the subnets' tags",
	nodeclass.ReasonSecurityGroupsNotFound:      "tag the security groups with the tags securityGroupSelectorTerms look for, or change the terms",
	nodeclass.ReasonAMINotFound:                 "fix amiSelectorTerms: the alias version, tags, name or owner match no image in the region",
	nodeclass.ReasonUnsupportedAlias:            "use a supported alias family (al2023, al2, bottlerocket, windows2019, windows2022, windows2025) with @latest or @<version>",
	nodeclass.ReasonRoleNotFound:                "create the node role, or fix spec.role",
	nodeclass.ReasonInstanceProfileNotFound:     "create the instance profile, or fix spec.instanceProfile",
	nodeclass.ReasonInstanceProfileNoRole:       "add the node role to the instance profile: aws iam add-role-to-instance-profile",
	nodeclass.ReasonUnauthorized:                "add the action the message names to the controller's IAM policy",
	nodeclass.ReasonCreateFleetAuthCheckFailed:  "allow ec2:CreateFleet (and ec2:CreateTags on launch) in the controller's IAM policy",
	nodeclass.ReasonRunInstancesAuthCheckFailed: "allow ec2:RunInstances in the controller's IAM policy",
	nodeclass.ReasonPassRoleAuthCheckFailed:     "allow iam:PassRole on the node role, with iam:PassedToService=ec2.amazonaws.com, in the controller's IAM policy",
	nodeclass.ReasonTagValidationFailed:         "remove the restricted tag keys (kubernetes.io/cluster/*, karpenter.sh/*, eks:eks-cluster-name) from spec.tags",
}

func checkNodeClassConditions(ctx context.Context, w *World) []Result {
	var out []Result
	if len(w.Snapshot.NodeClasses) == 0 {
		return []Result{{Status: Fail, Evidence: "there is no EC2NodeClass, so no NodePool may launch",
			Fix: "create the EC2NodeClass your NodePools reference (see examples/)"}}
	}
	for _, nc := range w.Snapshot.NodeClasses {
		obj := "EC2NodeClass " + nc.Name
		if len(nc.Status.Conditions) == 0 {
			out = append(out, Result{Status: Warn, Object: obj, Evidence: "no status conditions have been reported",
				Fix: "check that the controller is running and can reach AWS (controller-credentials); its log names the error"})
			continue
		}
		bad := 0
		for _, typ := range nodeClassConditions {
			c := meta.FindStatusCondition(nc.Status.Conditions, typ)
			if c == nil || c.Status == metav1.ConditionTrue {
				continue
			}
			bad++
			if c.Reason == nodeclass.ReasonDependenciesNotReady && bad > 1 {
				continue // the conditions it waits for are reported above
			}
			ev := fmt.Sprintf("%s is %s (%s): %s", typ, c.Status, c.Reason, c.Message)
			switch typ {
			case awsv1.ConditionTypeSubnetsReady:
				ev += w.subnetDiscovery(ctx, nc)
			case awsv1.ConditionTypeSecurityGroupsReady:
				ev += w.securityGroupDiscovery(ctx, nc)
			}
			fix := fixForNodeClassReason[c.Reason]
			if fix == "" {
				fix = "kubectl describe ec2nodeclass " + nc.Name + " and fix what the condition names"
			}
			status := Fail
			if c.Status == metav1.ConditionUnknown {
				status = Warn
			}
			out = append(out, Result{Status: status, Object: obj, Evidence: ev, Fix: fix})
		}
		ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
		switch {
		case ready != nil && ready.Status == metav1.ConditionTrue:
			out = append(out, Result{Status: Pass, Object: obj, Evidence: fmt.Sprintf("Ready: %d subnet(s), %d security group(s), %d AMI(s), instance profile %q",
				len(nc.Status.Subnets), len(nc.Status.SecurityGroups), len(nc.Status.AMIs), nc.Status.InstanceProfile)})
		case bad == 0:
			ev := "Ready has not been reported"
			if ready != nil {
				ev = fmt.Sprintf("Ready is %s (%s): %s", ready.Status, ready.Reason, ready.Message)
			}
			out = append(out, Result{Status: Fail, Object: obj, Evidence: ev + "; NodePools that use it launch nothing",
				Fix: "kubectl describe ec2nodeclass " + nc.Name})
		}
	}
	return out
}

// subnetDiscovery says, for a node class whose subnet selector matches
// nothing, which tags it looked for and which similar tags the region's
// subnets carry.
func (w *World) subnetDiscovery(ctx context.Context, nc *awsv1.EC2NodeClass) string {
	var wanted []map[string]string
	for _, t := range nc.Spec.SubnetSelectorTerms {
		if len(t.Tags) > 0 {
			wanted = append(wanted, t.Tags)
		}
	}
	if len(wanted) == 0 {
		return ""
	}
	if w.AWS.EC2 == nil {
		return "; similar tags not searched (" + w.awsMissing("EC2") + ")"
	}
	var tagged []taggedResource
	var token *string
	for {
		out, err := w.AWS.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{NextToken: token})
		if err != nil {
			return "; similar tags not searched (DescribeSubnets: " + apiMessage(err) + ")"
		}
		for _, s := range out.Subnets {
			tagged = append(tagged, taggedResource{id: aws.ToString(s.SubnetId), tags: s.Tags})
		}
		if out.NextToken == nil {
			break
		}
		token = out.NextToken
	}
	return discovery("subnet", wanted, tagged)
}

// securityGroupDiscovery is subnetDiscovery for security groups.
func (w *World) securityGroupDiscovery(ctx context.Context, nc *awsv1.EC2NodeClass) string {
	var wanted []map[string]string
	for _, t := range nc.Spec.SecurityGroupSelectorTerms {
		if len(t.Tags) > 0 {
			wanted = append(wanted, t.Tags)
		}
	}
	if len(wanted) == 0 {
		return ""
	}
	if w.AWS.EC2 == nil {
		return "; similar tags not searched (" + w.awsMissing("EC2") + ")"
	}
	var tagged []taggedResource
	var token *string
	for {
		out, err := w.AWS.EC2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{NextToken: token})
		if err != nil {
			return "; similar tags not searched (DescribeSecurityGroups: " + apiMessage(err) + ")"
		}
		for _, g := range out.SecurityGroups {
			tagged = append(tagged, taggedResource{id: aws.ToString(g.GroupId), tags: g.Tags})
		}
		if out.NextToken == nil {
			break
		}
		token = out.NextToken
	}
	return discovery("security group", wanted, tagged)
}

type taggedResource struct {
	id   string
	tags []ec2types.Tag
}

// discovery compares the tags selector terms look for with the tags the
// resources carry: the same key with another value, the same value under
// another key, or a key that differs only in case or by a typo.
func discovery(kind string, wanted []map[string]string, resources []taggedResource) string {
	var looked []string
	similar := map[string][]string{} // "key=value" -> resource IDs
	for _, term := range wanted {
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(term)) {
			pairs = append(pairs, k+"="+term[k])
		}
		looked = append(looked, strings.Join(pairs, ","))
		for k, v := range term {
			for _, r := range resources {
				for _, t := range r.tags {
					tk, tv := aws.ToString(t.Key), aws.ToString(t.Value)
					if tk == k && (v == "*" || tv == v) {
						continue // an exact match: not what is missing
					}
					if tk == k || (v != "*" && tv == v) || similarKey(tk, k) {
						pair := tk + "=" + tv
						if !slices.Contains(similar[pair], r.id) {
							similar[pair] = append(similar[pair], r.id)
						}
					}
				}
			}
		}
	}
	s := fmt.Sprintf("; looked for %s tags %s", kind, strings.Join(looked, " or "))
	if len(similar) == 0 {
		return s + fmt.Sprintf("; none of the region's %d %ss carries a similar tag", len(resources), kind)
	}
	var found []string
	for _, pair := range slices.Sorted(maps.Keys(similar)) {
		ids := similar[pair]
		slices.Sort(ids)
		found = append(found, fmt.Sprintf("%s on %s", pair, named(ids)))
	}
	return s + "; similar tags found: " + named(found)
}

// similarKey reports whether two tag keys differ only in case or by at most
// two edits: a typo of the discovery tag rather than another tag.
func similarKey(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	if len(a) < 8 || len(b) < 8 {
		return false
	}
	return editDistance(strings.ToLower(a), strings.ToLower(b)) <= 2
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func checkSubnetIPs(ctx context.Context, w *World) []Result {
	var out []Result
	for _, nc := range w.Snapshot.NodeClasses {
		if len(nc.Status.Subnets) == 0 {
			continue
		}
		obj := "EC2NodeClass " + nc.Name
		var ids []string
		for _, s := range nc.Status.Subnets {
			ids = append(ids, s.ID)
		}
		subnets, err := w.subnetFreeIPs(ctx, ids)
		if err != nil {
			out = append(out, notChecked(obj, "DescribeSubnets: "+apiMessage(err), fixAWSCredentials))
			continue
		}
		var empty, low, fine []string
		for _, id := range ids {
			s, ok := subnets[id]
			if !ok {
				empty = append(empty, id+" (no longer exists)")
				continue
			}
			free := int(aws.ToInt32(s.AvailableIpAddressCount))
			desc := fmt.Sprintf("%s in %s: %d free", id, aws.ToString(s.AvailabilityZone), free)
			switch {
			case free == 0:
				empty = append(empty, desc)
			case free < w.Thresholds.LowFreeIPs:
				low = append(low, desc)
			default:
				fine = append(fine, desc)
			}
		}
		switch {
		case len(empty) == len(ids):
			out = append(out, Result{Status: Fail, Object: obj, Evidence: "no subnet has a free address: " + named(empty) + "; launches fail with InsufficientFreeAddressesInSubnet",
				Fix: "add subnets (tagged for discovery) with free addresses, or free addresses in these"})
		case len(empty)+len(low) > 0:
			out = append(out, Result{Status: Warn, Object: obj, Evidence: "subnets nearly full: " + named(append(empty, low...)) + "; with the VPC CNI every pod takes an address",
				Fix: "add larger subnets tagged for discovery, or enable prefix delegation"})
		default:
			out = append(out, Result{Status: Pass, Object: obj, Evidence: named(fine)})
		}
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: "no EC2NodeClass has resolved subnets to check"})
	}
	return out
}

func checkNodeRoleAccess(ctx context.Context, w *World) []Result {
	var out []Result
	for _, nc := range w.Snapshot.NodeClasses {
		obj := "EC2NodeClass " + nc.Name
		role := nc.Spec.Role
		if role == "" {
			out = append(out, Result{Status: Pass, Object: obj, Evidence: fmt.Sprintf("uses the instance profile %q; its role is not checked", ptrString(nc.Spec.InstanceProfile))})
			continue
		}
		a := w.nodeRoleAccess(ctx, role)
		st, ev, fix := a.verdict(w.Settings.ClusterName)
		out = append(out, Result{Status: st, Object: obj, Evidence: ev, Fix: fix})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: "no EC2NodeClass"})
	}
	return out
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
