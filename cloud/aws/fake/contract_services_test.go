package fake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const (
	queueName   = "contract-interruption"
	nodeRole    = "contract-node-role"
	otherRole   = "contract-other-role"
	profileName = "contract-profile"
)

func seedQueue(t *testing.T, w world) { w.queue(t, queueName) }

func queueURL(ctx context.Context, w world) (string, error) {
	out, err := w.clients().SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queueName)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

// receive sends body and receives it as the interruption consumer does.
func receive(ctx context.Context, w world, body string) (string, *sqs.ReceiveMessageOutput, error) {
	url, err := queueURL(ctx, w)
	if err != nil {
		return "", nil, err
	}
	if _, err := w.clients().SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		return "", nil, err
	}
	out, err := w.clients().SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 20,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	return url, out, err
}

func seedProfile(t *testing.T, w world) {
	w.role(t, nodeRole)
	w.role(t, otherRole)
	w.profile(t, profileName, nodeRole)
	w.profile(t, "contract-empty", "")
}

type profileView struct {
	Name, Path string
	ARNShaped  bool
	Roles      []string
	Tags       map[string]string
}

func getProfile(ctx context.Context, w world, name string) (any, error) {
	out, err := w.clients().IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return nil, err
	}
	p := out.InstanceProfile
	v := profileView{
		Name: aws.ToString(p.InstanceProfileName), Path: aws.ToString(p.Path), Tags: map[string]string{},
		ARNShaped: aws.ToString(p.Arn) == "arn:aws:iam::"+accountID+":instance-profile"+aws.ToString(p.Path)+aws.ToString(p.InstanceProfileName),
	}
	for _, r := range p.Roles {
		v.Roles = append(v.Roles, aws.ToString(r.RoleName))
	}
	for _, tag := range p.Tags {
		v.Tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	return v, nil
}

// createProfiles creates empty instance profiles under path.
func createProfiles(ctx context.Context, w world, path string, names ...string) error {
	for _, n := range names {
		if _, err := w.clients().IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(n), Path: aws.String(path)}); err != nil {
			return err
		}
	}
	return nil
}

// accountID is the account both sides answer as.
const accountID = "123456789012"

func iamTags(kv ...string) []iamtypes.Tag {
	var out []iamtypes.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, iamtypes.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return out
}

// then runs a call and, when it succeeds, another that shows its effect.
func then(err error, next func() (any, error)) (any, error) {
	if err != nil {
		return nil, err
	}
	return next()
}

func otherServiceCases() []contractCase {
	return []contractCase{
		// SQS: the interruption queue.
		{
			op: "SQS.GetQueueUrl", name: "found", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				return queuePath(url), err
			},
		},
		{
			op: "SQS.GetQueueUrl", name: "missing",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) { return queueURL(ctx, w) },
		},
		{
			op: "SQS.SendMessage", name: "then received", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, out, err := receive(ctx, w, `{"detail-type":"EC2 Spot Instance Interruption Warning"}`)
				if err != nil {
					return nil, err
				}
				var views []string
				for _, m := range out.Messages {
					views = append(views, aws.ToString(m.Body)+" id:"+boolText(aws.ToString(m.MessageId) != "")+
						" handle:"+boolText(aws.ToString(m.ReceiptHandle) != "")+" sent:"+boolText(m.Attributes["SentTimestamp"] != ""))
				}
				return views, nil
			},
		},
		{
			op: "SQS.ReceiveMessage", name: "empty queue", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				if err != nil {
					return nil, err
				}
				out, err := w.clients().SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
				if err != nil {
					return nil, err
				}
				return len(out.Messages), nil
			},
		},
		{
			op: "SQS.ReceiveMessage", name: "missing queue", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				if err != nil {
					return nil, err
				}
				return w.clients().SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(strings.TrimSuffix(url, queueName) + "contract-none")})
			},
		},
		{
			op: "SQS.DeleteMessage", name: "received message", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, out, err := receive(ctx, w, "one")
				if err != nil {
					return nil, err
				}
				if len(out.Messages) != 1 {
					return len(out.Messages), nil
				}
				_, err = w.clients().SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[0].ReceiptHandle})
				return then(err, func() (any, error) {
					attrs, err := w.clients().SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
						QueueUrl:       aws.String(url),
						AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
					})
					if err != nil {
						return nil, err
					}
					return "left: " + attrs.Attributes["ApproximateNumberOfMessages"] + " visible, " + attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] + " in flight", nil
				})
			},
		},
		{
			op: "SQS.DeleteMessage", name: "invalid receipt handle", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				if err != nil {
					return nil, err
				}
				return w.clients().SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("not-a-receipt-handle")})
			},
		},
		{
			op: "SQS.SendMessage", name: "missing queue", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				if err != nil {
					return nil, err
				}
				return w.clients().SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(strings.TrimSuffix(url, queueName) + "contract-none"), MessageBody: aws.String("x")})
			},
		},
		{
			op: "SQS.GetQueueAttributes", name: "missing queue", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				if err != nil {
					return nil, err
				}
				return w.clients().SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
					QueueUrl: aws.String(strings.TrimSuffix(url, queueName) + "contract-none"), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
				})
			},
		},
		{
			op: "SQS.GetQueueAttributes", name: "all", seed: seedQueue,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				url, err := queueURL(ctx, w)
				if err != nil {
					return nil, err
				}
				out, err := w.clients().SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
					QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
				})
				if err != nil {
					return nil, err
				}
				a := out.Attributes
				// What diagnose reads: the ARN, retention, waiting
				// messages and the access policy (none set here).
				return []string{a["QueueArn"], a["MessageRetentionPeriod"], a["ApproximateNumberOfMessages"], "policy:" + a["Policy"]}, nil
			},
		},

		// IAM: the node class's instance profile and role.
		{
			op: "IAM.GetInstanceProfile", name: "with its role", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) { return getProfile(ctx, w, profileName) },
		},
		{
			op: "IAM.GetInstanceProfile", name: "missing", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return getProfile(ctx, w, "contract-none")
			},
		},
		{
			op: "IAM.CreateInstanceProfile", name: "new, tagged", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, err := w.clients().IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
					InstanceProfileName: aws.String("contract-new"), Path: aws.String("/karpenter/us-east-1/contract/"),
					Tags: iamTags("karpenter.k8s.aws/ec2nodeclass", "default", "kubernetes.io/cluster/contract", "owned"),
				})
				return then(err, func() (any, error) { return getProfile(ctx, w, "contract-new") })
			},
		},
		{
			op: "IAM.CreateInstanceProfile", name: "name taken", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(profileName)})
			},
		},
		{
			op: "IAM.AddRoleToInstanceProfile", name: "to an empty profile", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, err := w.clients().IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("contract-empty"), RoleName: aws.String(otherRole)})
				return then(err, func() (any, error) { return getProfile(ctx, w, "contract-empty") })
			},
		},
		{
			op: "IAM.AddRoleToInstanceProfile", name: "a second role", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(profileName), RoleName: aws.String(otherRole)})
			},
		},
		{
			op: "IAM.AddRoleToInstanceProfile", name: "missing role", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("contract-empty"), RoleName: aws.String("contract-none")})
			},
		},
		{
			op: "IAM.RemoveRoleFromInstanceProfile", name: "its role", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, err := w.clients().IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(profileName), RoleName: aws.String(nodeRole)})
				return then(err, func() (any, error) { return getProfile(ctx, w, profileName) })
			},
		},
		{
			op: "IAM.RemoveRoleFromInstanceProfile", name: "a role it does not carry", seed: seedProfile, differs: motoRemoveMissingRole,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(profileName), RoleName: aws.String(otherRole)})
			},
		},
		{
			op: "IAM.DeleteInstanceProfile", name: "empty", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, err := w.clients().IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("contract-empty")})
				return then(err, func() (any, error) {
					_, err := getProfile(ctx, w, "contract-empty")
					return "then getting it: " + answer(nil, err), nil
				})
			},
		},
		{
			op: "IAM.DeleteInstanceProfile", name: "still carrying a role", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(profileName)})
			},
		},
		{
			op: "IAM.DeleteInstanceProfile", name: "missing", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("contract-none")})
			},
		},
		{
			op: "IAM.TagInstanceProfile", name: "add and replace", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, err := w.clients().IAM.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(profileName), Tags: iamTags("a", "1", "b", "2")})
				if err != nil {
					return nil, err
				}
				_, err = w.clients().IAM.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(profileName), Tags: iamTags("b", "3")})
				return then(err, func() (any, error) { return getProfile(ctx, w, profileName) })
			},
		},
		{
			op: "IAM.TagInstanceProfile", name: "missing", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("contract-none"), Tags: iamTags("a", "1")})
			},
		},
		{
			op: "IAM.ListInstanceProfiles", name: "by path prefix, with roles", seed: seedProfile, differs: motoListProfiles,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				if err := createProfiles(ctx, w, "/stevedore/us-east-1/contract/uid-a/", "contract-a1", "contract-a2"); err != nil {
					return nil, err
				}
				if err := createProfiles(ctx, w, "/stevedore/us-east-1/other/uid-b/", "contract-b1"); err != nil {
					return nil, err
				}
				if _, err := w.clients().IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("contract-a2"), RoleName: aws.String(nodeRole)}); err != nil {
					return nil, err
				}
				out, err := w.clients().IAM.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/stevedore/us-east-1/contract/")})
				if err != nil {
					return nil, err
				}
				var got []string
				for _, p := range out.InstanceProfiles {
					var roles []string
					for _, r := range p.Roles {
						roles = append(roles, aws.ToString(r.RoleName))
					}
					got = append(got, fmt.Sprintf("%s %s %v created:%v", aws.ToString(p.InstanceProfileName), aws.ToString(p.Path), roles, p.CreateDate != nil))
				}
				return got, nil
			},
		},
		{
			op: "IAM.ListInstanceProfiles", name: "pages of 2", seed: seedProfile, differs: motoListProfiles,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				if err := createProfiles(ctx, w, "/stevedore/us-east-1/contract/uid-a/", "contract-p1", "contract-p2", "contract-p3"); err != nil {
					return nil, err
				}
				pg := iam.NewListInstanceProfilesPaginator(w.clients().IAM, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/stevedore/"), MaxItems: aws.Int32(2)})
				return collectPages(ctx, pg, func(out *iam.ListInstanceProfilesOutput) (names []string) {
					for _, ip := range out.InstanceProfiles {
						names = append(names, aws.ToString(ip.InstanceProfileName))
					}
					return names
				})
			},
		},
		{
			op: "IAM.GetRole", name: "found", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().IAM.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(nodeRole)})
				if err != nil {
					return nil, err
				}
				return []string{aws.ToString(out.Role.RoleName), aws.ToString(out.Role.Arn), aws.ToString(out.Role.Path)}, nil
			},
		},
		{
			op: "IAM.GetRole", name: "missing", seed: seedProfile,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().IAM.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("contract-none")})
			},
		},

		// EKS: cluster discovery and diagnosis.
		{
			op: "EKS.DescribeCluster", name: "found",
			seed: func(t *testing.T, w world) { w.cluster(t, clusterName, "1.33") },
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(clusterName)})
				if err != nil {
					return nil, err
				}
				c := out.Cluster
				v := []string{aws.ToString(c.Name), aws.ToString(c.Version), string(c.Status), aws.ToString(c.Arn),
					"endpoint:" + boolText(strings.HasPrefix(aws.ToString(c.Endpoint), "https://"))}
				if c.CertificateAuthority != nil {
					v = append(v, "ca:"+boolText(aws.ToString(c.CertificateAuthority.Data) != ""))
				}
				return v, nil
			},
		},
		{
			op: "EKS.DescribeCluster", name: "network and access", differs: motoClusterConfig,
			seed: func(t *testing.T, w world) { w.cluster(t, clusterName, "1.33") },
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(clusterName)})
				if err != nil {
					return nil, err
				}
				c := out.Cluster
				var v []string
				if c.KubernetesNetworkConfig != nil {
					v = append(v, "service CIDR:"+boolText(aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr) != ""))
				}
				if c.AccessConfig != nil {
					v = append(v, "authentication mode:"+boolText(c.AccessConfig.AuthenticationMode != ""))
				}
				return v, nil
			},
		},
		{
			op: "EKS.DescribeCluster", name: "missing",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("contract-none")})
			},
		},
		{
			op: "EKS.ListAccessEntries", name: "of a cluster", motoLacks: motoNoAccessEntries, fakeSays: `"AccessEntries":[]`,
			seed: func(t *testing.T, w world) { w.cluster(t, clusterName, "1.33") },
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EKS.ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String(clusterName)})
			},
		},
		{
			op: "EKS.ListPodIdentityAssociations", name: "of a cluster", motoLacks: motoNoPodIdentity, fakeSays: `"Associations":[]`,
			seed: func(t *testing.T, w world) { w.cluster(t, clusterName, "1.33") },
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EKS.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{ClusterName: aws.String(clusterName)})
			},
		},

		// EventBridge: the rules diagnose looks for.
		{
			op: "EventBridge.ListRuleNamesByTarget", name: "the queue's rules",
			seed: func(t *testing.T, w world) {
				w.queue(t, queueName)
				w.rule(t, "contract-spot", `{"source":["aws.ec2"],"detail-type":["EC2 Spot Instance Interruption Warning"]}`, queueARN(queueName))
				w.rule(t, "contract-health", `{"source":["aws.health"],"detail-type":["AWS Health Event"]}`, queueARN(queueName))
				w.rule(t, "contract-elsewhere", `{"source":["aws.ec2"]}`, queueARN("contract-other"))
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EventBridge.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN(queueName))})
				if err != nil {
					return nil, err
				}
				sort.Strings(out.RuleNames)
				return out.RuleNames, nil
			},
		},
		{
			op: "EventBridge.ListRuleNamesByTarget", name: "pages of 2",
			seed: func(t *testing.T, w world) {
				w.queue(t, queueName)
				for _, n := range []string{"contract-1", "contract-2", "contract-3"} {
					w.rule(t, n, `{"source":["aws.ec2"]}`, queueARN(queueName))
				}
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				var p pages
				var token *string
				for {
					out, err := w.clients().EventBridge.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{
						TargetArn: aws.String(queueARN(queueName)), Limit: aws.Int32(2), NextToken: token,
					})
					if err != nil {
						return nil, err
					}
					p.add(out.RuleNames)
					if token = out.NextToken; token == nil {
						return p, nil
					}
				}
			},
		},
		{
			op: "EventBridge.DescribeRule", name: "found",
			seed: func(t *testing.T, w world) {
				w.rule(t, "contract-spot", `{"source":["aws.ec2"],"detail-type":["EC2 Spot Instance Interruption Warning"]}`, queueARN(queueName))
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EventBridge.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("contract-spot")})
				if err != nil {
					return nil, err
				}
				var pattern any
				if err := json.Unmarshal([]byte(aws.ToString(out.EventPattern)), &pattern); err != nil {
					return nil, err
				}
				return []any{aws.ToString(out.Name), string(out.State), aws.ToString(out.Arn), pattern}, nil
			},
		},
		{
			op: "EventBridge.DescribeRule", name: "missing",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EventBridge.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("contract-none")})
			},
		},

		// What moto does not serve at all.
		{
			op: "Pricing.GetProducts", name: "Linux on-demand in us-east-1", motoLacks: motoNoPricing, fakeSays: `\"instanceType\":\"m5.large\"`,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().Pricing.GetProducts(ctx, &pricing.GetProductsInput{
					ServiceCode: aws.String("AmazonEC2"),
					Filters: []pricingtypes.Filter{
						{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("regionCode"), Value: aws.String(contractRegion)},
						{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")},
					},
				})
			},
		},
		{
			op: "ARCZonalShift.GetManagedResource", name: "the cluster", motoLacks: motoNoZonalShift, fakeSays: `"ZonalShifts":[]`,
			seed: func(t *testing.T, w world) { w.cluster(t, clusterName, "1.33") },
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				arn := "arn:aws:eks:" + contractRegion + ":" + accountID + ":cluster/" + clusterName
				return w.clients().ARCZonalShift.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
			},
		},
	}
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
