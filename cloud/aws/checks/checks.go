// Package checks holds the checks of manifests that need the AWS provider's
// code, which the offline validator (api/validation) may not use: Validator
// adds them to it for stevedore validate, plan and simulate. The controller
// runs the same code on the cluster's objects, with the cluster's own
// identity (cloud/aws/nodeclass).
package checks

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

// Validator returns validation.Default with the AWS provider's checks
// added.
func Validator() (*validation.Validator, error) {
	v, err := validation.Default()
	if err != nil {
		return nil, err
	}
	return v.With(UserData), nil
}

// UserData reports an EC2NodeClass whose user data EC2 would refuse for its
// size: spec.userData merged for the AMI family with the bootstrap
// configuration stevedore generates, for launch.StandInCluster (a typical
// EKS cluster), before any NodePool's labels and taints are added
// (launch.CheckUserData).
func UserData(gvk schema.GroupVersionKind, obj map[string]interface{}) []validation.Problem {
	if gvk.Group != awsv1.GroupVersion.Group || gvk.Kind != "EC2NodeClass" {
		return nil
	}
	spec, _ := obj["spec"].(map[string]interface{})
	if _, ok := spec["userData"].(string); !ok {
		return nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, nc); err != nil {
		// The schema checks have said what is wrong with it.
		return nil
	}
	se := launch.CheckUserData(nc, launch.Cluster{}, nil)
	if se == nil {
		return nil
	}
	msg := se.Detail()
	if se.Merged() {
		msg += "; measured for a typical EKS cluster's endpoint and CA bundle, before NodePool labels and taints, which add to it"
	}
	return []validation.Problem{{Field: "spec.userData", Message: msg, Fix: se.Fix(), Severity: validation.SeverityError}}
}
