package aws

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// compatInputs are the node class fields that decide which instance types it
// can launch at all (instancetype.Compatible) and, for efa-only interfaces,
// their pod capacity. They are copies, so that a caller changing its node
// class later cannot change them.
type compatInputs struct {
	interfaces []awsv1.NetworkInterface
	cpu        *awsv1.CPUOptions
	conntrack  bool
	strategy   string
}

func compatInputsOf(nc *awsv1.EC2NodeClass, strategy string) compatInputs {
	return compatInputs{
		interfaces: slices.Clone(nc.Spec.NetworkInterfaces),
		cpu:        nc.Spec.CPUOptions.DeepCopy(),
		conntrack:  nc.Spec.ConnectionTracking != nil,
		strategy:   strategy,
	}
}

func (c *compatInputs) sameAs(nc *awsv1.EC2NodeClass, strategy string) bool {
	return c.strategy == strategy && c.conntrack == (nc.Spec.ConnectionTracking != nil) &&
		slices.Equal(c.interfaces, nc.Spec.NetworkInterfaces) &&
		equality.Semantic.DeepEqual(c.cpu, nc.Spec.CPUOptions)
}
