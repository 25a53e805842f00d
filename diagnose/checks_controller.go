package diagnose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/apimachinery/pkg/api/meta"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
)

// AnnotationIRSARole is the service-account annotation that gives a pod the
// IAM role through IRSA.
const AnnotationIRSARole = "eks.amazonaws.com/role-arn"

// Environment variables the EKS pod identity webhook injects.
const (
	envIRSARole     = "AWS_ROLE_ARN"
	envPodIdentity  = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
	queueBacklogMax = 100
)

func checkControllerCredentials(ctx context.Context, w *World) []Result {
	c := w.Controller
	ref := c.Namespace + "/" + c.ServiceAccountName
	obj := "ServiceAccount " + ref
	fixBoth := fmt.Sprintf("create an EKS Pod Identity association for %s (aws eks create-pod-identity-association --cluster-name %s --namespace %s --service-account %s --role-arn <controller role>) or annotate it with %s",
		ref, orPlaceholder(w.Settings.ClusterName, "<cluster>"), c.Namespace, c.ServiceAccountName, AnnotationIRSARole)
	if c.ServiceAccount == nil {
		if c.ServiceAccountName == "" {
			return []Result{notChecked("", "the controller's pods were not found (label app.kubernetes.io/name=stevedore)",
				"pass --controller-service-account NAMESPACE/NAME")}
		}
		return []Result{notChecked(obj, "the service account does not exist or cannot be read", "pass --controller-service-account NAMESPACE/NAME")}
	}
	if arn := c.ServiceAccount.Annotations[AnnotationIRSARole]; arn != "" {
		return []Result{{Status: Pass, Object: obj, Evidence: "IRSA: annotated with role " + arn}}
	}
	for _, p := range c.Pods {
		for _, ctr := range p.Spec.Containers {
			for _, e := range ctr.Env {
				switch e.Name {
				case envPodIdentity:
					return []Result{{Status: Pass, Object: obj, Evidence: fmt.Sprintf("EKS Pod Identity: pod %s/%s has %s injected", p.Namespace, p.Name, envPodIdentity)}}
				case envIRSARole:
					return []Result{{Status: Pass, Object: obj, Evidence: fmt.Sprintf("IRSA: pod %s/%s has %s=%s", p.Namespace, p.Name, envIRSARole, e.Value)}}
				}
			}
		}
	}
	switch {
	case w.AWS.EKS == nil:
		return []Result{notChecked(obj, "no IRSA annotation, and Pod Identity associations cannot be listed: "+w.awsMissing("EKS"), fixAWSCredentials)}
	case w.Settings.ClusterName == "":
		return []Result{notChecked(obj, "no IRSA annotation, and Pod Identity associations cannot be listed without the cluster name", "set --cluster-name")}
	}
	out, err := w.AWS.EKS.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{
		ClusterName: aws.String(w.Settings.ClusterName), Namespace: aws.String(c.Namespace), ServiceAccount: aws.String(c.ServiceAccountName),
	})
	if err != nil {
		return []Result{notChecked(obj, "no IRSA annotation, and listing Pod Identity associations failed: "+apiMessage(err), fixAWSCredentials)}
	}
	if len(out.Associations) > 0 {
		return []Result{{Status: Pass, Object: obj, Evidence: "EKS Pod Identity association " + aws.ToString(out.Associations[0].AssociationId)}}
	}
	ev := "neither an EKS Pod Identity association nor an IRSA annotation"
	// A Ready node class proves the controller reached AWS somehow (the
	// node's instance role, static keys): then the missing association is
	// a risk, not the cause of an outage.
	for _, nc := range w.Snapshot.NodeClasses {
		if meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady) {
			return []Result{{Status: Warn, Object: obj, Evidence: ev + fmt.Sprintf("; EC2NodeClass %s is Ready, so the controller gets credentials another way (instance role or keys)", nc.Name), Fix: fixBoth}}
		}
	}
	return []Result{{Status: Fail, Object: obj, Evidence: ev + ": the controller cannot call AWS, so node classes never resolve and nothing launches", Fix: fixBoth}}
}

func checkInterruptionQueue(ctx context.Context, w *World) []Result {
	name := w.Settings.InterruptionQueue
	if name == "" {
		return []Result{{Status: Warn, Evidence: "no interruption queue is configured: spot interruptions, scheduled maintenance and instance stops are not seen in advance, and their pods go without warning",
			Fix: "create the queue and its EventBridge rules (docs/aws.md, \"The interruption queue\") and set settings.interruptionQueue (--interruption-queue)"}}
	}
	obj := "Queue " + name
	if w.AWS.SQS == nil {
		return []Result{notChecked(obj, w.awsMissing("SQS"), fixAWSCredentials)}
	}
	u, err := w.AWS.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		var qdne *sqstypes.QueueDoesNotExist
		if errors.As(err, &qdne) || strings.Contains(apiCode(err), "NonExistentQueue") {
			return []Result{{Status: Fail, Object: obj, Evidence: fmt.Sprintf("the queue does not exist in %s: the controller cannot consume interruption events", orPlaceholder(w.Region, "the region")),
				Fix: "create it (docs/aws.md), or fix settings.interruptionQueue: it takes the queue's name, not its URL or ARN"}}
		}
		return []Result{notChecked(obj, "GetQueueUrl: "+apiMessage(err), fixAWSCredentials)}
	}
	url := aws.ToString(u.QueueUrl)
	attrs, err := w.AWS.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		return []Result{{Status: Pass, Object: obj, Evidence: "reachable at " + url + " (its attributes could not be read: " + apiMessage(err) + ")"}}
	}
	a := attrs.Attributes
	ev := fmt.Sprintf("reachable at %s; retention %ss, %s message(s) waiting", url, a["MessageRetentionPeriod"], orPlaceholder(a["ApproximateNumberOfMessages"], "?"))
	policy := a["Policy"]
	switch {
	case policy == "":
		return []Result{{Status: Fail, Object: obj, Evidence: ev + "; it has no access policy, so EventBridge cannot deliver to it",
			Fix: "set the queue policy that lets events.amazonaws.com and sqs.amazonaws.com send messages (docs/aws.md)"}}
	case !strings.Contains(policy, "events.amazonaws.com"):
		return []Result{{Status: Warn, Object: obj, Evidence: ev + "; its access policy does not name events.amazonaws.com, so EventBridge may be refused",
			Fix: "allow events.amazonaws.com to sqs:SendMessage in the queue policy (docs/aws.md)"}}
	}
	if n, err := strconv.Atoi(a["ApproximateNumberOfMessages"]); err == nil && n > queueBacklogMax {
		return []Result{{Status: Warn, Object: obj, Evidence: ev + "; messages pile up, so the controller is not consuming them",
			Fix: "check the controller's log for interruption errors and its sqs:ReceiveMessage/DeleteMessage permissions"}}
	}
	return []Result{{Status: Pass, Object: obj, Evidence: ev + "; its policy lets EventBridge deliver"}}
}

// interruptionKind is one kind of event the interruption queue must receive,
// with the EventBridge rule that routes it there.
type interruptionKind struct {
	name       string
	source     string
	detailType string
	// rule is the name suffix docs/aws.md gives the rule.
	rule string
	// missed is what goes unnoticed without the rule.
	missed string
}

func (k interruptionKind) pattern() string {
	return fmt.Sprintf(`{"source":["%s"],"detail-type":["%s"]}`, k.source, k.detailType)
}

// interruptionKinds are the four events Karpenter's reference CloudFormation
// template routes to the queue.
var interruptionKinds = []interruptionKind{
	{name: "spot interruption warning", source: interruption.SourceEC2, detailType: interruption.DetailTypeSpotInterruption,
		rule: "spot-interruption", missed: "reclaimed spot nodes are not drained in their two minutes' notice"},
	{name: "rebalance recommendation", source: interruption.SourceEC2, detailType: interruption.DetailTypeRebalanceRecommendation,
		rule: "rebalance", missed: "spot nodes at elevated risk are not flagged"},
	{name: "instance state change", source: interruption.SourceEC2, detailType: interruption.DetailTypeStateChange,
		rule: "state-change", missed: "stopped or terminated instances are only noticed when their nodes go NotReady"},
	{name: "scheduled change", source: interruption.SourceHealth, detailType: interruption.DetailTypeHealth,
		rule: "scheduled-change", missed: "instances scheduled for retirement or maintenance are not replaced ahead of time"},
}

// capacityReservationKind is routed by a fifth, optional rule: only
// instances in interruptible capacity reservations receive it.
var capacityReservationKind = interruptionKind{name: "capacity reservation interruption", source: interruption.SourceEC2,
	detailType: interruption.DetailTypeCapacityReservationInterrupted, rule: "capacity-reservation"}

// patternMatches reports whether an event pattern lets events of the kind
// through, judged by its source and detail-type; a field the pattern leaves
// out matches every value.
func patternMatches(pattern string, k interruptionKind) bool {
	var p map[string]json.RawMessage
	if json.Unmarshal([]byte(pattern), &p) != nil {
		return false
	}
	field := func(name, want string) bool {
		raw, ok := p[name]
		if !ok {
			return true
		}
		var values []any
		if json.Unmarshal(raw, &values) != nil {
			return false
		}
		return slices.Contains(values, any(want))
	}
	return field("source", k.source) && field("detail-type", k.detailType)
}

func isEnabled(state ebtypes.RuleState) bool {
	return state == ebtypes.RuleStateEnabled || state == ebtypes.RuleStateEnabledWithAllCloudtrailManagementEvents
}

// queueARN looks the queue's ARN up.
func queueARN(ctx context.Context, w *World, name string) (string, string) {
	if w.AWS.SQS == nil {
		return "", w.awsMissing("SQS")
	}
	u, err := w.AWS.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		var qdne *sqstypes.QueueDoesNotExist
		if errors.As(err, &qdne) || strings.Contains(apiCode(err), "NonExistentQueue") {
			return "", "the queue does not exist (see interruption-queue)"
		}
		return "", "GetQueueUrl: " + apiMessage(err)
	}
	attrs, err := w.AWS.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", "GetQueueAttributes: " + apiMessage(err)
	}
	if arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]; arn != "" {
		return arn, ""
	}
	return "", "GetQueueAttributes returned no QueueArn"
}

func checkInterruptionRules(ctx context.Context, w *World) []Result {
	name := w.Settings.InterruptionQueue
	if name == "" {
		return []Result{{Status: Warn, Evidence: "not checked: no interruption queue is configured (see interruption-queue)",
			Fix: "create the queue and the EventBridge rules that target it (docs/aws.md)"}}
	}
	obj := "Queue " + name
	fixListing := fmt.Sprintf("allow events:ListRuleNamesByTarget and events:DescribeRule, or list them yourself: aws events list-rule-names-by-target --target-arn arn:aws:sqs:%s:<account>:%s",
		orPlaceholder(w.Region, "<region>"), name)
	if w.AWS.EventBridge == nil {
		return []Result{notChecked(obj, w.awsMissing("EventBridge"), fixAWSCredentials)}
	}
	arn, why := queueARN(ctx, w, name)
	if arn == "" {
		return []Result{notChecked(obj, "the queue's ARN is not known: "+why, fixListing)}
	}
	// Rules on the default event bus only: AWS services deliver their
	// events there.
	var ruleNames []string
	var token *string
	for {
		out, err := w.AWS.EventBridge.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(arn), NextToken: token})
		if err != nil {
			return []Result{notChecked(obj, "ListRuleNamesByTarget: "+apiMessage(err), fixListing)}
		}
		ruleNames = append(ruleNames, out.RuleNames...)
		if out.NextToken == nil {
			break
		}
		token = out.NextToken
	}
	all := append(slices.Clone(interruptionKinds), capacityReservationKind)
	enabled := make([][]string, len(all))  // rule names per kind
	disabled := make([][]string, len(all)) // rule names per kind
	for _, rn := range ruleNames {
		r, err := w.AWS.EventBridge.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(rn)})
		if err != nil {
			if apiCode(err) == "ResourceNotFoundException" {
				continue // deleted since it was listed
			}
			return []Result{notChecked(obj, "DescribeRule "+rn+": "+apiMessage(err), fixListing)}
		}
		for i, k := range all {
			if !patternMatches(aws.ToString(r.EventPattern), k) {
				continue
			}
			if isEnabled(r.State) {
				enabled[i] = append(enabled[i], rn)
			} else {
				disabled[i] = append(disabled[i], rn)
			}
		}
	}
	var present, missing, fixes []string
	for i, k := range interruptionKinds {
		if len(enabled[i]) > 0 {
			present = append(present, fmt.Sprintf("%s (%s)", k.name, strings.Join(enabled[i], ", ")))
			continue
		}
		m := fmt.Sprintf("%s: %s", k.name, k.missed)
		if len(disabled[i]) > 0 {
			m += " (rule " + strings.Join(disabled[i], ", ") + " matches it but is disabled)"
			for _, rule := range disabled[i] {
				fixes = append(fixes, "aws events enable-rule --name "+rule)
			}
		} else {
			rule := orPlaceholder(w.Settings.ClusterName, "<cluster>") + "-" + k.rule
			fixes = append(fixes, fmt.Sprintf("aws events put-rule --name %s --event-pattern '%s' && aws events put-targets --rule %s --targets Id=stevedore,Arn=%s",
				rule, k.pattern(), rule, arn))
		}
		missing = append(missing, m)
	}
	optional := fmt.Sprintf("; no rule for %ss (needed only with interruptible capacity reservations)", capacityReservationKind.name)
	if cr := enabled[len(all)-1]; len(cr) > 0 {
		optional = fmt.Sprintf("; %s (%s)", capacityReservationKind.name, strings.Join(cr, ", "))
	}
	fix := strings.Join(fixes, "; ")
	switch {
	case len(missing) == 0:
		return []Result{{Status: Pass, Object: obj,
			Evidence: "enabled EventBridge rules route every interruption event to " + arn + ": " + strings.Join(present, ", ") + optional}}
	case len(present) == 0:
		ev := "no enabled EventBridge rule routes interruption events to " + arn + ", so the queue stays empty and the controller hears of no interruption"
		if len(ruleNames) > 0 {
			ev += fmt.Sprintf(" (rules that target it: %s)", strings.Join(ruleNames, ", "))
		}
		return []Result{{Status: Fail, Object: obj, Evidence: ev + "; missing: " + strings.Join(missing, "; "),
			Fix: "create the rules (docs/aws.md, \"The interruption queue and its EventBridge rules\"): " + fix}}
	}
	return []Result{{Status: Warn, Object: obj,
		Evidence: fmt.Sprintf("no enabled EventBridge rule routes %d of the %d interruption events to %s: %s; present: %s",
			len(missing), len(interruptionKinds), arn, strings.Join(missing, "; "), strings.Join(present, ", ")),
		Fix: fix}}
}
