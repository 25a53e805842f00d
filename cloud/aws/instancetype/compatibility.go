package instancetype

import (
	"fmt"
	"slices"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// Compatible reports whether an EC2NodeClass can launch the instance type at
// all, whatever the pods, and if not, why. The checks are Karpenter's:
//
//   - networkInterfaces: the type supports ENA, has every network card the
//     list names and as many interfaces on each card as its device indexes
//     need, and supports as many EFA interfaces as the list has efa-only
//     ones;
//   - cpuOptions.nestedVirtualization enabled: the processor supports the
//     nested-virtualization feature;
//   - connectionTracking: the type runs on the Nitro hypervisor (bare metal
//     counts as Nitro);
//   - a placement group (its strategy given, for example "cluster"): the
//     type supports that strategy.
//
// placementStrategy is empty when the node class has no placement group.
func Compatible(info ec2types.InstanceTypeInfo, spec *awsv1.EC2NodeClassSpec, placementStrategy string) (reason string, ok bool) {
	if len(spec.NetworkInterfaces) > 0 {
		if reason, ok := networkInterfacesFit(info.NetworkInfo, spec.NetworkInterfaces); !ok {
			return reason, false
		}
	}
	if o := spec.CPUOptions; o != nil && o.NestedVirtualization != nil && *o.NestedVirtualization == string(ec2types.NestedVirtualizationSpecificationEnabled) {
		if info.ProcessorInfo == nil || !slices.Contains(info.ProcessorInfo.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization) {
			return "its processor does not support nested virtualization (cpuOptions.nestedVirtualization)", false
		}
	}
	if spec.ConnectionTracking != nil && info.Hypervisor != ec2types.InstanceTypeHypervisorNitro && !deref(info.BareMetal) {
		return "it is not a Nitro instance type, which connectionTracking needs", false
	}
	if placementStrategy != "" {
		if info.PlacementGroupInfo == nil || !slices.Contains(info.PlacementGroupInfo.SupportedStrategies, ec2types.PlacementGroupStrategy(placementStrategy)) {
			return fmt.Sprintf("it does not support %s placement groups (placementGroupSelector)", placementStrategy), false
		}
	}
	return "", true
}

func networkInterfacesFit(n *ec2types.NetworkInfo, list []awsv1.NetworkInterface) (string, bool) {
	if n == nil || len(n.NetworkCards) == 0 || n.EnaSupport == ec2types.EnaSupportUnsupported {
		return "it does not support ENA network interfaces (networkInterfaces)", false
	}
	efaOnly := 0
	for _, ni := range list {
		if int(ni.NetworkCardIndex) >= len(n.NetworkCards) {
			return fmt.Sprintf("it has %d network cards and networkInterfaces uses card %d", len(n.NetworkCards), ni.NetworkCardIndex), false
		}
		if max := deref(n.NetworkCards[ni.NetworkCardIndex].MaximumNetworkInterfaces); ni.DeviceIndex >= max {
			return fmt.Sprintf("its network card %d takes %d interfaces and networkInterfaces uses device index %d", ni.NetworkCardIndex, max, ni.DeviceIndex), false
		}
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			efaOnly++
		}
	}
	if efaOnly > 0 {
		var maxEFA int32
		if n.EfaInfo != nil {
			maxEFA = deref(n.EfaInfo.MaximumEfaInterfaces)
		}
		if int32(efaOnly) > maxEFA {
			return fmt.Sprintf("it supports %d EFA interfaces and networkInterfaces has %d efa-only ones", maxEFA, efaOnly), false
		}
	}
	return "", true
}
