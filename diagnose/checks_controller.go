package diagnose

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/apimachinery/pkg/api/meta"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
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

func checkInterruptionRules(_ context.Context, w *World) []Result {
	name := w.Settings.InterruptionQueue
	if name == "" {
		return []Result{{Status: Warn, Evidence: "not checked: no interruption queue is configured (see interruption-queue)",
			Fix: "create the five EventBridge rules with the queue (docs/aws.md)"}}
	}
	return []Result{{Status: Warn, Object: "Queue " + name,
		Evidence: "not checked: stevedore's AWS interface has no EventBridge client, so the rules that target the queue cannot be listed",
		Fix: fmt.Sprintf("aws events list-rule-names-by-target --target-arn arn:aws:sqs:%s:<account>:%s should list five rules: spot interruption, rebalance recommendation, instance state change, AWS Health scheduled change, capacity reservation interruption",
			orPlaceholder(w.Region, "<region>"), name)}}
}
