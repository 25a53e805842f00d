package diagnose

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	"sigs.k8s.io/yaml"
)

// apiCode is the AWS error code of err, or "".
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// apiMessage is the AWS error message of err, or err itself.
func apiMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return err.Error()
}

func isAccessDenied(err error) bool {
	switch apiCode(err) {
	case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException":
		return true
	}
	return false
}

// notChecked is the WARN of a check that could not look.
func notChecked(object, why, fix string) Result {
	return Result{Status: Warn, Object: object, Evidence: "not checked: " + why, Fix: fix}
}

// awsMissing says why an AWS service is not available.
func (w *World) awsMissing(service string) string {
	if w.AWSError != "" {
		return fmt.Sprintf("no %s client (%s)", service, w.AWSError)
	}
	return fmt.Sprintf("no %s client", service)
}

const fixAWSCredentials = "run with AWS credentials that may describe the account (the default credential chain: AWS_PROFILE, environment, SSO) and set --region"

// roleAccess is what authorizes a node role to join the cluster.
type roleAccess struct {
	role string
	// arn is the role's ARN; empty when it could not be read.
	arn string
	// missing is true when IAM says the role does not exist.
	missing bool
	// mode is the cluster's authentication mode; empty when unknown.
	mode string
	// entry is the access entry that names the role.
	entry string
	// entryErr is why access entries could not be listed.
	entryErr string
	// mapped is true when aws-auth maps the role into system:nodes;
	// mapNote says what aws-auth has for it otherwise.
	mapped  bool
	mapNote string
}

// nodeRoleAccess finds what lets nodes with the role join, once per role.
func (w *World) nodeRoleAccess(ctx context.Context, role string) roleAccess {
	if a, ok := w.access[role]; ok {
		return a
	}
	a := roleAccess{role: role}
	if w.AWS.IAM != nil {
		out, err := w.AWS.IAM.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)})
		switch {
		case err == nil && out.Role != nil:
			a.arn = aws.ToString(out.Role.Arn)
		case apiCode(err) == "NoSuchEntity":
			a.missing = true
		}
	}
	cluster := w.Settings.ClusterName
	switch {
	case w.AWS.EKS == nil:
		a.entryErr = w.awsMissing("EKS")
	case cluster == "":
		a.entryErr = "the cluster name is not known (set --cluster-name)"
	default:
		if out, err := w.AWS.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)}); err == nil && out.Cluster != nil && out.Cluster.AccessConfig != nil {
			a.mode = string(out.Cluster.AccessConfig.AuthenticationMode)
		}
		var token *string
		for {
			out, err := w.AWS.EKS.ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String(cluster), NextToken: token})
			if err != nil {
				a.entryErr = "listing access entries: " + apiMessage(err)
				break
			}
			for _, arn := range out.AccessEntries {
				if a.entry == "" && roleNameOf(arn) == role {
					a.entry = arn
				}
			}
			if out.NextToken == nil || a.entry != "" {
				break
			}
			token = out.NextToken
		}
	}
	a.mapped, a.mapNote = awsAuthMaps(w, role)
	if w.access == nil {
		w.access = map[string]roleAccess{}
	}
	w.access[role] = a
	return a
}

// roleNameOf returns the role name of an IAM role ARN (the last part of its
// path), or "" for an ARN of something else.
func roleNameOf(arn string) string {
	_, rest, ok := strings.Cut(arn, ":role/")
	if !ok {
		return ""
	}
	return rest[strings.LastIndex(rest, "/")+1:]
}

// awsAuthMaps reports whether kube-system/aws-auth maps the role into the
// system:nodes group.
func awsAuthMaps(w *World, role string) (bool, string) {
	if w.AWSAuth == nil {
		return false, "there is no kube-system/aws-auth ConfigMap"
	}
	var entries []struct {
		RoleARN string   `json:"rolearn"`
		Groups  []string `json:"groups"`
	}
	if err := yaml.Unmarshal([]byte(w.AWSAuth.Data["mapRoles"]), &entries); err != nil {
		return false, fmt.Sprintf("kube-system/aws-auth mapRoles does not parse: %v", err)
	}
	for _, e := range entries {
		if roleNameOf(e.RoleARN) != role {
			continue
		}
		if slices.Contains(e.Groups, "system:nodes") {
			return true, ""
		}
		return false, fmt.Sprintf("kube-system/aws-auth maps %s but not into the system:nodes group (groups %v)", e.RoleARN, e.Groups)
	}
	return false, "kube-system/aws-auth does not map the role"
}

// verdict turns what authorizes a role into a finding.
func (a roleAccess) verdict(cluster string) (Status, string, string) {
	arn := a.arn
	if arn == "" {
		arn = "arn:aws:iam::<account>:role/" + a.role
	}
	fix := fmt.Sprintf("aws eks create-access-entry --cluster-name %s --principal-arn %s --type EC2_LINUX", orPlaceholder(cluster, "<cluster>"), arn)
	if a.missing {
		return Fail, fmt.Sprintf("node role %s does not exist in IAM", a.role),
			fmt.Sprintf("create the role %s (trusting ec2.amazonaws.com, with AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryPullOnly and AmazonSSMManagedInstanceCore), or fix spec.role", a.role)
	}
	useEntries := a.mode != "CONFIG_MAP"
	useMap := a.mode != "API"
	switch {
	case useEntries && a.entry != "":
		return Pass, fmt.Sprintf("node role %s has the EKS access entry %s", a.role, a.entry), ""
	case useMap && a.mapped:
		return Pass, fmt.Sprintf("node role %s is mapped into system:nodes by kube-system/aws-auth", a.role), ""
	case useEntries && a.entryErr != "":
		ev := fmt.Sprintf("could not check the access entries of node role %s (%s); %s", a.role, a.entryErr, a.mapNote)
		return Warn, ev, "check it yourself: aws eks list-access-entries --cluster-name " + orPlaceholder(cluster, "<cluster>") + "; if the role is missing: " + fix
	}
	ev := fmt.Sprintf("node role %s has no EKS access entry", a.role)
	if !useEntries {
		ev = fmt.Sprintf("the cluster's authentication mode is CONFIG_MAP and %s", a.mapNote)
		fix = "map the role in kube-system/aws-auth: {rolearn: " + arn + ", username: system:node:{{EC2PrivateDNSName}}, groups: [system:bootstrappers, system:nodes]}, or switch the cluster to API_AND_CONFIG_MAP and: " + fix
	} else if useMap {
		ev += " and " + a.mapNote
	} else {
		ev += " (authentication mode API: aws-auth is not read)"
	}
	return Fail, ev + ": its instances boot but their kubelets are refused, so nodes never register", fix
}

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// instanceID returns the EC2 instance ID of a provider ID such as
// aws:///us-east-1a/i-0123456789abcdef0.
func instanceID(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	if i < 0 || !strings.HasPrefix(providerID[i+1:], "i-") {
		return ""
	}
	return providerID[i+1:]
}

// describeInstance returns the instance, or nil with why.
func (w *World) describeInstance(ctx context.Context, id string) (*ec2types.Instance, string) {
	if w.AWS.EC2 == nil {
		return nil, w.awsMissing("EC2")
	}
	out, err := w.AWS.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if apiCode(err) == "InvalidInstanceID.NotFound" {
			return nil, "the instance no longer exists"
		}
		return nil, "describing the instance: " + apiMessage(err)
	}
	for _, r := range out.Reservations {
		for i := range r.Instances {
			return &r.Instances[i], ""
		}
	}
	return nil, "the instance no longer exists"
}

// subnetFreeIPs returns the free addresses of each subnet named.
func (w *World) subnetFreeIPs(ctx context.Context, ids []string) (map[string]ec2types.Subnet, error) {
	if w.AWS.EC2 == nil {
		return nil, errors.New(w.awsMissing("EC2"))
	}
	out, err := w.AWS.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
	if err != nil {
		return nil, err
	}
	m := map[string]ec2types.Subnet{}
	for _, s := range out.Subnets {
		m[aws.ToString(s.SubnetId)] = s
	}
	return m, nil
}
